"""The PLL scorer and the AQ-27 probe on a tiny masked language model: time of the full probe and memory of a
300-word sentence.

The model is the anchors' BERT (hidden 32, 2 layers, the all-MiniLM-L6-v2 WordPiece vocabulary of 30,522 tokens,
weights from the closed formula of tests/data/pll_anchors/README.md; no download), so the numbers measure the
scorer's own work: tokenising, building masked copies, forward passes and the vocabulary projection.

    python benchmarks/probe_pll.py probe [--lang en] [--threads 1] [--device cpu]   # full AQ-27 probe
    python benchmarks/probe_pll.py memory [--max-tokens 2048] [--words 300]         # peak memory, one sentence
    python benchmarks/probe_pll.py anchors                                          # error against minicons

``probe`` prints the prompts, distinct sentences, seconds of the score stage and of the whole run, and sentences
per second. ``memory`` scores one long sentence in this process and prints the peak resident memory while scoring (the
kernel's VmHWM, reset just before) and how far it rose above the loaded model, the passes and the largest pass, beside what minicons would hold at once (every masked copy in one
pass with L x V logits).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "probe"))  # tiny_mlm, the model's recipe

import tiny_mlm  # noqa: E402


def _status_mb(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise KeyError(field)


def reset_peak() -> None:
    """Reset the kernel's peak resident memory of this process (VmHWM) to the current one (Linux)."""
    Path("/proc/self/clear_refs").write_text("5")


def probe(args: argparse.Namespace) -> None:
    from corpus_audit.probe.questionnaires.aq27 import AQ27Options, run_aq27

    with tempfile.TemporaryDirectory() as tmp:
        model = tiny_mlm.save("bert", Path(tmp) / "model")
        started = time.perf_counter()
        summary = run_aq27(AQ27Options(model=str(model), lang=args.lang, device=args.device, threads=args.threads,
                                       max_tokens=args.max_tokens), Path(tmp) / "out", log=lambda m: None)
        total = time.perf_counter() - started
    counts = summary.results["counts"]
    score = summary.seconds["score"]
    print(f"lang {args.lang}, device {args.device}, threads {args.threads}, max tokens {args.max_tokens}")
    print(f"prompts {counts['prompts']}, distinct sentences {counts['distinct_sentences']}")
    print(f"score stage {score:.1f} s ({counts['distinct_sentences'] / score:.0f} sentences/s), "
          f"report stage {summary.seconds['report']:.1f} s, whole run {total:.1f} s")


def memory(args: argparse.Namespace) -> None:
    import torch

    from corpus_audit.probe.models.masked import MaskedLM

    if args.threads:
        torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        model = MaskedLM.load(str(tiny_mlm.save("bert", Path(tmp) / "model", max_positions=512)))
    words = "the patient who has asthma talked to a friend about their problems".split()
    sentence = " ".join(words[i % len(words)] for i in range(args.words)) + "."
    passes = []
    model.model.bert.register_forward_pre_hook(lambda module, inputs: passes.append(tuple(inputs[0].shape)))
    model.score(["warm up."])
    passes.clear()
    reset_peak()
    before = _status_mb("VmRSS")
    started = time.perf_counter()
    (result,) = model.score([sentence], max_tokens=args.max_tokens)
    seconds = time.perf_counter() - started
    length = len(result.tokens) + 2
    vocabulary = model.model.config.vocab_size
    print(f"{args.words} words, {length} tokens, {len(result.tokens)} masked copies, max tokens {args.max_tokens}")
    print(f"{len(passes)} forward passes, largest {max(r * c for r, c in passes)} tokens "
          f"({max(passes, key=lambda s: s[0] * s[1])}); {seconds:.2f} s")
    peak = _status_mb("VmHWM")
    print(f"peak resident memory while scoring: {peak:.0f} MB, {peak - before:.0f} MB above the loaded model")
    print(f"minicons would run all {len(result.tokens)} copies of {length} tokens in one pass: logits alone "
          f"{len(result.tokens) * length * vocabulary * 4 / 1e9:.1f} GB ({vocabulary} x float32 per position)")


def anchors(args: argparse.Namespace) -> None:
    """The largest difference from minicons 0.3.39 over every token and sentence sum of the three anchor models."""
    import json

    from corpus_audit.probe.models.masked import METRICS, MaskedLM

    data = json.loads(tiny_mlm.ANCHORS.read_text(encoding="utf-8"))
    worst = 0.0
    for kind in tiny_mlm.KINDS:
        with tempfile.TemporaryDirectory() as tmp:
            model = MaskedLM.load(str(tiny_mlm.save(kind, Path(tmp) / "model")), threads=args.threads)
        sentences = [key for key in data[kind] if not key.startswith("_")]
        for metric in METRICS:
            token_error = sum_error = 0.0
            for sentence, result in zip(sentences, model.score(sentences, metric)):
                expected = data[kind][sentence]
                token_error = max([token_error] + [abs(score - value) for score, (_, value) in
                                                   zip(result.scores, expected[f"minicons_tokens_{metric}"])])
                sum_error = max(sum_error, abs(result.total - expected[f"minicons_sum_{metric}"]))
            tokens = sum(len(data[kind][s]["tokens"]) for s in sentences)
            print(f"{kind:<12} {metric:<16} {tokens} tokens: max token error {token_error:.2e}, "
                  f"max sum error {sum_error:.2e}")
            worst = max(worst, token_error, sum_error)
    print(f"largest error {worst:.2e}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["probe", "memory", "anchors"])
    parser.add_argument("--lang", default="en")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--max-tokens", type=int, default=8192)
    parser.add_argument("--words", type=int, default=300)
    args = parser.parse_args()
    {"probe": probe, "memory": memory, "anchors": anchors}[args.what](args)


if __name__ == "__main__":
    main()
