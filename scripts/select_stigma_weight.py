"""Choose the stigma head's written-sentence weight and regularisation on dev (never on the held-out sentences).

For each candidate (weight of a written sentence, C of the logistic head), fit on the train split (real + written)
and score the dev split: ROC AUC on real dev sentences, on written dev sentences, and their mean. Then, for each
candidate, the same head averaged with a text head (TF-IDF of word 1-2-grams, scm/text_head.py) of C in
``TEXT_CS``, fitted with the same weights. Every logistic candidate is fitted twice: on the embedding alone, and on
the embedding followed by the indicators of the sentence's mention forms (``forms``: the mask erases whether a
mention was a slur or a diagnosis), and for each target (``STIGMA_TARGETS``: stigmatising or not, or with the
judgements that do not stigmatise a class of their own). The criterion: the
best mean (the real distribution and the hard negatives the real sample lacks count alike) among the candidates that
give up at most ``REAL_TOLERANCE`` of AUC on real dev sentences against the best candidate there (real text is what
an audit reads). Also an MLP head (unweighted) for comparison. The chosen values go into the default recipe (corpus_audit/scm/recipes.py).

    PYTHONPATH=$PWD python scripts/select_stigma_weight.py --lang en --embedding-cache /tmp/stigma-en.npz
"""

from __future__ import annotations

import argparse
import json
from itertools import product
from pathlib import Path

import numpy as np
from sklearn.metrics import roc_auc_score

from corpus_audit.embed import load_embedder
from corpus_audit.languages import LANGUAGES
from corpus_audit.scm.axes import STIGMA_CLASSES, STIGMA_TARGETS
from corpus_audit.scm.heads import ClassifierHead
from corpus_audit.scm.recipes import EmbeddingCache
from corpus_audit.corpus.matcher import FORMS
from corpus_audit.scm.stigma import fit_stigma_head, fit_stigma_text_head, load_stigma_data, stigma_features

WEIGHTS = (0.0, 0.1, 0.3, 0.5, 1.0)
CS = (0.3, 1.0, 3.0)
TEXT_CS = (1.0, 4.0)
REAL_TOLERANCE = 0.01


def dev_aucs(score: np.ndarray, truth: np.ndarray, source: np.ndarray) -> dict[str, float]:
    result = {name: float(roc_auc_score(truth[source == name], score[source == name])) for name in ("real", "written")}
    result["mean"] = (result["real"] + result["written"]) / 2
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lang", choices=sorted(LANGUAGES), required=True)
    parser.add_argument("--embedding-cache", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None, help="also write the table as JSON here")
    args = parser.parse_args()
    data = load_stigma_data(args.lang)
    cache = EmbeddingCache(load_embedder(LANGUAGES[args.lang].default_model, lang=args.lang), args.embedding_cache)
    X = cache.encode(data.texts).astype(np.float64)
    train, dev = data.rows(("train",)), data.rows(("dev",))
    truth, source = data.stigmatising[dev], data.source[dev]
    rows = []
    dev_texts = [data.texts[i] for i in dev]
    for weight, target in product(WEIGHTS, STIGMA_TARGETS):
        text_scores = {text_C: fit_stigma_text_head(data, train, weight, C=text_C, target=target)
                       .predict_proba(dev_texts)[:, -1] for text_C in TEXT_CS}
        for C, forms in product(CS, ((), FORMS)):
            features = stigma_features(X[dev], [data.mention_forms[i] for i in dev], forms)
            score = fit_stigma_head(X, data, train, weight, C=C, forms=forms, target=target) \
                .predict_proba(features)[:, -1]
            settings = {"written_weight": weight, "C": C, "forms": bool(forms), "target": target}
            rows.append({"head": "logistic", **settings, "text_C": None, **dev_aucs(score, truth, source)})
            rows.extend({"head": "logistic+text", **settings, "text_C": text_C,
                         **dev_aucs((score + text) / 2, truth, source)} for text_C, text in text_scores.items())
    for weight, subset in ((0.0, data.rows(("train",), ("real",))), (1.0, train)):
        mlp = ClassifierHead("mlp", STIGMA_CLASSES).fit(X[subset], data.stigmatising[subset].astype(int),
                                                         balanced=True)
        rows.append({"head": "mlp", "written_weight": weight, "C": float("nan"), "text_C": None, "forms": False,
                     "target": "binary",
                     **dev_aucs(mlp.predict_proba(X[dev])[:, 1], truth, source)})
    print(f"{'head':<14}{'weight':>7}{'C':>6}{'text C':>8}{'forms':>6}{'target':>10}{'real dev':>10}"
          f"{'written dev':>13}{'mean':>8}")
    for row in rows:
        text_C = "-" if row["text_C"] is None else f"{row['text_C']:.1f}"
        print(f"{row['head']:<14}{row['written_weight']:>7.1f}{row['C']:>6.1f}{text_C:>8}"
              f"{'yes' if row['forms'] else 'no':>6}{row['target']:>10}{row['real']:>10.3f}{row['written']:>13.3f}"
              f"{row['mean']:>8.3f}")
    logistic = [row for row in rows if row["head"] != "mlp"]
    floor = max(row["real"] for row in logistic) - REAL_TOLERANCE
    best = max((row for row in logistic if row["real"] >= floor), key=lambda row: row["mean"])
    print(f"chosen: {best['head']}, written weight {best['written_weight']}, C {best['C']}, text C {best['text_C']}, "
          f"forms {'yes' if best['forms'] else 'no'}, target {best['target']} (mean dev AUC {best['mean']:.3f})")
    if args.json:
        args.json.write_text(json.dumps({"lang": args.lang, "embedder_id": cache.model_id, "rows": rows,
                                         "chosen": best}, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
