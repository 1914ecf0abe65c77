"""Choose the stigma head's written-sentence weight and regularisation on dev (never on the held-out sentences).

For each candidate (weight of a written sentence, C of the logistic head), fit on the train split (real, written
and, where the language has one, the functional suite's train cases) and score the dev split: ROC AUC on real dev
sentences, on written dev sentences, on the suite's dev cases, and their mean; and, with the score calibrated on
dev as the recipe calibrates it, how many of the suite's functions meet their target on dev cases. Then, for each
candidate, the same head averaged with a text head (TF-IDF of word 1-2-grams, scm/text_head.py) of C in
``TEXT_CS``, fitted with the same weights. Every logistic candidate is fitted twice: on the embedding alone, and on
the embedding followed by the indicators of the sentence's mention forms (``forms``: the mask erases whether a
mention was a slur or a diagnosis), and for each target (``STIGMA_TARGETS``: stigmatising or not, or with the
judgements that do not stigmatise a class of their own). The criterion: the
best mean (the real distribution and the hard negatives the real sample lacks count alike) among the candidates that
give up at most ``REAL_TOLERANCE`` of AUC on real dev sentences against the best candidate there (real text is what
an audit reads). The chosen values go into the default recipe (corpus_audit/scm/recipes.py).

The heads read the language's default model's features: its stance branch's (``--adapter``: an adapter file of
``scripts/train_stance_branch.py``; by default the shipped one, if any), or its sentence embedding
(``--no-stance``).

    PYTHONPATH=$PWD python scripts/select_stigma_weight.py --lang en --embedding-cache /tmp/stigma-en.npz
    PYTHONPATH=$PWD python scripts/select_stigma_weight.py --lang en --adapter runs/en-k2.safetensors
"""

from __future__ import annotations

import argparse
import json
from itertools import product
from pathlib import Path

import numpy as np
from sklearn.metrics import roc_auc_score

from corpus_audit.corpus.matcher import FORMS
from corpus_audit.embed import load_embedder
from corpus_audit.embed.stance import read_adapter
from corpus_audit.languages import LANGUAGES
from corpus_audit.scm.axes import STIGMA_TARGETS, calibrated
from corpus_audit.scm.recipes import EmbeddingCache
from corpus_audit.scm.stigma import (fit_stigma_calibration, fit_stigma_head, fit_stigma_text_head, source_weights,
                                     stigma_features)
from corpus_audit.scm.suite import FLAG_TARGET, RECALL_TARGET, load_training_data
from corpus_audit.stigma.judgement import STIGMA_DECISION

WEIGHTS = (0.3, 0.5, 1.0)
CS = (0.3, 1.0, 3.0)
TEXT_CS = (None, 4.0)
# The gate reads the stigma head's classes in both languages (issue 41: one instrument), which needs the
# ``category`` target; ``judgement`` (the gate apart) is no longer a candidate.
TARGETS = ("category",)
REAL_TOLERANCE = 0.01
SOURCES = ("real", "written", "suite")


def dev_measures(score: np.ndarray, truth: np.ndarray, source: np.ndarray, weights: np.ndarray,
                 function: np.ndarray) -> dict:
    """AUC per source and their mean; with the score calibrated on these sentences, the suite functions that meet
    their target."""
    result = {name: float(roc_auc_score(truth[source == name], score[source == name]))
              for name in SOURCES if len(set(truth[source == name])) == 2}
    result["mean"] = float(np.mean([result[name] for name in SOURCES if name in result]))
    decided = calibrated(score, fit_stigma_calibration(score, truth, weights)) >= STIGMA_DECISION
    suite = source == "suite"
    passed = failed = 0
    for name in sorted(set(function[suite])):
        chosen = suite & (function == name)
        share = decided[chosen].mean()
        ok = share >= RECALL_TARGET if truth[chosen].all() else share <= FLAG_TARGET
        passed, failed = passed + ok, failed + (not ok)
    result["functions_met"] = f"{passed}/{passed + failed}"
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lang", choices=sorted(LANGUAGES), required=True)
    parser.add_argument("--embedding-cache", type=Path, default=None)
    parser.add_argument("--adapter", type=Path, default=None, help="a stance adapter to read the features of")
    parser.add_argument("--no-stance", action="store_true", help="read the sentence embedding, no stance branch")
    parser.add_argument("--json", type=Path, default=None, help="also write the table as JSON here")
    args = parser.parse_args()
    data = load_training_data(args.lang)
    model = LANGUAGES[args.lang].default_model
    if args.adapter:
        from corpus_audit.embed import stance_base
        from corpus_audit.embed.onnx import OnnxEmbedder

        embedder = OnnxEmbedder(stance_base(model).name, str(stance_base(model).folder),
                                adapter=read_adapter(args.adapter), log=print)
    else:
        embedder = load_embedder(model, lang=args.lang, stance=not args.no_stance)
    cache = EmbeddingCache(embedder, args.embedding_cache)
    train, dev = data.rows(("train",)), data.rows(("dev",))
    needed = np.concatenate([train, dev])
    X = np.zeros((len(data), embedder.dimension))
    X[needed] = cache.encode([data.texts[i] for i in needed])
    views = embedder.views
    X = X[:, views[0]:] if len(views) > 1 else X
    truth, source, function = data.stigmatising[dev], data.source[dev], data.function[dev]
    dev_texts, dev_forms = [data.texts[i] for i in dev], [data.mention_forms[i] for i in dev]
    rows = []
    for weight, target in product(WEIGHTS, TARGETS):
        weights = source_weights(data, dev, weight)
        text_scores = {text_C: None if text_C is None else fit_stigma_text_head(data, train, weight, C=text_C,
                                                                                target=target)
                       .predict_proba(dev_texts, dev_forms)[:, -1] for text_C in TEXT_CS}
        for C, forms in product(CS, ((), FORMS)):
            features = stigma_features(X[dev], dev_forms, forms)
            score = fit_stigma_head(X, data, train, weight, C=C, forms=forms, target=target) \
                .predict_proba(features)[:, -1]
            settings = {"written_weight": weight, "C": C, "forms": bool(forms), "target": target}
            rows.extend({**settings, "text_C": text_C,
                         **dev_measures(score if text is None else (score + text) / 2, truth, source, weights,
                                        function)} for text_C, text in text_scores.items())
    print(f"{'weight':>7}{'C':>6}{'text C':>8}{'forms':>6}{'target':>10}" + "".join(f"{name:>9}" for name in SOURCES)
          + f"{'mean':>8}{'functions':>11}")
    for row in rows:
        text_C = "-" if row["text_C"] is None else f"{row['text_C']:.1f}"
        print(f"{row['written_weight']:>7.1f}{row['C']:>6.1f}{text_C:>8}{'yes' if row['forms'] else 'no':>6}"
              f"{row['target']:>10}" + "".join(f"{row.get(name, float('nan')):>9.3f}" for name in SOURCES)
              + f"{row['mean']:>8.3f}{row['functions_met']:>11}")
    floor = max(row["real"] for row in rows) - REAL_TOLERANCE
    best = max((row for row in rows if row["real"] >= floor), key=lambda row: row["mean"])
    print(f"chosen: written weight {best['written_weight']}, C {best['C']}, text C {best['text_C']}, "
          f"forms {'yes' if best['forms'] else 'no'}, target {best['target']} (mean dev AUC {best['mean']:.3f}; "
          f"suite functions meeting their target on dev {best['functions_met']})")
    if args.json:
        args.json.write_text(json.dumps({"lang": args.lang, "embedder_id": cache.model_id, "rows": rows,
                                         "chosen": best}, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
