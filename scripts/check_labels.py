"""Check label files against the guideline's format (docs/labelling.md) and, for double-labelled chunks, report
Cohen's kappa between two labellers.

    python scripts/check_labels.py labels_pool_en_03_lab1.csv [more files ...]
    python scripts/check_labels.py --kappa labels_pool_en_01_a.csv labels_pool_en_01_b.csv
    python scripts/check_labels.py --kappa-table   # kappa per field and language, from templates/<lang>/

A label file is named ``labels_<chunk>_<labeller>.csv`` (chunk as in the ``chunk`` column of
templates/<lang>/stigma_labelled.csv or, before it is appended, of its pool data/labelled/pool_<lang>_*.csv, e.g.
``pool_en_03``) and holds one row per uid of that chunk with the columns
uid,category,stigmatising,dimension,stigma_strength,note. Exit status 1 when any file has a problem.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import pandas as pd
from sklearn.metrics import cohen_kappa_score

ROOT = Path(__file__).resolve().parents[1]
POOLS = ROOT / "data" / "labelled"
COLUMNS = ["uid", "category", "stigmatising", "dimension", "stigma_strength", "note"]
CATEGORIES = {"judgement", "self_disclosure", "clinical", "question", "analogy", "information"}
DIMENSIONS = {"anger", "dangerousness", "fear", "blame", "segregation", "coercion", "avoidance",
              "withholding_help", "pity", "other"}
FIELDS = ("category", "stigmatising", "dimension", "stigma_strength (quadratic)")
NAME = re.compile(r"labels_(pool_(en|es)_\d\d)_([A-Za-z0-9]+)\.csv")


def read_labels(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, dtype=str, keep_default_na=False)


def chunk_uids(chunk: str, lang: str) -> set[str]:
    """The uids of ``chunk``: in the labelled file once appended, in its pool file (data/labelled/pool_LANG*.csv)
    while it is being labelled."""
    tables = [ROOT / "templates" / lang / "stigma_labelled.csv", *sorted(POOLS.glob(f"pool_{lang}*.csv"))]
    return {uid for table in map(read_labels, tables) for uid in table.loc[table["chunk"] == chunk, "uid"]}


def problems(path: Path) -> list[str]:
    """Every format problem of one label file, as 'file: line N: what' messages."""
    name = NAME.fullmatch(path.name)
    if not name:
        return [f"{path}: name must be labels_pool_<lang>_<NN>_<labeller>.csv"]
    chunk, lang = name[1], name[2]
    labels = read_labels(path)
    if list(labels.columns) != COLUMNS:
        return [f"{path}: columns must be exactly {','.join(COLUMNS)} (found {','.join(labels.columns)})"]
    expected = chunk_uids(chunk, lang)
    found: list[str] = []
    missing = expected - set(labels["uid"])
    if missing:
        found.append(f"{path}: {len(missing)} uids of {chunk} have no row, e.g. {min(missing)}")
    for line, row in zip(range(2, len(labels) + 2), labels.itertuples(index=False)):
        where = f"{path}: line {line} ({row.uid})"
        if row.uid not in expected:
            found.append(f"{where}: uid not in {chunk}")
        found.extend(f"{where}: {problem}" for problem in label_problems(row))
    duplicated = labels["uid"][labels["uid"].duplicated()]
    if len(duplicated):
        found.append(f"{path}: uid {duplicated.iloc[0]} has more than one row")
    return found


def label_problems(row) -> list[str]:
    """What is wrong with one row's labels (``category``, ``stigmatising``, ``dimension``, ``stigma_strength``,
    ``note`` attributes) against the guideline's format; empty when nothing is."""
    found = []
    if row.category not in CATEGORIES:
        found.append(f"category {row.category!r} is not one of {sorted(CATEGORIES)}")
    dimensions = [part for part in row.dimension.split(";") if part]
    if row.stigmatising == "yes":
        if not dimensions or set(dimensions) - DIMENSIONS:
            found.append(f"stigmatising=yes needs dimension(s) from {sorted(DIMENSIONS)}, ';'-joined")
        if row.stigma_strength not in {"1", "2", "3"}:
            found.append("stigmatising=yes needs stigma_strength 1, 2 or 3")
        if "other" in dimensions and not row.note.strip():
            found.append("dimension 'other' needs a note saying what it is")
    elif row.stigmatising == "no":
        if dimensions:
            found.append("stigmatising=no must leave dimension empty")
        if row.stigma_strength != "0":
            found.append("stigmatising=no needs stigma_strength 0")
    else:
        found.append(f"stigmatising must be yes or no, not {row.stigmatising!r}")
    return found


def kappas(first: Path, second: Path) -> dict[str, float]:
    """Cohen's kappa of category, stigmatising and (quadratic-weighted) stigma_strength over the shared uids."""
    both = read_labels(first).merge(read_labels(second), on="uid", suffixes=("_1", "_2"))
    return {
        "rows": float(len(both)),
        "category": cohen_kappa_score(both["category_1"], both["category_2"]),
        "stigmatising": cohen_kappa_score(both["stigmatising_1"], both["stigmatising_2"]),
        "stigma_strength (quadratic)": cohen_kappa_score(both["stigma_strength_1"].astype(int),
                                                         both["stigma_strength_2"].astype(int),
                                                         weights="quadratic"),
    }


def kappa_table(labelled: Path) -> dict[str, float]:
    """Cohen's kappa per field over the double-labelled sentences of a stigma_labelled.csv (its ``label_1`` and
    ``label_2``: category|stigmatising|dimension|strength): category, stigmatising, dimension (the exact
    ';'-joined set, empty for none) and stigma_strength (quadratic weights)."""
    table = read_labels(labelled)
    doubled = table[table["double_labelled"] == "yes"]
    first, second = (doubled[column].str.split("|", expand=True) for column in ("label_1", "label_2"))
    return {
        "rows": float(len(doubled)),
        "category": cohen_kappa_score(first[0], second[0]),
        "stigmatising": cohen_kappa_score(first[1], second[1]),
        "dimension": cohen_kappa_score(first[2], second[2]),
        "stigma_strength (quadratic)": cohen_kappa_score(first[3].astype(int), second[3].astype(int),
                                                         weights="quadratic"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("--kappa", action="store_true", help="the two FILES label the same chunk: print kappa")
    parser.add_argument("--kappa-table", action="store_true",
                        help="print kappa per field over the double-labelled subset of each language's "
                             "templates/<lang>/stigma_labelled.csv")
    args = parser.parse_args()
    if args.kappa_table:
        print("| language | double-labelled | " + " | ".join(FIELDS) + " |")
        print("|---" * (len(FIELDS) + 2) + "|")
        for lang in ("en", "es"):
            values = kappa_table(ROOT / "templates" / lang / "stigma_labelled.csv")
            print(f"| {lang} | {values['rows']:.0f} | " + " | ".join(f"{values[f]:.3f}" for f in FIELDS) + " |")
        return
    if not args.files:
        parser.error("name the label files to check")
    found = [problem for path in args.files for problem in problems(path)]
    print("\n".join(found) if found else f"{len(args.files)} file(s): format OK")
    if args.kappa and not found:
        if len(args.files) != 2:
            parser.error("--kappa takes exactly two files")
        for name, value in kappas(*args.files).items():
            print(f"{name}: {value:.3f}")
    sys.exit(1 if found else 0)


if __name__ == "__main__":
    main()
