"""``corpus-audit probe score``: the PLL of any sentences, per sentence and per token.

Input: a text file with one sentence per line, or a CSV, JSON Lines or Parquet table with a sentence column.
Output by extension: ``.parquet`` (per-token values as lists), ``.jsonl`` or ``.csv`` (per-token values as JSON
arrays). Chunks are saved in ``OUTPUT.parts/`` as they are scored, so an interrupted run resumes; the folder is
removed once the output is written.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from corpus_audit.common.atomic import atomic_path
from corpus_audit.common.errors import UserError
from corpus_audit.common.log import to_stderr
from corpus_audit.embed import model_identity
from corpus_audit.probe.models.masked import MAX_TOKENS, ModelOnDemand
from corpus_audit.probe.models.parts import PLLParts

OUTPUT_FORMATS = (".parquet", ".jsonl", ".csv")


class SentencesInputError(UserError, ValueError):
    """The sentences to score cannot be read."""


def read_sentences(path: str | Path, column: str = "sentence") -> list[str]:
    """The sentences of ``path``: ``.txt`` one per non-empty line; ``.csv``, ``.jsonl``, ``.parquet`` the
    ``column``."""
    path = Path(path)
    try:
        if path.suffix == ".txt":
            return [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        readers = {".csv": pd.read_csv, ".jsonl": lambda p: pd.read_json(p, lines=True), ".parquet": pd.read_parquet}
        if path.suffix not in readers:
            raise SentencesInputError(f"{path}: give a .txt, .csv, .jsonl or .parquet file")
        table = readers[path.suffix](path)
    except (OSError, ValueError, UnicodeDecodeError) as error:
        if isinstance(error, SentencesInputError):
            raise
        raise SentencesInputError(f"{path}: cannot read it ({error})") from None
    if column not in table.columns:
        raise SentencesInputError(f"{path}: no column {column!r} (has {', '.join(map(str, table.columns))}); "
                                  "name the sentence column with --text-field")
    if table[column].isna().any():
        raise SentencesInputError(f"{path}: row {int(table[column].isna().to_numpy().argmax()) + 1} has no sentence")
    return table[column].astype(str).tolist()


def score_file(model: str, input_path: str | Path, output: str | Path, *, metric: str = "within_word_l2r",
               column: str = "sentence", device: str = "cpu", max_tokens: int = MAX_TOKENS,
               threads: int | None = None, log: Callable[[str], None] = to_stderr, progress: bool = False
               ) -> pd.DataFrame:
    """Score every sentence of ``input_path`` and write ``output``; return the table written (``sentence``,
    ``pll`` = the sum over tokens, ``n_tokens``, ``tokens`` and ``token_scores``)."""
    output = Path(output)
    if output.suffix not in OUTPUT_FORMATS:
        raise SentencesInputError(f"{output}: the output must end in {', '.join(OUTPUT_FORMATS)}")
    sentences = read_sentences(input_path, column)
    if not sentences:
        raise SentencesInputError(f"{input_path}: no sentences")
    parts = PLLParts(output.with_name(output.name + ".parts"), [model, model_identity(model), metric])
    results = parts.score(sentences, ModelOnDemand(model, device, threads, log), metric, max_tokens, log,
                          progress)
    table = pd.DataFrame({"sentence": sentences, "pll": [r.total for r in results],
                          "n_tokens": [len(r.scores) for r in results], "tokens": [r.tokens for r in results],
                          "token_scores": [r.scores for r in results]})
    with atomic_path(output) as tmp:
        if output.suffix == ".parquet":
            table.to_parquet(tmp, index=False)
        elif output.suffix == ".jsonl":
            table.to_json(tmp, orient="records", lines=True, force_ascii=False)
        else:
            table.assign(tokens=table["tokens"].map(lambda v: json.dumps(v, ensure_ascii=False)),
                         token_scores=table["token_scores"].map(json.dumps)).to_csv(tmp, index=False)
    parts.remove()
    return table
