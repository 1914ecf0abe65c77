"""``corpus-audit clean``: the documents an audit ranks (or a list of ids) removed from the corpus it read, with a
manifest of what was removed and why."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from corpus_audit.audit.documents import STIGMA_SCORE, ranked_documents, read_documents
from corpus_audit.audit.folder import AuditFolder
from corpus_audit.audit.label_studio import ReviewOutcome, read_review, review_outcome
from corpus_audit.common.atomic import write_text_atomic
from corpus_audit.common.errors import UserError
from corpus_audit.corpus.clean import CleanResult, clean_corpus, read_id_file
from corpus_audit.corpus.documents import CorpusError, ReaderOptions
from corpus_audit.corpus.readers import STDIN, expand_paths

MANIFEST = "clean-manifest.json"


@dataclass(frozen=True)
class Removal:
    """Which documents to remove: the ``top`` ranked ones, those scoring at least ``min_score`` (both as
    :func:`~corpus_audit.audit.documents.ranked_documents` chooses them, optionally by ``dimension``), or the
    ids listed in ``ids_file``."""

    top: int | None = None
    min_score: float | None = None
    ids_file: str | None = None
    dimension: str | None = None
    #: a Label Studio export of the reviewed tasks of ``export-flagged --format label-studio``: the documents
    #: reviewers marked stigmatising are removed, those they cleared kept (whatever the other rule says)
    reviewed: str | None = None

    def __post_init__(self) -> None:
        given = [name for name in ("top", "min_score", "ids_file") if getattr(self, name) is not None]
        if len(given) > 1 or (not given and self.reviewed is None):
            raise UserError("choose the documents to remove with exactly one of --top, --min-score or --ids (with or "
                            "without --reviewed, a Label Studio export), or --reviewed alone")

    @property
    def has_rule(self) -> bool:
        return any(value is not None for value in (self.top, self.min_score, self.ids_file))

    def describe(self) -> str:
        by = f" by {self.dimension}" if self.dimension else ""
        rule = ""
        if self.top is not None:
            rule = f"among the {self.top} highest-ranked documents{by}"
        elif self.min_score is not None:
            rule = f"score{by} at least {self.min_score}"
        elif self.ids_file is not None:
            rule = f"listed in {self.ids_file}"
        if self.reviewed is None:
            return rule
        review = f"marked stigmatising by reviewers in {self.reviewed}"
        return f"{rule}, except those reviewers cleared, or {review}" if self.has_rule else review


def _reading_options(folder: AuditFolder) -> ReaderOptions:
    """The reading options the audit used (so that its document ids are found again)."""
    recorded = folder.read_summary().corpus.get("reading") or {}
    known = ReaderOptions.__dataclass_fields__
    return ReaderOptions(**{name: value for name, value in recorded.items() if name in known and name != "strict"})


def _check_audited(corpus: Sequence[str], folder: AuditFolder) -> None:
    """:class:`UserError` when a file of ``corpus`` is not one the audit read: clean removes the audit's documents
    from the corpus it read, and another corpus shares none of its document ids (or, worse, some by chance). A file
    is the audit's when its path is, or its name and size are those of one (a copied or moved corpus). Unchecked
    where the audit's inputs are gone (moved): ``clean`` then warns of chosen ids found in no input file."""
    recorded = folder.read_summary().corpus.get("inputs") or []
    if not recorded or STDIN in recorded:  # nothing to check against
        return
    try:
        audited = [Path(path) for path in expand_paths(recorded)]
    except CorpusError:  # moved or deleted since the audit
        return
    known = {path.resolve() for path in audited} | {(path.name, path.stat().st_size) for path in audited}
    for path in (Path(name) for name in expand_paths(corpus) if name != STDIN):
        if path.resolve() not in known and (path.name, path.stat().st_size) not in known:
            raise UserError(f"{path} is not a file the audit in {folder.path} read ({', '.join(map(str, recorded))}): "
                            "clean removes an audit's documents from the corpus it read; give that corpus, or audit "
                            "this one first")


def chosen_documents(audit: str | Path, removal: Removal) -> tuple[pd.DataFrame, ReviewOutcome | None]:
    """The documents ``removal`` names: rows of the audit's documents table (ids only for an ``--ids`` file, with
    their scores where the audit has them), each with the ``reason`` it is removed (``rule`` or ``reviewer``);
    and the review's outcome where ``removal`` has a Label Studio export."""
    table = read_documents(audit)
    if removal.ids_file is not None:
        ids = read_id_file(removal.ids_file)
        listed = table[table["doc_id"].isin(ids)]
        chosen = pd.concat([listed, pd.DataFrame({"doc_id": sorted(ids - set(listed["doc_id"]))})],
                           ignore_index=True)
    elif removal.has_rule:
        chosen = ranked_documents(table, top=removal.top, min_score=removal.min_score, dimension=removal.dimension)
    else:
        chosen = table.iloc[:0]
    chosen = chosen.assign(reason="rule")
    if removal.reviewed is None:
        return chosen, None
    outcome = review_outcome(read_review(removal.reviewed), set(table["doc_id"].astype(str)))
    chosen = chosen[~chosen["doc_id"].astype(str).isin(outcome.keep)]
    confirmed = table[table["doc_id"].astype(str).isin(outcome.remove - set(chosen["doc_id"].astype(str)))]
    return pd.concat([chosen, confirmed.assign(reason="reviewer")], ignore_index=True), outcome


def clean_from_audit(corpus: Sequence[str], audit: str | Path, removal: Removal, outdir: str | Path,
                     log: Callable[[str], None] = print) -> tuple[CleanResult, Path]:
    """Rewrite ``corpus`` into ``outdir`` without the documents ``removal`` chooses from the audit in ``audit``;
    write ``outdir/clean-manifest.json`` (the rule, each file's counts, each removed document with its rank, score
    and most stigmatising sentence) and return (result, manifest path)."""
    folder = AuditFolder(audit)
    options = _reading_options(folder)
    _check_audited(corpus, folder)
    chosen, review = chosen_documents(audit, removal)
    if review is not None:
        for line in review.lines():
            log(line)
        for warning in review.warnings():
            log(f"warning: {warning}")
    result = clean_corpus(corpus, options, set(chosen["doc_id"]), outdir, log)
    columns = [name for name in ("doc_id", "reason", "rank", STIGMA_SCORE, "top_sentence", "top_category",
                                 "top_dimension", "n_judgements", "illnesses") if name in chosen]
    removed = json.loads(chosen[columns].to_json(orient="records", force_ascii=False))
    manifest: dict[str, Any] = {
        "audit": str(Path(audit).resolve()), "rule": removal.describe(), "removal": asdict(removal),
        "reading": result.reading, "documents_read": result.documents_read,
        "records_removed": result.records_removed,
        "files": [asdict(file) for file in result.files],
        "ids_not_found": result.ids_not_found,
        "removed": removed,
    }
    if review is not None:
        manifest["review"] = {"export": str(Path(removal.reviewed).resolve()), **review.to_dict(),
                              "documents_kept_by_review": sorted(review.keep)}
    path = Path(outdir) / MANIFEST
    write_text_atomic(path, json.dumps(manifest, indent=2, ensure_ascii=False))
    return result, path
