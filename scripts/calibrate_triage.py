"""Give the shipped axes of a language the cascade's triage (score/cascade.py): its text head and its threshold,
saved in the axes (``triage`` in their metadata; a ``triage`` head of their own where the score has no text head).

* **The head.** Where the stigma score has a text head (English), the triage is that head: half of the score,
  learnt from the same labels. Where it has none (Spanish), a text head of the same kind (TF-IDF of word 1-2-grams,
  logistic, classes balanced) is distilled from the full path's decisions (stigma >= 0.5) on the labelled train
  split and on the kept sentences of ``--distil`` (filtered.parquet files of `corpus-audit filter`).
* **The threshold**: the highest one that lets ``--target-recall`` of the dev sentences (real, written and the
  functional suite's dev cases: never the held-out ones) that the full path scores stigmatising into the band.
  The shipped stigma heads learn from dev, so dev is scored by the same heads fitted on train alone (with the
  score's calibration, fitted on exactly those heads' dev scores): a threshold set on in-sample scores let 5 % of
  the unseen English stigmatising sentences out of the band. The held-out real sentences then measure it: recall
  of the full path's stigmatising ones, and the band's share.

    PYTHONPATH=$PWD python scripts/calibrate_triage.py --lang en [--embedding-cache X.npz]
    corpus-audit filter SHARED/corpora/textdetox_es.jsonl.gz ... --lang es -o /tmp/es-filtered.parquet
    PYTHONPATH=$PWD python scripts/calibrate_triage.py --lang es --distil /tmp/es-filtered.parquet
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd

from corpus_audit.corpus.matcher import mention_forms
from corpus_audit.corpus.select import mask_mentions
from corpus_audit.embed import load_embedder
from corpus_audit.languages import LANGUAGES, get_language
from corpus_audit.scm.axes import TRIAGE_CLASSES, SCMAxes
from corpus_audit.scm.recipes import EmbeddingCache
from corpus_audit.scm.refit import unseen_dev_axes
from corpus_audit.scm.store import find_axes
from corpus_audit.scm.suite import load_training_data
from corpus_audit.scm.text_head import TextHead
from corpus_audit.score.cascade import calibrate_triage
from corpus_audit.score.scorer import prepare_text
from corpus_audit.stigma.judgement import STIGMA_DECISION

#: Regularisation of a distilled triage head (chosen on dev: 1, 4 and 16 ranked the full path's decisions alike).
DISTIL_C = 4.0


def full_path(axes: SCMAxes, embedder, texts: list[str], forms: list[tuple[str, ...]]) -> np.ndarray:
    return axes.stigma_score(embedder.encode(texts), texts, forms)


def corpus_sentences(paths: list[Path], lang: str) -> tuple[list[str], list[tuple[str, ...]]]:
    """The distinct kept sentences of filtered.parquet files, masked as an audit masks them, and what the stigma
    score reads of their mentions."""
    mask = get_language(lang).mask
    texts, forms = [], []
    for path in paths:
        frame = pd.read_parquet(path, columns=["sentence", "terms", "term_offsets", "forms"])
        frame = frame.drop_duplicates("sentence")
        texts += [prepare_text(mask_mentions(s, o, mask))[0] for s, o in zip(frame["sentence"], frame["term_offsets"])]
        forms += [mention_forms(f, t) for f, t in zip(frame["forms"], frame["terms"])]
    return texts, forms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lang", choices=sorted(LANGUAGES), required=True)
    parser.add_argument("--target-recall", type=float, default=0.99)
    parser.add_argument("--distil", type=Path, nargs="*", default=[],
                        help="filtered.parquet files whose sentences a distilled triage head learns from too")
    parser.add_argument("--embedding-cache", type=Path, default=None,
                        help="an .npz of embeddings of the labelled sentences (scripts/build_default_axes.py's)")
    args = parser.parse_args()
    embedder = EmbeddingCache(load_embedder(None, lang=args.lang), args.embedding_cache)
    path = find_axes(embedder.model_id, args.lang)
    axes = SCMAxes.load(path)
    data = load_training_data(args.lang)
    head, distilled = None, {}
    if axes.stigma_text_head is None:
        train = np.flatnonzero(data.split == "train")
        texts, forms = [data.texts[i] for i in train], [data.mention_forms[i] for i in train]
        more_texts, more_forms = corpus_sentences(args.distil, args.lang)
        texts, forms = texts + more_texts, forms + more_forms
        teacher = (full_path(axes, embedder, texts, forms) >= STIGMA_DECISION).astype(int)
        head = TextHead(TRIAGE_CLASSES).fit(texts, teacher, C=DISTIL_C, forms=forms)
        distilled = {"distilled_from": {"labelled_train": len(train), "corpus_sentences": len(more_texts),
                                        "corpora": [p.name for p in args.distil],
                                        "full_path_stigmatising": int(teacher.sum()), "C": DISTIL_C}}
    calibration = calibrate_triage(axes, embedder.encode, data, args.target_recall, head, distilled,
                                   unseen_dev_axes(axes, embedder.encode, args.lang, data, axes.stigma_calibration_))
    axes.save(path)
    print(json.dumps({"axes": path.name, **calibration.to_dict()}, indent=1))


if __name__ == "__main__":
    main()
