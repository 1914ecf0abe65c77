"""Write the kept sentences of a filter run: one Parquet file, in row batches, and its summary JSON beside it.
Both are written atomically."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from tqdm import tqdm

from corpus_audit.common.atomic import atomic_path, write_text_atomic
from corpus_audit.corpus.documents import ReadStats
from corpus_audit.corpus.kept import FilterSummary, KeptSentence, check_documents_found, corpus_warnings

BATCH_ROWS = 5_000


def output_schema(keep_fields: Iterable[str]) -> pa.Schema:
    """Parquet schema of the filter output."""
    return pa.schema(
        [
            ("doc_id", pa.string()),
            ("sentence_index", pa.int32()),
            ("sentence", pa.string()),
            ("terms", pa.list_(pa.string())),
            ("term_offsets", pa.list_(pa.list_(pa.int32()))),
            ("illnesses", pa.list_(pa.string())),
            ("illness_type", pa.string()),
            ("forms", pa.list_(pa.string())),
            *[(name, pa.string()) for name in keep_fields],
        ]
    )


def summary_path_for(output: str | Path) -> Path:
    """``out.parquet`` -> ``out.summary.json``."""
    output = Path(output)
    return output.with_name(output.stem + ".summary.json")


def write_parquet(rows: Iterable[KeptSentence], output: str | Path, keep_fields: Iterable[str]) -> int:
    """Write rows in batches of ``BATCH_ROWS`` to ``output`` atomically; return the number of rows."""
    schema = output_schema(keep_fields)
    count = 0
    with atomic_path(output) as tmp, pq.ParquetWriter(tmp, schema, compression="zstd") as writer:
        batch: list[dict[str, Any]] = []
        for row in rows:
            batch.append(row.to_row())
            if len(batch) >= BATCH_ROWS:
                writer.write_table(pa.Table.from_pylist(batch, schema=schema))
                count += len(batch)
                batch.clear()
        if batch:
            writer.write_table(pa.Table.from_pylist(batch, schema=schema))
            count += len(batch)
    return count


def write_merged_rows(rows: Iterable[KeptSentence], summary: FilterSummary, output: str | Path,
                      keep_fields: list[str], progress: bool, start: float) -> FilterSummary:
    """Write ``rows`` merged from workers (which count the documents read into ``summary.reading`` as they
    are merged) to ``output`` and the summary beside it; ``start`` is when the run began."""
    write_parquet(_rows_with_progress(rows, summary.reading, progress), output, keep_fields)
    return finish(summary, output, start)


def _rows_with_progress(rows: Iterable[KeptSentence], stats: ReadStats, enabled: bool) -> Iterator[KeptSentence]:
    """Pass rows through while a tqdm bar follows the input read: with the files' size on disk known, the share read
    and the time left; from a pipe, the documents read."""
    sized = bool(stats.disk_total)
    bar = tqdm(total=stats.disk_total, unit="B", unit_scale=True, desc="reading", disable=not enabled,
               mininterval=0.5) if sized else tqdm(unit=" docs", disable=not enabled, mininterval=0.5)

    def done() -> int:
        return stats.disk_read if sized else stats.documents

    with bar:
        for row in rows:
            bar.update(done() - bar.n)
            if enabled and sized:
                bar.set_postfix_str(f"{stats.documents:,} docs", refresh=False)
            yield row
        bar.update(done() - bar.n)


def finish(summary: FilterSummary, output: str | Path, start: float) -> FilterSummary:
    """Add the corpus warnings to ``summary`` and write it beside ``output``; raise :class:`NoDocumentsError` if the
    run saw no document (the summary is written first, to be read)."""
    summary.seconds = time.perf_counter() - start
    summary.extra.setdefault("output", str(output))
    summary.warnings = corpus_warnings(summary)
    write_text_atomic(summary_path_for(output), json.dumps(summary.to_dict(), indent=2, ensure_ascii=False) + "\n")
    check_documents_found(summary)
    return summary
