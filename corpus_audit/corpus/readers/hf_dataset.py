"""Hugging Face ``datasets`` in streaming mode: a hub name, a local folder, or a builder with data files."""

from __future__ import annotations

from collections.abc import Iterator

from corpus_audit.corpus.documents import CorpusError, Document, ReaderOptions, ReadStats
from corpus_audit.corpus.readers.records import RecordConverter


def read_hf_dataset(
    name: str,
    options: ReaderOptions,
    stats: ReadStats,
    config: str | None = None,
    split: str = "train",
    data_files: list[str] | None = None,
) -> Iterator[Document]:
    """Documents of a Hugging Face dataset in streaming mode (a hub name, a local folder or a builder
    such as ``json``/``csv``/``parquet`` with ``data_files``)."""
    try:
        import datasets
    except ImportError as exc:  # pragma: no cover - datasets is a dependency
        raise CorpusError("the 'datasets' package is needed for --hf-dataset") from exc
    try:
        dataset = datasets.load_dataset(name, config, split=split, streaming=True, data_files=data_files or None)
    except Exception as exc:  # datasets raises many types (FileNotFoundError, DatasetNotFoundError, ValueError...)
        raise CorpusError(f"cannot open Hugging Face dataset {name!r}: {exc}") from exc
    source = f"hf:{name}" + (f"/{config}" if config else "") + f"[{split}]"
    stats.files += 1
    convert = RecordConverter(options, stats)
    for index, record in enumerate(dataset):
        text = record.get(options.text_field) if isinstance(record, dict) else None
        if isinstance(text, str):
            stats.bytes_read += len(text.encode("utf-8"))
        doc = convert(record, source, index + 1, f"{name}:{index}")
        if doc is not None:
            stats.count(doc)
            yield doc
