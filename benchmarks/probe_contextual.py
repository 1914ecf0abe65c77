"""``probe contextual`` against the chat stub of the tests (a real HTTP server on 127.0.0.1), and its coder against the
hand-labelled completions.

    python benchmarks/probe_contextual.py throughput [--delay 0.05] [--requests 400]   # requests/s per concurrency
    python benchmarks/probe_contextual.py resume [--axes FILE]                        # what a resumed run pays
    python benchmarks/probe_contextual.py coder [--axes FILE] [--lang en]             # agreement with hand labels

``throughput`` sends distinct requests through :class:`~corpus_audit.probe.models.chat.ChatClient` to the stub, each
answer taking ``--delay`` seconds (a stand-in for a model's generation time), at concurrency 1, 4 and 16.
``resume`` runs the full bundled English design (20 scenarios x 10 conditions x 2 arms x 10 repetitions, the AQ-27
per condition) with the stub's scripted model: first with a budget of half the requests (the run stops), then
without, and counts the requests the stub answered in all against the distinct requests of the design. ``coder``
codes the bundled hand-labelled completions with the instrument (the language's default embedding model from the
local cache, ``--axes`` trained by ``corpus-audit axes train``) and prints Cohen's kappa.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "probe"))  # the chat stub

from chat_stub import ChatStub  # noqa: E402


def throughput(delay: float, requests: int) -> None:
    from corpus_audit.probe.models.chat import ChatClient, ChatRequest, ResponseStore

    for concurrency in (1, 4, 16):
        batch = [ChatRequest("stub", (("user", f"request {i} at {concurrency}"),), 1.0, 50) for i in range(requests)]
        with ChatStub(lambda body, seen: "a short completion.", delay=delay) as stub, \
                tempfile.TemporaryDirectory() as folder:
            client = ChatClient(stub.url, api_key_env=None, concurrency=concurrency)
            started = time.perf_counter()
            client.complete(batch, ResponseStore(Path(folder) / "responses.jsonl", lambda _: None), lambda _: None)
            seconds = time.perf_counter() - started
        print(f"concurrency {concurrency:>2}: {requests} requests in {seconds:.2f} s = {requests / seconds:.1f} "
              f"requests/s (answer delay {delay} s; at most {stub.max_in_flight} in flight)")


def resume(axes: str | None) -> None:
    from click.testing import CliRunner

    from corpus_audit.cli import main

    with ChatStub() as stub, tempfile.TemporaryDirectory() as folder:
        args = ["probe", "contextual", "--endpoint", stub.url, "--model", "stub", "-o", str(Path(folder) / "out"),
                "--api-key-env", "NO_SUCH_VARIABLE", "--concurrency", "8", "--no-progress",
                *(["--axes", axes] if axes else [])]
        started = time.perf_counter()
        first = CliRunner().invoke(main, [*args, "--budget", "2000"])
        after_first = stub.answered
        second = CliRunner().invoke(main, args)
        seconds = time.perf_counter() - started
        third = CliRunner().invoke(main, args)
        lines = (Path(folder) / "out" / "responses.jsonl").read_text(encoding="utf-8").count("\n")
    print(f"first run: exit {first.exit_code}, {after_first} requests answered before the budget stopped it")
    print(f"resumed run: exit {second.exit_code}; {stub.answered} requests answered in all for {lines} distinct "
          f"requests saved ({stub.answered - lines} paid twice); {seconds:.1f} s for both runs")
    print(f"third run: exit {third.exit_code}, {stub.answered - lines} more requests; "
          + ("report: up to date" if "up to date" in third.output else third.output[-300:]))
    if second.exit_code:
        print(second.output[-2000:])


def coder(axes: str | None, lang: str) -> None:
    from corpus_audit.probe.questionnaires.coding import instrument_codes, type_agreement
    from corpus_audit.probe.questionnaires.contextual import LABELS_FILE, hand_labels
    from corpus_audit.probe.questionnaires.files import bundled_folder
    from corpus_audit.probe.questionnaires.scenarios import load_design
    from corpus_audit.score.scorer import ModelSpec, score_texts

    design = load_design(lang, bundled_folder(lang))
    labels = hand_labels(bundled_folder(lang) / LABELS_FILE, design)
    embedder, scm_axes = ModelSpec(lang, axes_path=axes).load()
    scores = score_texts([c.strip() for c in labels["completion"]], embedder, scm_axes, show_progress=False)
    result = type_agreement(instrument_codes(scores), list(zip(labels["congruent"], labels["types"])))
    print(f"{lang}: {result['n']} hand-labelled completions ({int(labels['congruent'].sum())} stigma-congruent): "
          f"Cohen's kappa {result['kappa']:.3f}, agreement {result['agreement']:.1%}; mean Jaccard of the types "
          f"where both say stigma-congruent {result['jaccard']:.2f} (n = {result['n_both_congruent']})")
    for name, record in result["types"].items():
        kappa = "undefined" if record["kappa"] is None else f"{record['kappa']:.2f}"
        print(f"  {name:<16} kappa {kappa}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["throughput", "resume", "coder"])
    parser.add_argument("--delay", type=float, default=0.05)
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--axes", default=None)
    parser.add_argument("--lang", default="en")
    args = parser.parse_args()
    if args.what == "throughput":
        throughput(args.delay, args.requests)
    elif args.what == "resume":
        resume(args.axes)
    else:
        coder(args.axes, args.lang)
