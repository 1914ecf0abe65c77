"""Sentences per second of the default English encoder on a GPU: the frozen model alone (the SCM axes' embedding)
and with its stance branch (the stigma score's features: two more layers on the same pass), fp32 and bf16.

Throughput does not depend on the weights' values, so the model is MiniLM-L6's architecture (config of
all-MiniLM-L6-v2: 6 layers, hidden 384) randomly initialised, with a two-layer branch built by
``corpus_audit.embed.stance.branch_module`` as the shipped one is; the sentences are the labelled stigma
sentences and the functional suite (real and written text of the lengths an audit sees), tokenised by the model's
tokenizer, sorted by length and run in batches as ``embed/onnx.py`` batches them. Run where a GPU is lent
(docs/scaling.md); on a CPU it runs too, slowly.

    python benchmarks/encoder_gpu.py --tokenizer DIR --device cuda [--json OUT]
"""

from __future__ import annotations

import argparse
import csv
import json
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
MINILM = {"vocab_size": 30522, "hidden_size": 384, "num_hidden_layers": 6, "num_attention_heads": 12,
          "intermediate_size": 1536, "max_position_embeddings": 512}
BRANCH_LAYERS = 2
MAX_TOKENS = 256


def sentences() -> list[str]:
    texts = []
    for name in ("stigma_labelled.csv", "stigma_suite.csv"):
        with open(ROOT / "templates" / "en" / name, newline="", encoding="utf-8") as handle:
            texts += [row["sentence"] for row in csv.DictReader(handle)]
    return texts


def measure(module, batches: list, device: str, dtype, repeats: int) -> float:
    """Sentences per second of ``module`` over ``batches`` (best of ``repeats`` passes after one warm-up)."""
    import torch

    n = sum(len(ids) for ids, _ in batches)
    best = float("inf")
    for attempt in range(repeats + 1):
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        started = time.perf_counter()
        with torch.inference_mode(), torch.autocast(device_type=device.split(":")[0], dtype=dtype,
                                                    enabled=dtype is not torch.float32):
            for ids, mask in batches:
                module(ids, mask)
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        if attempt:
            best = min(best, time.perf_counter() - started)
    return n / best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokenizer", type=Path, required=True, help="folder of the model's tokenizer files")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--batch", type=int, nargs="+", default=[64, 256, 1024])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--limit", type=int, default=None, help="measure this many sentences only")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    from corpus_audit.embed.stance import StanceAdapter, branch_module

    torch.manual_seed(0)
    texts = sentences()[:args.limit]
    tokenizer = AutoTokenizer.from_pretrained(str(args.tokenizer))
    encoded = tokenizer(texts, truncation=True, max_length=MAX_TOKENS)["input_ids"]
    order = np.argsort([len(ids) for ids in encoded], kind="stable")
    transformer = BertModel(BertConfig(**MINILM)).to(args.device).eval()
    # an adapter that changes nothing: the branch's cost is that of its layers, whatever their weights
    adapter = StanceAdapter(Path("random"), "minilm-architecture", "", "en", MINILM["num_hidden_layers"] - BRANCH_LAYERS,
                            BRANCH_LAYERS, 0, 0.0, {}, "")
    branched = branch_module(transformer, adapter).to(args.device)

    class Frozen(torch.nn.Module):
        def forward(self, ids, mask):
            return transformer(input_ids=ids, attention_mask=mask).last_hidden_state

    results = {"device": torch.cuda.get_device_name(0) if args.device.startswith("cuda") else "cpu",
               "torch": torch.__version__, "sentences": len(texts),
               "mean_tokens": float(np.mean([len(ids) for ids in encoded])), "runs": []}
    for batch in args.batch:
        batches = []
        for start in range(0, len(order), batch):
            rows = order[start:start + batch]
            longest = max(len(encoded[i]) for i in rows)
            ids = torch.zeros((len(rows), longest), dtype=torch.long)
            mask = torch.zeros((len(rows), longest), dtype=torch.long)
            for position, row in enumerate(rows):
                ids[position, :len(encoded[row])] = torch.tensor(encoded[row])
                mask[position, :len(encoded[row])] = 1
            batches.append((ids.to(args.device), mask.to(args.device)))
        for name, dtype in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
            frozen = measure(Frozen(), batches, args.device, dtype, args.repeats)
            both = measure(branched, batches, args.device, dtype, args.repeats)
            results["runs"].append({"batch": batch, "dtype": name, "frozen_sentences_per_s": frozen,
                                    "with_branch_sentences_per_s": both, "branch_cost_ratio": frozen / both})
            print(json.dumps(results["runs"][-1]), flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
