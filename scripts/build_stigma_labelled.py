"""Assemble the labelled stigma data (issue 28) into ``templates/<lang>/stigma_labelled.csv``.

Real sentences: the labelling pool (``--pool``, as drawn by ``scripts/sample_labelling_pool.py``) joined with the
labellers' sheets ``labels_pool_<lang>_<NN>_<labeller>.csv`` (``--labels``); a chunk labelled twice takes the
adjudicator's ``adjudicated_pool_<lang>_<NN>.csv`` as its label and keeps both independent labels (``label_1``,
``label_2``: ``category|stigmatising|dimension|strength``) for Cohen's kappa. Written sentences
(``--written``: ``written_<lang>_*.csv``, labelled by their writers) are split train/dev by their ``group`` (a
sentence and its rewritten counterpart share a group), never held out.

    python scripts/build_stigma_labelled.py --pool data/labelled --labels /path/labels --written /path/written

A later round's pool (its sheets alone, the earlier ones folded into the labelled file) is appended to the real
rows of the existing file, the rest of it kept as it is:

    python scripts/build_stigma_labelled.py --append data/labelled/pool_en_judged.csv --labels /path/labels
    python scripts/build_stigma_labelled.py --append-written /path/written_en_more.csv

Every build then applies the same two steps, so that a rebuild from the sheets gives the same file:

- the corrections of ``data/labelled/corrections.csv``: labels a second reader found wrong against the guideline,
  one row per sentence (``lang``, ``uid``, the four labels, ``note``, and ``reason``: who found what), replacing
  the sentence's final labels (its independent ``label_1`` and ``label_2`` stay as labelled, for kappa);
- the split by near-duplicate cluster (issue 41; the corpora carry no author field): real sentences linked by
  sharing a document or by being near-duplicates (``sample_labelling_pool.NearDuplicateIndex``) form clusters,
  and each cluster takes the split of its smallest document id (``split_of``: a seeded hash, train / dev /
  heldout 0.6 / 0.2 / 0.2), so a cluster of one document keeps the split it had by document. CodiEsp cases take
  no part in the clustering and keep ``split_of`` of their case id, the same in English and Spanish.

The corrections and the split alone, on the existing files:

    python scripts/build_stigma_labelled.py --refresh
"""

from __future__ import annotations

import argparse
import hashlib
import re
from pathlib import Path

import pandas as pd
from check_labels import label_problems
from sample_labelling_pool import CLINICAL, NearDuplicateIndex, frequent_words, split_of

from corpus_audit.common.atomic import atomic_path

ROOT = Path(__file__).resolve().parents[1]
CORRECTIONS = ROOT / "data" / "labelled" / "corrections.csv"
CORRECTION_COLUMNS = ["lang", "uid", "category", "stigmatising", "dimension", "stigma_strength", "note", "reason"]
LABEL_FIELDS = ["category", "stigmatising", "dimension", "stigma_strength"]
COLUMNS = ["uid", "source", "corpus", "doc_id", "licence", "group", "sentence", "matched_term", "form",
           "illness_type", "split", *LABEL_FIELDS, "note", "labellers", "double_labelled", "label_1", "label_2",
           "chunk"]
WRITTEN_DEV_SHARE = 0.2
SHEET = re.compile(r"labels_(pool_(en|es)_\d\d)_([A-Za-z0-9]+)\.csv")
REDO = re.compile(r"labels_pool_(en|es)_redo_([A-Za-z0-9]+)\.csv")
#: Per double-labelled chunk, the labeller whose misaligned rows a redo sheet replaces.
REDONE = {"pool_en_01": "la", "pool_en_02": "lb"}
# The written sheets say "help" for the guideline's "withholding_help".
DIMENSION_NAMES = {"help": "withholding_help"}


def written_split(group: str) -> str:
    """train or dev from the group name alone (a stable hash), so a group never straddles the split."""
    bucket = int(hashlib.sha256(group.encode("utf-8")).hexdigest()[:8], 16) / 0xFFFFFFFF
    return "dev" if bucket < WRITTEN_DEV_SHARE else "train"


def normalise_dimension(value: str) -> str:
    return ";".join(DIMENSION_NAMES.get(part, part) for part in value.split(";") if part)


def packed(row: pd.Series) -> str:
    return "|".join(str(row[field]) for field in LABEL_FIELDS)


def real_rows(pool: pd.DataFrame, labels: Path, lang: str) -> pd.DataFrame:
    sheets: dict[str, dict[str, pd.DataFrame]] = {}
    redo: dict[str, pd.DataFrame] = {}
    for path in sorted(labels.glob(f"labels_pool_{lang}_*.csv")):
        if name := REDO.fullmatch(path.name):
            redo[name[2]] = pd.read_csv(path, dtype=str, keep_default_na=False)
        elif name := SHEET.fullmatch(path.name):
            sheets.setdefault(name[1], {})[name[3]] = pd.read_csv(path, dtype=str, keep_default_na=False)
        else:
            raise SystemExit(f"{path}: not a label sheet name (labels_pool_<lang>_<NN|redo>_<labeller>.csv)")
    parts = []
    for chunk, rows in pool.groupby("chunk", sort=True):
        by_labeller = sheets.get(chunk)
        if not by_labeller:
            raise SystemExit(f"no label sheet for {chunk} in {labels}")
        if len(by_labeller) == 1:
            (labeller, final), = by_labeller.items()
            extra = pd.DataFrame({"uid": final["uid"], "labellers": labeller, "label_1": "", "label_2": ""})
        else:
            adjudicated = labels / f"adjudicated_{chunk}.csv"
            if not adjudicated.is_file():
                raise SystemExit(f"{chunk} is labelled twice but {adjudicated} is missing")
            final = pd.read_csv(adjudicated, dtype=str, keep_default_na=False)
            (first, a), (second, b) = sorted(by_labeller.items())
            names = pd.Series([f"{first};{second};adjudicator"] * len(a), index=a["uid"].to_numpy())
            for relabeller, sheet in redo.items():
                replaced = REDONE.get(chunk)
                sheet = sheet[sheet["uid"].isin(a["uid"])]
                if replaced is None or sheet.empty:
                    continue
                target = a if replaced == first else b
                target = target.set_index("uid")
                target.loc[sheet["uid"], LABEL_FIELDS] = sheet.set_index("uid")[LABEL_FIELDS]
                if replaced == first:
                    a = target.reset_index()
                else:
                    b = target.reset_index()
                pair = sorted({first, second} - {replaced}) + [relabeller]
                names[sheet["uid"].to_numpy()] = f"{';'.join(pair)};adjudicator"
            both = a.merge(b, on="uid", suffixes=("_1", "_2"))
            extra = pd.DataFrame({
                "uid": both["uid"], "labellers": both["uid"].map(names),
                "label_1": both.apply(lambda r: "|".join(r[f"{f}_1"] for f in LABEL_FIELDS), axis=1),
                "label_2": both.apply(lambda r: "|".join(r[f"{f}_2"] for f in LABEL_FIELDS), axis=1)})
        merged = rows.merge(final[["uid", *LABEL_FIELDS, "note"]], on="uid", how="left", validate="1:1") \
            .merge(extra, on="uid", how="left", validate="1:1")
        if merged["category"].isna().any():
            raise SystemExit(f"{chunk}: {int(merged['category'].isna().sum())} sentences have no label")
        parts.append(merged)
    real = pd.concat(parts, ignore_index=True)
    return real.assign(source="real", group="")


def written_rows(written: Path, lang: str) -> pd.DataFrame:
    files = sorted(written.glob(f"written_{lang}_*.csv"))
    if not files:
        raise SystemExit(f"no written_{lang}_*.csv in {written}")
    return written_sheets(files)


def written_sheets(files: list[Path]) -> pd.DataFrame:
    """The rows of written sheets (labelled by their writers), split train/dev by group."""
    rows = pd.concat([pd.read_csv(path, dtype=str, keep_default_na=False) for path in files], ignore_index=True)
    return rows.assign(source="written", corpus="", doc_id="", licence="Apache-2.0 (written for corpus-audit)",
                       matched_term=rows["mention"], split=rows["group"].map(written_split),
                       dimension=rows["dimension"].map(normalise_dimension), labellers="writer",
                       double_labelled="no", label_1="", label_2="", chunk="")


def build(pool_dir: Path, labels: Path, written: Path, lang: str) -> pd.DataFrame:
    # The main pool, then its supplements (pool_LANG_short.csv: the short-fragment chunk).
    pool = pd.concat([pd.read_csv(path, dtype=str, keep_default_na=False)
                      for path in [pool_dir / f"pool_{lang}.csv", *sorted(pool_dir.glob(f"pool_{lang}_*.csv"))]],
                     ignore_index=True)
    table = pd.concat([real_rows(pool, labels, lang), written_rows(written, lang)], ignore_index=True)
    return table[COLUMNS]


def append(table: pd.DataFrame, new: pd.DataFrame) -> pd.DataFrame:
    """``table`` (a labelled file) with the labelled rows ``new``: real ones after its real rows, written ones at
    the end."""
    if overlap := sorted(set(new["uid"]) & set(table["uid"])):
        raise SystemExit(f"uids already labelled: {', '.join(overlap[:5])}{' ...' if len(overlap) > 5 else ''}")
    real = table["source"] == "real"
    new_real = new["source"] == "real"
    return pd.concat([table[real], new[new_real], table[~real], new[~new_real]], ignore_index=True)[COLUMNS]


def read_corrections(path: Path = CORRECTIONS) -> pd.DataFrame:
    """The corrections file, checked: its columns, one row per (lang, uid), labels the guideline allows."""
    corrections = pd.read_csv(path, dtype=str, keep_default_na=False)
    if list(corrections.columns) != CORRECTION_COLUMNS:
        raise SystemExit(f"{path}: columns must be exactly {','.join(CORRECTION_COLUMNS)}")
    problems = [f"{path}: line {line} ({row.uid}): {problem}"
                for line, row in zip(range(2, len(corrections) + 2), corrections.itertuples(index=False))
                for problem in label_problems(row)]
    problems += [f"{path}: line {line} ({row.uid}): no reason given"
                 for line, row in zip(range(2, len(corrections) + 2), corrections.itertuples(index=False))
                 if not row.reason.strip()]
    if (duplicated := corrections.duplicated(["lang", "uid"])).any():
        problems.append(f"{path}: {corrections.loc[duplicated, 'uid'].iloc[0]} is corrected more than once")
    if problems:
        raise SystemExit("\n".join(problems))
    return corrections


def correct(table: pd.DataFrame, lang: str, corrections: pd.DataFrame) -> pd.DataFrame:
    """``table`` with the final labels and note of every sentence ``corrections`` names for ``lang`` replaced."""
    mine = corrections[corrections["lang"] == lang].set_index("uid")
    if missing := sorted(set(mine.index) - set(table["uid"])):
        raise SystemExit(f"{CORRECTIONS}: {lang} uids not in the labelled file: {', '.join(missing)}")
    fields = [*LABEL_FIELDS, "note"]
    table = table.set_index("uid")
    table.loc[mine.index, fields] = mine[fields]
    return table.reset_index()[COLUMNS]


def clusters(table: pd.DataFrame) -> pd.Series:
    """A cluster id per real non-clinical row of ``table`` (index: the row's index): connected components of
    "same document" and "near-duplicate sentences" (``NearDuplicateIndex``, its frequent words counted over these
    rows), each named by the smallest document id in it."""
    rows = table[(table["source"] == "real") & ~table["corpus"].isin(CLINICAL)]
    parent = list(range(len(rows)))

    def root(node: int) -> int:
        while parent[node] != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    index = NearDuplicateIndex(frequent_words(rows["sentence"]))
    first_of_document: dict[tuple[str, str], int] = {}
    for node, (corpus, doc_id, sentence) in enumerate(zip(rows["corpus"], rows["doc_id"], rows["sentence"])):
        linked = index.matches(sentence) | {first_of_document.setdefault((corpus, doc_id), node)}
        for other in linked:
            parent[root(other)] = root(node)
        index.add(sentence)
    roots = pd.Series([root(node) for node in range(len(rows))], index=rows.index)
    return rows["doc_id"].groupby(roots).transform("min")


def cluster_split(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with its real rows split by cluster (``clusters``; CodiEsp cases by case id); written rows keep
    the split of their group."""
    split = table["split"].copy()
    real = table["source"] == "real"
    split[real] = table.loc[real, "doc_id"].map(split_of)  # CodiEsp cases; the others are replaced below
    named = clusters(table)
    split[named.index] = named.map(split_of)
    return table.assign(split=split)


def write(table: pd.DataFrame, target: Path) -> None:
    with atomic_path(target) as tmp:
        table.to_csv(tmp, index=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pool", type=Path, default=ROOT / "data" / "labelled")
    parser.add_argument("--labels", type=Path, help="folder of the label sheets (not needed with --append-written)")
    parser.add_argument("--written", type=Path, help="folder of the written sheets (a full build only)")
    later = parser.add_mutually_exclusive_group()
    later.add_argument("--append", type=Path, metavar="POOL_CSV",
                       help="append this pool's labelled rows (pool_LANG_*.csv, labels in --labels) to the existing "
                            "labelled file")
    later.add_argument("--append-written", type=Path, metavar="SHEET_CSV",
                       help="append this written sheet (written_LANG_*.csv) to the existing labelled file")
    later.add_argument("--refresh", action="store_true",
                       help="apply the corrections and the split by cluster to the existing labelled files only")
    parser.add_argument("--out", type=Path, default=ROOT / "templates")
    args = parser.parse_args()
    if args.append_written is None and not args.refresh and args.labels is None:
        parser.error("--labels is required unless --append-written or --refresh is given")
    if args.append is None and args.append_written is None and not args.refresh and args.written is None:
        parser.error("--written is required for a full build (without --append, --append-written or --refresh)")
    corrections = read_corrections()
    for lang in ("en", "es"):
        target = args.out / lang / "stigma_labelled.csv"
        if args.append is not None:
            pool = pd.read_csv(args.append, dtype=str, keep_default_na=False)
            pool = pool[pool["lang"] == lang]
            if pool.empty:
                continue
            table = append(pd.read_csv(target, dtype=str, keep_default_na=False), real_rows(pool, args.labels, lang))
        elif args.append_written is not None:
            if not args.append_written.name.startswith(f"written_{lang}_"):
                continue
            table = append(pd.read_csv(target, dtype=str, keep_default_na=False),
                           written_sheets([args.append_written]))
        elif args.refresh:
            table = pd.read_csv(target, dtype=str, keep_default_na=False)
        else:
            table = build(args.pool, args.labels, args.written, lang)
        before = table.set_index("uid")["split"]
        table = cluster_split(correct(table, lang, corrections))
        moved = (table.set_index("uid")["split"] != before.reindex(table["uid"])).sum()
        write(table, target)
        print(f"{target}: {len(table)} rows, {moved} of them in another split than before\n"
              f"{pd.crosstab(table['source'], [table['split'], table['stigmatising']])}")


if __name__ == "__main__":
    main()
