"""Draw a lexicon precision sample: random kept sentences from `corpus-audit filter` outputs, to label by hand.

Each SOURCE is NAME=FILTER_OUTPUT.parquet:N (N sentences drawn from that output, duplicate sentences dropped
first). Writes a CSV with an empty ``correct`` and ``note`` column per row; a person fills them in by reading
(see tests/data/labelling_guide.md, "Lexicon precision"). With ``--precision`` it reads a labelled CSV instead
and prints the precision of its ``random`` rows per corpus and overall.

    corpus-audit filter --lang es --workers 1 -o es.parquet codiesp_clinical_cases_es.jsonl.gz
    python scripts/lexicon_precision_sample.py --seed 1601 codiesp_clinical_cases_es=es.parquet:100 -o sample.csv
    python scripts/lexicon_precision_sample.py --precision tests/data/lexicon_precision_es.csv
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

COLUMNS = ["corpus", "doc_id", "sentence", "terms", "illnesses", "illness_type", "sample", "correct", "note"]


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
    args = parser.parse_args()
    if args.precision:
        print(precision(pd.read_csv(args.precision, keep_default_na=False)).round(3).to_string())
        return
    if not args.sources or not args.output:
        parser.error("give SOURCES and -o, or --precision")
    parts = []
    for source in args.sources:
        name, _, rest = source.partition("=")
        path, _, size = rest.rpartition(":")
        parts.append(draw(name, Path(path), int(size), args.seed))
    pd.concat(parts)[COLUMNS].to_csv(args.output, index=False)


if __name__ == "__main__":
    main()
