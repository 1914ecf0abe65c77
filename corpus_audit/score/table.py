"""The score command: read a table, add the instrument's columns to every row, write it.

Input: ``.txt`` (one sentence per line), ``.csv``/``.tsv``, ``.jsonl``/``.json`` or ``.parquet``, optionally
compressed (the corpus readers do the parsing and count bad records). Output: ``.csv`` or ``.parquet``,
written atomically, every input column in its place, then ``warmth``, ``competence``, the judgement category and
strength, and the nine AQ-27 dimension scores. Identical sentences are embedded once. As in an audit, each illness
mention is replaced by the language's mask phrase before embedding (``mask_terms``), so that the scores say
what the sentence says of people, not what the illness word itself carries.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from corpus_audit.common.atomic import atomic_path
from corpus_audit.common.errors import UserError
from corpus_audit.corpus.documents import (CorpusError, ReaderOptions, ReadStats, check_documents_read, field_text,
                                           scrub_surrogates)
from corpus_audit.corpus.readers import read_file, split_format
from corpus_audit.score.scorer import Scorer, ScoreSummary, add_score_columns, score_with

if TYPE_CHECKING:
    from corpus_audit.corpus.select import MentionMasker

OUTPUT_FORMATS = (".csv", ".parquet")


class ScoreError(UserError):
    """A user error in a score request (bad path, empty input, missing column); the message says which."""


def check_output_path(output: str | Path) -> Path:
    output = Path(output)
    if output.suffix.lower() not in OUTPUT_FORMATS:
        raise ScoreError(f"{output}: score writes CSV or Parquet: name the output .csv or .parquet")
    if output.is_dir():
        raise ScoreError(f"{output} is a folder; give a file name ending in .csv or .parquet")
    return output


def read_rows(path: str, text_field: str, strict: bool, summary: ScoreSummary) -> tuple[list[dict[str, Any]],
                                                                                          list[str]]:
    """Records of ``path`` as dicts holding every input column in the input's order, and the text of each; bad
    records are counted in ``summary``."""
    fmt, _ = split_format(path)
    stats = ReadStats()
    options = ReaderOptions(text_field=text_field, line_docs=True, strict=strict, whole_record=True)
    try:
        documents = list(read_file(path, options, stats))
    except CorpusError as error:
        raise ScoreError(str(error)) from None
    rows = [{"line": doc.line, text_field: doc.text} if fmt == "txt" else doc.meta for doc in documents]
    summary.skipped.update(stats.skipped)
    summary.examples.extend(stats.examples + stats.repaired_examples)
    summary.repaired.update(stats.repaired)
    try:
        check_documents_read(stats)
    except CorpusError as error:
        raise ScoreError(f"{path}: {error}") from None
    return rows, [doc.text for doc in documents]


def write_table(rows: list[dict[str, Any]], scores: np.ndarray, output: Path) -> None:
    """Write every input column plus the instrument's columns (``scores``: ``OUTPUT_COLUMNS``; the category and
    top dimension derived from them) to ``output`` (.csv or .parquet), atomically. An input column with the name of
    an output column is replaced.

    Uncleaned records disagree: a field that is a number in one record and a string, a list or an object in
    another has no Parquet type; such a table is written with its mixed columns as text (JSON for objects and
    lists, as in CSV output), so the output keeps every row and column. Lone surrogates (JSON ``\\ud800``
    escapes, CSV headers with invalid bytes) become U+FFFD: no file can encode them.
    """
    import pandas as pd
    import pyarrow as pa

    frame = pd.DataFrame.from_records([{scrub_surrogates(str(name)): scrub_surrogates(value) if isinstance(value, str)
                                        else value for name, value in row.items()} for row in rows])
    add_score_columns(frame, scores)
    with atomic_path(output) as tmp:
        if output.suffix.lower() == ".csv":
            _mixed_as_text(frame).to_csv(tmp, index=False)
            return
        try:
            frame.to_parquet(tmp, index=False)
        except (pa.ArrowException, OverflowError, UnicodeEncodeError):
            _mixed_as_text(frame).to_parquet(tmp, index=False)


def _mixed_as_text(frame: Any) -> Any:
    """``frame`` with its columns of mixed or nested values (dtype object) as text (:func:`field_text`)."""
    frame = frame.copy()
    for name in frame.columns[frame.dtypes == object]:
        frame[name] = frame[name].map(field_text)
    return frame


def score_file(input_path: str, output: str | Path, scorer: Scorer, text_field: str = "text",
               strict: bool = False, mask: MentionMasker | None = None) -> ScoreSummary:
    """Read ``input_path``, score every row with ``scorer``, write ``output``. ``mask`` rewrites each text before
    it is scored (the illness mentions replaced by the mask phrase, their forms given to the scorer); the output
    keeps the text as it was.

    The scorer starts (loads its model, or connects its engine) only once the input is known to hold rows, so a
    bad input fails before the model is loaded. Reading and writing stay in this process.
    """
    output = check_output_path(output)
    summary = ScoreSummary()
    started = time.perf_counter()
    rows, texts = read_rows(input_path, text_field, strict, summary)
    summary.rows = len(rows)
    summary.seconds["read"] = time.perf_counter() - started
    started = time.perf_counter()
    scorer.start()  # Ray: connects (the actors load the model while embedding)
    summary.seconds["load_model"] = time.perf_counter() - started
    started = time.perf_counter()
    masked = [mask.with_forms(text) for text in texts] if mask else None
    scores = score_with([text for text, _ in masked] if masked else texts, scorer.project, summary,
                        [forms for _, forms in masked] if masked else None)
    summary.model_id = scorer.model_id or ""
    summary.seconds["embed_and_project"] = time.perf_counter() - started
    started = time.perf_counter()
    write_table(rows, scores, output)
    summary.seconds["write"] = time.perf_counter() - started
    return summary
