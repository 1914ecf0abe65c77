"""Do two checkouts of corpus-audit give the same outputs? Runs every command on each corpus with each checkout
and compares the files: byte for byte, else (JSON) value for value without timings and checkout paths, (Parquet)
row for row, (command output) line for line without timing lines.

    python scripts/same_outputs.py OLD_TREE NEW_TREE OUTROOT --corpus NAME:LANG:PATH [--corpus ...]

Each tree is a source checkout (``git worktree add /tmp/old REV``); the commands run as ``python -m corpus_audit``
with that tree first on the path, in this environment. Per corpus: audit, filter, export-flagged (a quadrant, a
dimension, a type and a dimension), score of the filtered sentences and report; then compare of the first two.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd

TIMING_KEYS = {"seconds", "megabytes_per_second", "embedding_seconds"}


def commands(name: str, lang: str, path: str) -> list[tuple[str, list[str]]]:
    return [
        (f"{name}.audit", ["audit", path, "--lang", lang, "-o", name, "--no-progress"]),
        (f"{name}.filter", ["filter", path, "--lang", lang, "-o", f"{name}.filter.parquet", "--no-progress"]),
        (f"{name}.flag_q", ["export-flagged", name, "--quadrant", "cold-incompetent", "-o", f"{name}.flag_q.csv"]),
        (f"{name}.flag_d", ["export-flagged", name, "--dimension", "Pity", "-o", f"{name}.flag_d.parquet"]),
        (f"{name}.flag_t", ["export-flagged", name, "--type", "mental", "--dimension", "fear", "-o",
                            f"{name}.flag_t.jsonl"]),
        (f"{name}.score", ["score", f"{name}.filter.parquet", "--text-field", "sentence", "--lang", lang, "-o",
                           f"{name}.score.parquet"]),
        (f"{name}.report", ["report", name]),
    ]


def run_all(tree: Path, outdir: Path, corpora: list[tuple[str, str, str]]) -> None:
    outdir.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(tree)}
    steps = [step for corpus in corpora for step in commands(*corpus)]
    if len(corpora) > 1:
        steps.append(("compare", ["compare", corpora[0][0], corpora[1][0], "-o", "compare.json",
                                  "--allow-different-models"]))
    for label, args in steps:
        with open(outdir / f"{label}.out", "w") as out:
            code = subprocess.run([sys.executable, "-m", "corpus_audit", *args], cwd=outdir, env=env, stdout=out,
                                  stderr=subprocess.STDOUT).returncode
        print(f"{tree}: {label} exit {code}", flush=True)


def normalised(value: Any, trees: tuple[str, ...]) -> Any:
    if isinstance(value, dict):
        return {key: normalised(item, trees) for key, item in value.items() if key not in TIMING_KEYS}
    if isinstance(value, list):
        return [normalised(item, trees) for item in value]
    if isinstance(value, str):
        for tree in trees:
            value = value.replace(tree, "TREE")
    return value


def compare_file(old: Path, new: Path, trees: tuple[str, ...]) -> str:
    if old.read_bytes() == new.read_bytes():
        return "identical"
    if old.suffix == ".json":
        a, b = (normalised(json.loads(path.read_text(encoding="utf-8")), trees) for path in (old, new))
        return "identical apart from timings and checkout paths" if a == b else "DIFFERS (values)"
    if old.suffix == ".parquet":
        a, b = pd.read_parquet(old), pd.read_parquet(new)
        note = ""
        if list(a.columns) != list(b.columns):
            note = f"columns added or removed: {sorted(set(a.columns) ^ set(b.columns))}; "
            b = b[[column for column in a.columns if column in b.columns]]
        if a.shape != b.shape:
            return f"DIFFERS ({note}shape {a.shape} vs {b.shape})"
        rows = int((a.astype(str) != b.astype(str)).any(axis=1).sum())
        return f"{note}{'same values' if rows == 0 else f'DIFFERS in {rows} of {len(a)} rows'}"
    if old.suffix == ".out":
        lines = [pair for pair in zip(old.read_text().splitlines(), new.read_text().splitlines())
                 if pair[0] != pair[1] and not pair[0].startswith("time:")]
        return "same apart from timing lines" if not lines else f"DIFFERS: {lines[0]}"
    return "DIFFERS (bytes)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old_tree", type=Path)
    parser.add_argument("new_tree", type=Path)
    parser.add_argument("outroot", type=Path)
    parser.add_argument("--corpus", action="append", required=True, help="NAME:LANG:PATH")
    args = parser.parse_args()
    corpora = [tuple(spec.split(":", 2)) for spec in args.corpus]
    corpora = [(name, lang, str(Path(path).resolve())) for name, lang, path in corpora]
    old_out, new_out = args.outroot / "old", args.outroot / "new"
    run_all(args.old_tree.resolve(), old_out, corpora)
    run_all(args.new_tree.resolve(), new_out, corpora)
    trees = (str(args.old_tree.resolve()), str(args.new_tree.resolve()))
    for old in sorted(path for path in old_out.rglob("*") if path.is_file()):
        new = new_out / old.relative_to(old_out)
        verdict = compare_file(old, new, trees) if new.is_file() else "MISSING in the new outputs"
        print(f"{old.relative_to(old_out)}: {verdict}")


if __name__ == "__main__":
    main()
