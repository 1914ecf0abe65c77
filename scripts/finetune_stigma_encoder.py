"""Measure a fine-tuned encoder for the stigma score (issue 28, item 3): SetFit-style contrastive tuning of the
default English model on the labelled train sentences, then the same logistic head as the shipped one, scored on the
same held-out real sentences. A measurement, not a shipped model: the audit keeps the frozen default embedder.

SetFit's recipe (Tunstall et al. 2022): pairs of training sentences, the cosine similarity of their embeddings
pulled to 1 for two of the same class and to 0 for two of different classes, a few thousand pairs, one epoch; then
a logistic head on the tuned embeddings. Settings are fixed in advance (below), never chosen on the held-out set.

    PYTHONPATH=$PWD python scripts/finetune_stigma_encoder.py --lang en --pairs 6000 --json /tmp/setfit_en.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch
from sklearn.metrics import roc_auc_score

from corpus_audit.embed import load_embedder
from corpus_audit.languages import LANGUAGES
from corpus_audit.scm.recipes import get_recipe
from corpus_audit.scm.stigma import bootstrap_auc, fit_stigma_head, load_stigma_data

LEARNING_RATE = 2e-5
BATCH = 16
SEED = 0


def pairs(labels: np.ndarray, rows: np.ndarray, n: int, rng: np.random.Generator) -> list[tuple[int, int, float]]:
    """``n`` pairs of ``rows``, half of one class and half of different classes."""
    by_class = [rows[labels[rows] == value] for value in (False, True)]
    drawn = []
    for k in range(n):
        if k % 2 == 0:
            members = by_class[k // 2 % 2]
            a, b = rng.choice(members, 2, replace=False)
            drawn.append((int(a), int(b), 1.0))
        else:
            drawn.append((int(rng.choice(by_class[0])), int(rng.choice(by_class[1])), 0.0))
    return drawn


def tune(model, texts: list[str], drawn: list[tuple[int, int, float]]) -> None:
    """One epoch of cosine-similarity regression over ``drawn`` pairs (sentence-transformers' CosineSimilarityLoss
    written out, so that no trainer dependency is needed)."""
    model.train()
    optimiser = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE)
    from tqdm import tqdm

    for start in tqdm(range(0, len(drawn), BATCH), desc="tuning", unit="batch"):
        batch = drawn[start:start + BATCH]
        embeddings = []
        for side in (0, 1):
            features = model.tokenize([texts[pair[side]] for pair in batch])
            embeddings.append(model(features)["sentence_embedding"])
        similarity = torch.nn.functional.cosine_similarity(*embeddings)
        loss = torch.nn.functional.mse_loss(similarity, torch.tensor([pair[2] for pair in batch]))
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    model.eval()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lang", choices=sorted(LANGUAGES), default="en")
    parser.add_argument("--pairs", type=int, default=6000, help="training pairs; 0 measures the frozen model")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    torch.manual_seed(SEED)
    rng = np.random.default_rng(SEED)
    data = load_stigma_data(args.lang)
    settings = get_recipe("default").stigma_settings(args.lang)
    weight, C = settings.written_weight, settings.C
    embedder = load_embedder(LANGUAGES[args.lang].default_model, lang=args.lang, backend="torch")
    model = embedder.model
    train, dev, heldout = data.rows(("train",)), data.rows(("dev",)), data.rows(("heldout",), ("real",))
    started = time.perf_counter()
    if args.pairs:
        tune(model, data.texts, pairs(data.stigmatising, train, args.pairs, rng))
    tuning_seconds = time.perf_counter() - started
    X = np.asarray(model.encode(data.texts, batch_size=64, convert_to_numpy=True), dtype=np.float64)
    head = fit_stigma_head(X, data, train, weight, C=C)
    real_dev = dev[data.source[dev] == "real"]
    dev_auc = float(roc_auc_score(data.stigmatising[real_dev], head.predict_proba(X[real_dev])[:, 1]))
    final = fit_stigma_head(X, data, data.rows(("train", "dev")), weight, C=C)
    import pandas as pd

    documents = pd.read_csv(data.path, dtype=str, keep_default_na=False)["doc_id"].to_numpy()
    auc, low, high = bootstrap_auc(data.stigmatising[heldout], final.predict_proba(X[heldout])[:, 1],
                                   groups=documents[heldout])
    result = {"lang": args.lang, "pairs": args.pairs, "learning_rate": LEARNING_RATE, "batch": BATCH,
              "written_weight": weight, "C": C, "tuning_seconds": round(tuning_seconds, 1),
              "real_dev_auc_fit_on_train": dev_auc, "heldout_auc": auc, "heldout_auc_ci95": [low, high],
              "heldout": len(heldout), "heldout_stigmatising": int(data.stigmatising[heldout].sum())}
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
