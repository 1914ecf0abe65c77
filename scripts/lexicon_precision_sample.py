"""Draw a lexicon precision sample: random kept sentences from `corpus-audit filter` outputs, to label by hand.

Each SOURCE is NAME=FILTER_OUTPUT.parquet:N (N sentences drawn from that output, duplicate sentences dropped
first). Writes a CSV with an empty ``correct`` and ``note`` column per row; a person fills them in by reading
(see tests/data/labelling_guide.md, "Lexicon precision"). With ``--precision`` it reads a labelled CSV instead
and prints the precision of its ``random`` rows per corpus and overall.

    corpus-audit filter --lang es --workers 1 -o es.parquet codiesp_clinical_cases_es.jsonl.gz
    python scripts/lexicon_precision_sample.py --seed 1601 codiesp_clinical_cases_es=es.parquet:100 -o sample.csv
    python scripts/lexicon_precision_sample.py --precision tests/data/lexicon_precision_es.csv

With ``--per-form K`` it draws a mention-form sample instead (issue 27): the sources' kept sentences (NAME=FILE, no
N) are pooled, duplicates dropped, and each sentence with a mention of a form other than ``diagnosis`` goes to the
stratum of its first such mention; K sentences are drawn at random from each stratum (all of a smaller one). The
CSV has ``sentence, corpus, doc_id, licence, term, form, type`` (the sentence's illness type), ``stratum_size``,
``round`` (1; give a later sample another number when you merge them), ``verdict`` and ``note``, with ``verdict`` (yes/no: is
the term a mention of a person's illness or disability?) and ``note`` to fill in; ``--precision`` on it prints the
precision per form, the sample's overall precision and the overall precision weighted by the strata's sizes, per
round.

    python scripts/lexicon_precision_sample.py --seed 2701 --per-form 64 reddit_mh_27subs_en=reddit.parquet \
        codiesp_clinical_cases_en=codiesp_en.parquet civil_comments_toxic_spans_en=civil.parquet \
        mlma_tweets_en=mlma.parquet -o mention_precision_en.csv
    python scripts/lexicon_precision_sample.py --precision tests/data/mention_precision_en.csv

``--exclude EARLIER.csv`` leaves an earlier sample's sentences out of the pool: a fresh sample after the rules were
tuned on the earlier one's errors.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

COLUMNS = ["corpus", "doc_id", "sentence", "terms", "illnesses", "illness_type", "sample", "correct", "note"]
FORM_COLUMNS = ["sentence", "corpus", "doc_id", "licence", "term", "form", "type", "stratum_size", "round", "verdict",
                "note"]
#: The licences of the shared corpora (their NOTICE.md), recorded beside each sampled sentence.
LICENCES = {
    "reddit_mh_27subs_en": "Apache-2.0 (Reddit Mental Health Dataset, Low et al. 2020, via construct-tracker)",
    "codiesp_clinical_cases_en": "CC-BY-4.0 (CodiEsp / SPACCC)",
    "codiesp_clinical_cases_es": "CC-BY-4.0 (CodiEsp / SPACCC)",
    "civil_comments_toxic_spans_en": "CC0-1.0 (Toxic Spans, Pavlopoulos et al. 2021)",
    "mlma_tweets_en": "MIT, Copyright (c) 2019 HKUST-KnowComp (MLMA, Ousidhoum et al. 2019)",
    "textdetox_es": "MIT / content CC-BY-4.0 (TextDetox Spanish, from CLANDESTINO)",
    "gold_standard_toxicity_es": "CC-BY-4.0 (gold-standard-toxicity, González-Bustamante et al.)",
}


def draw(name: str, path: Path, size: int, seed: int) -> pd.DataFrame:
    """``size`` distinct kept sentences of one filter output, drawn at random."""
    kept = pd.read_parquet(path).drop_duplicates("sentence")
    sample = kept.sample(n=size, random_state=seed)
    return pd.DataFrame({
        "corpus": name,
        "doc_id": sample["doc_id"],
        "sentence": sample["sentence"],
        "terms": sample["terms"].map(";".join),
        "illnesses": sample["illnesses"].map(";".join),
        "illness_type": sample["illness_type"],
        "sample": "random",
        "correct": "",
        "note": "",
    })


def draw_forms(sources: dict[str, Path], per_form: int, seed: int, exclude: set[str] = frozenset()) -> pd.DataFrame:
    """``per_form`` random sentences per mention form (other than diagnosis) of the pooled filter outputs, leaving
    out the sentences in ``exclude`` (an earlier sample, whose errors the rules were then tuned on)."""
    rows = []
    for name, path in sources.items():
        kept = pd.read_parquet(path)
        for row in kept.itertuples():
            new = [i for i, form in enumerate(row.forms) if form != "diagnosis"]
            if new:
                rows.append({"sentence": row.sentence, "corpus": name, "doc_id": row.doc_id,
                             "licence": LICENCES.get(name, ""), "term": row.terms[new[0]], "form": row.forms[new[0]],
                             "type": row.illness_type})
    pool = pd.DataFrame(rows).drop_duplicates("sentence")
    pool = pool[~pool["sentence"].isin(exclude)]
    sizes = pool["form"].value_counts()
    sample = pd.concat([part.sample(n=min(per_form, len(part)), random_state=seed)
                        for _, part in pool.groupby("form")])
    return sample.assign(stratum_size=sample["form"].map(sizes), round=1, verdict="", note="")[FORM_COLUMNS]


def form_precision(labelled: pd.DataFrame, without: frozenset[str] = frozenset()) -> pd.Series:
    """Precision per form, of the whole sample, and weighted by the strata's sizes (the pool's precision).

    ``without`` leaves those corpora's rows out; each stratum's size is then scaled by the share of its sampled rows
    that remain (the sample is random within the stratum, so that share estimates the corpora's share of the stratum).
    """
    if not labelled["verdict"].isin(["yes", "no"]).all():
        raise SystemExit("every row needs verdict = yes or no")
    remaining = labelled[~labelled["corpus"].isin(without)]
    sizes = (labelled.groupby("form")["stratum_size"].first()
             * remaining["form"].value_counts() / labelled["form"].value_counts()).dropna()
    labelled = remaining
    correct = labelled["verdict"].eq("yes")
    per_form = correct.groupby(labelled["form"]).mean()
    weighted = (per_form * sizes).sum() / sizes.sum()
    counts = labelled["form"].value_counts().rename(lambda form: f"n {form}")
    return pd.concat([per_form, pd.Series({"sample": correct.mean(), "weighted by stratum": weighted,
                                           "n": len(labelled)}), counts])


def precision(labelled: pd.DataFrame) -> pd.Series:
    """Share of the random rows labelled ``correct == "yes"``, per corpus and ``all``."""
    if not labelled["correct"].isin(["yes", "no"]).all():
        raise SystemExit("every row needs correct = yes or no")
    labelled = labelled[labelled["sample"] == "random"]
    correct = labelled["correct"].eq("yes")
    return pd.concat([correct.groupby(labelled["corpus"]).mean(), pd.Series({"all": correct.mean()})])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sources", nargs="*", help="NAME=FILTER_OUTPUT.parquet:N")
    parser.add_argument("--seed", type=int, default=1601)
    parser.add_argument("-o", "--output", type=Path)
    parser.add_argument("--precision", type=Path, help="print the precision of a labelled sample and stop")
    parser.add_argument("--without-corpus", action="append", default=[],
                        help="with --precision on a form sample: also print each round without this corpus's rows "
                             "(repeatable; e.g. a machine-translated corpus whose errors no rule can see)")
    parser.add_argument("--per-form", type=int, help="draw this many sentences per mention form (SOURCES: NAME=FILE)")
    parser.add_argument("--exclude", type=Path, action="append", default=[],
                        help="with --per-form: leave out the sentences of this earlier sample (CSV, repeatable)")
    args = parser.parse_args()
    if args.precision:
        labelled = pd.read_csv(args.precision, keep_default_na=False)
        if "verdict" not in labelled:
            print(precision(labelled).round(3).to_string())
        for round_, part in labelled.groupby("round") if "verdict" in labelled else ():
            print(f"round {round_}:\n{form_precision(part).round(3).to_string()}")
            if args.without_corpus:
                without = frozenset(args.without_corpus)
                print(f"round {round_} without {', '.join(sorted(without))}:\n"
                      f"{form_precision(part, without).round(3).to_string()}")
        return
    if not args.sources or not args.output:
        parser.error("give SOURCES and -o, or --precision")
    if args.per_form:
        sources = {name: Path(path) for name, _, path in (source.partition("=") for source in args.sources)}
        exclude = {sentence for path in args.exclude for sentence in pd.read_csv(path)["sentence"]}
        draw_forms(sources, args.per_form, args.seed, exclude).to_csv(args.output, index=False)
        return
    parts = []
    for source in args.sources:
        name, _, rest = source.partition("=")
        path, _, size = rest.rpartition(":")
        parts.append(draw(name, Path(path), int(size), args.seed))
    pd.concat(parts)[COLUMNS].to_csv(args.output, index=False)


if __name__ == "__main__":
    main()
