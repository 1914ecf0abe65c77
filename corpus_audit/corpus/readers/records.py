"""Records (mappings) to documents, and the JSON parsing that the JSON Lines and JSON readers share."""

from __future__ import annotations

import json
from typing import Any

from corpus_audit.corpus.documents import Document, ReaderOptions, ReadStats, scrub_surrogates

try:  # parses JSON Lines about three times faster than json; json decides whenever the two might differ
    import orjson
except ImportError:  # pragma: no cover - a dependency; json alone gives the same documents, slower
    orjson = None

MAX_EXAMPLES = 20  # bad records quoted in the summary, per run
# Deeper JSON records are bad records: json's parser raises RecursionError near 1,000 levels (fewer inside a
# deep call stack), so a fixed, lower limit makes every reading path (orjson or json, one process or workers)
# accept the same records. Real corpora nest a few levels.
MAX_JSON_DEPTH = 256


class RecordConverter:
    """Turns a mapping record into a Document (shared by JSON, CSV, Parquet and HF readers)."""

    def __init__(self, options: ReaderOptions, stats: ReadStats) -> None:
        self.options = options
        self.stats = stats

    def __call__(self, record: Any, source: str, line: int | None, fallback_id: str) -> Document | None:
        opts = self.options
        if not isinstance(record, dict):
            self.stats.skip("record is not an object", source, line, opts.strict)
            return None
        text = record.get(opts.text_field)
        if text is None:
            self.stats.skip_without_text(record, opts.text_field, source, line, opts.strict)
            return None
        if not isinstance(text, str):
            self.stats.skip(f"text field {opts.text_field!r} is not a string", source, line, opts.strict)
            return None
        raw_id = record.get(opts.id_field)
        doc_id = scrub_surrogates(str(raw_id)) if raw_id is not None and raw_id != "" else fallback_id
        meta = dict(record) if opts.whole_record else \
            {key: value for key, value in record.items() if key != opts.text_field}
        return Document(doc_id, scrub_surrogates(text), meta, source, line)


UNDECIDED = object()


def loads_fast(raw: bytes) -> Any:
    """``json.loads(raw.decode("utf-8"))`` parsed by orjson, or ``UNDECIDED`` where the two might differ.

    orjson accepts a subset of what json accepts (strict RFC 8259 JSON in valid UTF-8: no NaN or Infinity,
    no lone surrogate escapes, no BOM) and then returns the same strings, integers, booleans, nulls, lists
    and dicts (duplicate keys too: the last value, at the first key's place). The one silent difference is
    an integer beyond 64 bits, which orjson turns into a float: a record holding any float is left to json.
    Anything orjson rejects is left to json as well, which reports the error (or parses it) as it always did.
    """
    try:
        record = orjson.loads(raw)
    except Exception:  # orjson.JSONDecodeError, or anything else: json decides
        return UNDECIDED
    return UNDECIDED if _holds_float(record) else record


def _holds_float(value: Any) -> bool:
    """Whether ``value`` is or contains (at any depth) a float."""
    stack = [value]
    while stack:
        value = stack.pop()
        kind = type(value)
        if kind is float:
            return True
        if kind is dict:
            value = value.values()
        elif kind is not list:
            continue
        for item in value:
            kind = type(item)
            if kind is float:
                return True
            if kind is dict or kind is list:
                stack.append(item)
    return False


TOO_DEEP = f"JSON nested deeper than {MAX_JSON_DEPTH} levels"


def json_error(exc: ValueError) -> str:
    """The skip reason for a json parse error: JSONDecodeError, or the ValueError of an integer longer than
    Python's int/str conversion limit (4,300 digits), whose message would make a reason per digit count."""
    return f"malformed JSON ({exc.msg})" if isinstance(exc, json.JSONDecodeError) else "malformed JSON (number too long)"


def too_deep(record: Any, brackets: int) -> bool:
    """Whether ``record``, whose JSON text holds ``brackets`` opening brackets, nests deeper than
    MAX_JSON_DEPTH (walked only when there are enough brackets for that)."""
    if brackets <= MAX_JSON_DEPTH:
        return False
    stack = [(record, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            value = value.values()
        elif not isinstance(value, list):
            continue
        if depth > MAX_JSON_DEPTH:
            return True
        stack.extend((item, depth + 1) for item in value)
    return False
