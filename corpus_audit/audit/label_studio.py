"""The review loop through Label Studio, without its SDK (tasks and exports are plain JSON).

:func:`label_studio_tasks` turns an audit's flagged sentences into Label Studio tasks, most stigmatising first,
each with the instrument's category, stigma label and dimension as a pre-annotation (``predictions``) that fills
every required control of :func:`label_config`, the labelling configuration whose choices are those of
docs/labelling.md (the dimensions by the names every output of the tool gives them).
:func:`read_review` reads what the reviewers decided from a Label Studio export (JSON, JSON-MIN, snapshot exports)
or a labelled CSV, the task the unit whatever the format, and :func:`review_outcome` turns it into documents to
remove (most reviewers of a sentence of theirs marked it stigmatising) and documents to keep (reviewers cleared
every reviewed sentence of theirs), with the flags' precision. :func:`reviewed_sentences` gives the reviewed
sentences as the stigma head's labelled data (``corpus-audit axes refit``), :func:`labelled_rows` as rows of
``templates/<lang>/stigma_labelled.csv`` (scripts/add_reviewed_labels.py).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.sax.saxutils import quoteattr

import pandas as pd

from corpus_audit.audit.flagged import DEFAULT_CATEGORIES, flagged_sentences, top_documents
from corpus_audit.audit.folder import AuditFolder
from corpus_audit.common.atomic import write_text_atomic
from corpus_audit.common.errors import UserError
from corpus_audit.common.version import __version__
from corpus_audit.scm.columns import STIGMA_COLUMN
from corpus_audit.score.documents import STIGMA_SCORE
from corpus_audit.stigma.aq27 import DIMENSION_ALIASES, DIMENSIONS, OTHER_DIMENSION, dimension_label
from corpus_audit.stigma.judgement import CATEGORIES, CATEGORY_COLUMN, JUDGEMENT, TOP_DIMENSION_COLUMN

#: The fields of docs/labelling.md, as the labelling configuration names its controls.
CATEGORY, STIGMATISING, DIMENSION, STRENGTH, NOTE = "category", "stigmatising", "dimension", "stigma_strength", "note"
#: The dimensions a reviewer chooses from: the nine AQ-27 dimensions, named as every output of the tool names them
#: (``top_dimension``, ``dim_<dimension>``, aq27.csv, the report), and ``Other`` (docs/labelling.md section 3).
REVIEW_DIMENSIONS = (*DIMENSIONS, OTHER_DIMENSION)
#: What the configuration shows under each dimension: the guideline's reading (Help is the stigma of withholding it).
DIMENSION_HINTS = {"Anger": "they make people angry, irritated, fed up",
                   "Dangerousness": "they are violent, unpredictable, a threat",
                   "Fear": "they are frightening; people are scared of them",
                   "Coercion": "they should be forced into treatment or lose rights",
                   "Segregation": "they should be kept apart: locked up, sent away, kept out",
                   "Avoidance": "they should be avoided: not hired, dated, lived near",
                   "Help": "withholding help: they do not deserve help, care, money or benefits",
                   "Pity": "they are helpless, pathetic, lesser (condescension, not compassion)",
                   "Blame": "they are responsible for their illness; they fake it, are lazy or weak-willed",
                   OTHER_DIMENSION: "none of the nine: a slur as an insult, mockery, disgust, incompetence"}
#: The stigma strengths of a stigmatising sentence (docs/labelling.md section 4); a sentence that does not
#: stigmatise has strength 0, which the reviewer does not choose.
STRENGTHS = ("1", "2", "3")
#: The stigma score at which the pre-annotation says "stigmatising: yes" (the stigma head's probability).
PREDICTED_STIGMATISING = 0.5
#: The suffix of the labelling configuration written beside the tasks file.
CONFIG_SUFFIX = ".label_config.xml"
#: The data field that holds the sentence (``$text`` in the configuration).
TEXT = "text"
#: The data field of the instrument's category: not ``category``, which JSON-MIN exports fill with the reviewer's.
PREDICTED_CATEGORY = "instrument_category"


def _choices(name: str, values: Sequence[str], multiple: bool = False, required: bool = True,
             hints: dict[str, str] | None = None) -> str:
    options = "".join(f"\n    <Choice value={quoteattr(value)}"
                      + (f" hint={quoteattr(hints[value])}" if hints and value in hints else "") + "/>"
                      for value in values)
    kind = "multiple" if multiple else "single"
    needed = ' required="true"' if required else ""
    return (f'  <Choices name="{name}" toName="{TEXT}" choice="{kind}" showInline="true"{needed}>{options}\n'
            "  </Choices>")


def label_config() -> str:
    """The Label Studio labelling configuration (XML) of docs/labelling.md: category and stigmatising (required:
    the pre-annotations fill both), then, shown when stigmatising is yes, the dimensions and the stigma strength
    (a sentence that does not stigmatise has strength 0 and no dimension), and a note."""
    return "\n".join([
        "<View>",
        '  <Header value="Label the sentence as written, on its own (docs/labelling.md)"/>',
        f'  <Text name="{TEXT}" value="${TEXT}"/>',
        '  <Text name="about" value="$about"/>',
        f'  <Header value="{CATEGORY}" size="5"/>',
        _choices(CATEGORY, CATEGORIES),
        f'  <Header value="{STIGMATISING}" size="5"/>',
        _choices(STIGMATISING, ("yes", "no")),
        f'  <View visibleWhen="choice-selected" whenTagName="{STIGMATISING}" whenChoiceValue="yes">',
        f'  <Header value="{DIMENSION} (one or more, most important first)" size="5"/>',
        _choices(DIMENSION, REVIEW_DIMENSIONS, multiple=True, required=False, hints=DIMENSION_HINTS),
        f'  <Header value="{STRENGTH} (1 mild, 2 clear, 3 blatant)" size="5"/>',
        _choices(STRENGTH, STRENGTHS, required=False),
        "  </View>",
        f'  <TextArea name="{NOTE}" toName="{TEXT}" rows="2" editable="true" maxSubmissions="1"/>',
        "</View>",
    ]) + "\n"


def _prediction(row: dict[str, Any], model_version: str) -> dict[str, Any]:
    """The instrument's answer to the required controls (category, stigmatising) and, where it calls the sentence
    stigmatising, its dimension; the strength is the reviewer's (the instrument does not grade it)."""
    stigma = _number(row.get(STIGMA_COLUMN))
    result = []

    def choice(name: str, *values: str) -> None:
        result.append({"from_name": name, "to_name": TEXT, "type": "choices", "value": {"choices": list(values)}})

    if isinstance(row.get(CATEGORY_COLUMN), str):
        choice(CATEGORY, row[CATEGORY_COLUMN])
    if stigma is not None:
        stigmatising = stigma >= PREDICTED_STIGMATISING
        choice(STIGMATISING, "yes" if stigmatising else "no")
        if stigmatising and isinstance(row.get(TOP_DIMENSION_COLUMN), str):
            choice(DIMENSION, row[TOP_DIMENSION_COLUMN])
    return {"model_version": model_version, "score": stigma, "result": result}


def _joined(value: Any) -> str:
    return "; ".join(map(str, value)) if isinstance(value, (list, tuple)) or hasattr(value, "tolist") else str(value)


def label_studio_tasks(outdir: str | Path, quadrant: str | None = None, dimension: str | None = None,
                       illness_type: str | None = None, strict: bool = False,
                       log: Callable[[str], None] | None = None,
                       categories: Sequence[str] | None = DEFAULT_CATEGORIES,
                       top: int | None = None) -> list[dict[str, Any]]:
    """The flagged sentences of the audit in ``outdir`` (:func:`~corpus_audit.audit.flagged.flagged_sentences`,
    the same choices; ``top``: those of the ``top`` most stigmatising documents only,
    :func:`~corpus_audit.audit.flagged.top_documents`) as Label Studio tasks, most stigmatising first: ``data``
    holds the sentence (``text``), its
    document (``doc_id``, the document's ``document_stigma_score``), illnesses, type, matched terms and forms and
    the instrument's category and scores (named apart from the controls, which JSON-MIN exports put beside the
    data); ``predictions`` the instrument's category, stigmatising (stigma score at least
    :data:`PREDICTED_STIGMATISING`) and dimension as a pre-annotation whose ``score`` is the stigma score."""
    folder = AuditFolder(outdir)
    flagged = top_documents(flagged_sentences(outdir, quadrant=quadrant, dimension=dimension,
                                              illness_type=illness_type, strict=strict, log=log,
                                              categories=categories), top)
    if STIGMA_COLUMN not in flagged:
        raise UserError(f"{outdir}: this audit has no stigma score (its axes have no stigma head); audit again, or "
                        "train axes again with `corpus-audit axes train`")
    sentences = pd.read_parquet(folder.existing(folder.sentences))
    extra = [column for column in ("terms", "forms", TOP_DIMENSION_COLUMN) if column in sentences]
    flagged = flagged.merge(sentences[["doc_id", "sentence_index", *extra]], on=["doc_id", "sentence_index"],
                            how="left")
    documents = folder.documents
    if documents.is_file():
        scores = pd.read_parquet(documents, columns=["doc_id", STIGMA_SCORE]).rename(
            columns={STIGMA_SCORE: "document_stigma_score"})
        flagged = flagged.merge(scores, on="doc_id", how="left")
    flagged = flagged.sort_values([STIGMA_COLUMN, "doc_id", "sentence_index"], ascending=[False, True, True],
                                  kind="stable", na_position="last").reset_index(drop=True)
    summary = folder.read_summary()
    model_version = f"corpus-audit {__version__}, {summary.model_id or 'unknown model'}"
    tasks = []
    for rank, row in enumerate(flagged.to_dict(orient="records"), start=1):
        data = {TEXT: row["sentence"], "doc_id": str(row["doc_id"]), "sentence_index": int(row["sentence_index"]),
                "rank": rank, "illnesses": _joined(row["illnesses"]), "illness_type": row["illness_type"],
                "terms": _joined(row.get("terms", "")), "forms": _joined(row.get("forms", "")),
                PREDICTED_CATEGORY: row.get(CATEGORY_COLUMN), STIGMA_COLUMN: _number(row.get(STIGMA_COLUMN)),
                "document_stigma_score": _number(row.get("document_stigma_score"))}
        data["about"] = (f"#{rank} · document {data['doc_id']} · {data['illnesses']} ({data['illness_type']}; "
                         f"{data['forms']}) · stigma score {_shown(data[STIGMA_COLUMN])}")
        tasks.append({"data": data, "predictions": [_prediction(row, model_version)]})
    return tasks


def _number(value: Any) -> float | None:
    return None if value is None or pd.isna(value) else round(float(value), 6)


def _shown(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def export_label_studio(outdir: str | Path, output: str | Path, **choices: Any) -> tuple[list[dict[str, Any]], Path]:
    """Write :func:`label_studio_tasks` to ``output`` (.json, a Label Studio import file) and the labelling
    configuration beside it (``<output stem>.label_config.xml``); return the tasks and the configuration's path."""
    output = Path(output)
    if output.suffix.lower() != ".json":
        raise UserError(f"{output}: a Label Studio import file is JSON: name it .json")
    tasks = label_studio_tasks(outdir, **choices)
    config = output.with_name(output.stem + CONFIG_SUFFIX)
    write_text_atomic(output, json.dumps(tasks, indent=1, ensure_ascii=False, allow_nan=False))
    write_text_atomic(config, label_config())
    return tasks, config


@dataclass
class ReviewedTask:
    """One task of an export: its document and sentence, and each reviewer's answers (one dict per annotation
    that was not cancelled: control name -> list of values, dimensions by their one name,
    :func:`~corpus_audit.stigma.aq27.dimension_label`)."""

    task_id: Any
    doc_id: str | None
    sentence: str | None
    data: dict[str, Any]
    answers: list[dict[str, list[str]]]

    def decision(self) -> str | None:
        """``yes`` or ``no`` when most reviewers chose it for ``stigmatising``; ``tie`` when they split evenly;
        None when no reviewer chose."""
        votes = Counter(answer[STIGMATISING][0] for answer in self.answers if answer.get(STIGMATISING))
        if not votes:
            return None
        if votes["yes"] == votes["no"]:
            return "tie"
        return "yes" if votes["yes"] > votes["no"] else "no"

    def category(self) -> str | None:
        """The category most of the reviewers who gave the task's decision chose; None when none chose one, or when
        two categories have as many of them."""
        decision = self.decision()
        votes = Counter(answer[CATEGORY][0] for answer in self.answers
                        if answer.get(CATEGORY) and answer.get(STIGMATISING, [None])[0] == decision).most_common(2)
        return votes[0][0] if votes and (len(votes) == 1 or votes[0][1] > votes[1][1]) else None

    def name(self) -> str:
        """How the console names the task: its Label Studio id, rank and document."""
        rank = self.data.get("rank")
        return (f"task {self.task_id if self.task_id is not None else '?'}"
                + (f" (#{rank}, document {self.doc_id})" if rank is not None else f" (document {self.doc_id})"))


@dataclass
class Review:
    """What a Label Studio export (or a labelled CSV) holds: its format (``json``, ``json-min`` or ``csv``), its
    tasks and the records it could not read (reason -> count, with examples)."""

    path: str
    format: str
    tasks: list[ReviewedTask]
    unreadable: Counter = field(default_factory=Counter)
    examples: list[str] = field(default_factory=list)


def _values(value: Any) -> list[str]:
    """A control's answer as a list of strings: a string (one choice, a text), a list, or ``{"choices": [...]}``."""
    if isinstance(value, dict):
        value = value.get("choices", value.get("text"))
    if isinstance(value, str):
        value = [value] if value else []
    return [str(v) for v in value] if isinstance(value, list) else []


def _answer(values: dict[str, Any]) -> dict[str, list[str]]:
    """The answer of one annotation from its controls' values; dimensions by their one name (an older spelling,
    e.g. the guideline's ``withholding_help``, read as ``Help``; an unknown one kept as written)."""
    answer = {name: found for name in (CATEGORY, STIGMATISING, DIMENSION, STRENGTH, NOTE)
              if (found := _values(values.get(name)))}
    if DIMENSION in answer:
        answer[DIMENSION] = [dimension_label(name) or name for name in answer[DIMENSION]]
    return answer


def _results(results: Any) -> dict[str, Any]:
    """JSON: an annotation's ``result`` (a list of regions) as control name -> value."""
    if not isinstance(results, list):
        return {}
    return {str(item["from_name"]): item["value"] for item in results
            if isinstance(item, dict) and isinstance(item.get("value"), dict) and item.get("from_name")}


#: Where an answer keeps who gave it (Label Studio's user id, or email where the export has it).
REVIEWER = "_reviewer"


def _with_reviewer(answer: dict[str, list[str]], reviewer: Any) -> dict[str, list[str]]:
    if isinstance(reviewer, dict):
        reviewer = reviewer.get("email") or reviewer.get("id")
    return {**answer, REVIEWER: [str(reviewer)]} if answer and reviewer not in (None, "") else answer


#: JSON-MIN: the fields Label Studio writes beside the data of each annotation, which are not data.
MIN_ANNOTATION_FIELDS = ("id", "annotator", "annotation_id", "created_at", "updated_at", "lead_time",
                         CATEGORY, STIGMATISING, DIMENSION, STRENGTH, NOTE)


def _task(task_id: Any, data: dict[str, Any], answers: list[dict[str, list[str]]]) -> ReviewedTask:
    doc_id = data.get("doc_id")
    return ReviewedTask(task_id, None if doc_id in (None, "") else str(doc_id), data.get(TEXT) or None, data,
                        [answer for answer in answers if answer])


def read_review(path: str | Path) -> Review:
    """The tasks of a Label Studio export, the task the unit whatever the format: JSON (and JSON snapshot
    exports: tasks with ``data`` and ``annotations``), JSON-MIN (one flat record per *annotation*, with the task's
    data fields, its ``id`` and the controls' values: the records of one task are gathered into it), or a labelled
    CSV (:func:`read_labelled_csv`). :class:`UserError` naming the file, line and column for a file that is not
    JSON, and for JSON that is not a list of tasks."""
    path = Path(path)
    if path.suffix.lower() == ".csv":
        return read_labelled_csv(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise UserError(f"{path}: cannot read the Label Studio export ({error})") from None
    try:
        records = json.loads(text)
    except json.JSONDecodeError as error:
        raise UserError(f"{path}:{error.lineno}:{error.colno}: not valid JSON ({error.msg}); export the project "
                        "again as JSON or JSON-MIN") from None
    if isinstance(records, dict):  # one task exported alone
        records = [records]
    if not isinstance(records, list):
        raise UserError(f"{path}: a Label Studio export is a JSON list of tasks, not a {type(records).__name__}")
    full = any(isinstance(record, dict) and ("annotations" in record or "data" in record) for record in records)
    review = Review(str(path), "json" if full else "json-min", [])
    by_id: dict[Any, ReviewedTask] = {}
    for position, record in enumerate(records):
        if not isinstance(record, dict):
            review.unreadable["not a task (a JSON object)"] += 1
            if len(review.examples) < 5:
                review.examples.append(f"task {position + 1}: a {type(record).__name__}")
            continue
        if full:
            data = record.get("data") if isinstance(record.get("data"), dict) else {}
            review.tasks.append(_task(record.get("id"), data, [
                _with_reviewer(_answer(_results(annotation.get("result"))), annotation.get("completed_by"))
                for annotation in record.get("annotations") or []
                if isinstance(annotation, dict) and not annotation.get("was_cancelled")]))
            continue
        answer = _with_reviewer(_answer(record), record.get("annotator"))
        task_id = record.get("id")
        if task_id is not None and task_id in by_id:  # another annotation of a task already read
            by_id[task_id].answers.extend([answer] if answer else [])
            continue
        task = _task(task_id, {key: value for key, value in record.items() if key not in MIN_ANNOTATION_FIELDS},
                     [answer])
        review.tasks.append(task)
        if task_id is not None:
            by_id[task_id] = task
    return review


#: A labelled CSV: the columns it must have, and those read where present (other names of a column after ``|``).
CSV_REQUIRED = (f"{TEXT}|sentence", STIGMATISING)
CSV_OPTIONAL = (CATEGORY, DIMENSION, STRENGTH, NOTE, "doc_id", "terms|matched_term", "forms|form", "id", "annotator")


def read_labelled_csv(path: str | Path) -> Review:
    """Reviewed sentences written in a CSV (by hand, or the labelled data's own format,
    ``templates/<lang>/stigma_labelled.csv``), read as the tasks of an export: one row per answer, the rows of one
    task gathered by its ``id`` where the CSV has one (each row its own task otherwise). Columns: ``text`` (or
    ``sentence``) and ``stigmatising`` (yes, no, or empty for no answer), and where present ``category``,
    ``dimension`` (names joined with ``;``), ``stigma_strength``, ``note``, ``doc_id``, ``terms`` (or
    ``matched_term``: the illness words, joined with ``;``), ``forms`` (or ``form``), ``id`` and ``annotator``.
    :class:`UserError` naming the file (and line) for a missing column or a ``stigmatising`` that is not yes or
    no."""
    path = Path(path)
    try:
        table = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (OSError, UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as error:
        raise UserError(f"{path}: cannot read the labelled CSV ({error})") from None

    def column(names: str) -> str | None:
        return next((name for name in names.split("|") if name in table.columns), None)

    missing = [names.replace("|", " or ") for names in CSV_REQUIRED if column(names) is None]
    if missing:
        raise UserError(f"{path}: a labelled CSV needs the column(s) {', '.join(missing)} (found: "
                        f"{', '.join(table.columns)})")
    found = {names.split("|")[0]: column(names) for names in (*CSV_REQUIRED, *CSV_OPTIONAL) if column(names)}
    review = Review(str(path), "csv", [])
    by_id: dict[str, ReviewedTask] = {}
    for line, row in zip(range(2, len(table) + 2), table.to_dict(orient="records")):
        values = {name: str(row[source]).strip() for name, source in found.items()}
        if values[STIGMATISING] not in ("yes", "no", ""):
            raise UserError(f"{path}, line {line}: stigmatising must be yes, no or empty, not "
                            f"{values[STIGMATISING]!r}")
        answer = _with_reviewer(_answer({name: values[name].split(";") if name == DIMENSION else values[name]
                                         for name in (CATEGORY, STIGMATISING, DIMENSION, STRENGTH, NOTE)
                                         if values.get(name)}), values.get("annotator"))
        task_id = values.get("id") or None
        if task_id is not None and task_id in by_id:
            by_id[task_id].answers.extend([answer] if answer else [])
            continue
        data = {TEXT: values[TEXT], "doc_id": values.get("doc_id", ""),
                "terms": "; ".join(term.strip() for term in values.get("terms", "").split(";") if term.strip()),
                "forms": "; ".join(form.strip() for form in values.get("forms", "").split(";") if form.strip())}
        task = _task(task_id if task_id is not None else f"line {line}", data, [answer])
        review.tasks.append(task)
        if task_id is not None:
            by_id[task_id] = task
    return review


@dataclass
class ReviewOutcome:
    """Documents the reviewers marked stigmatising (``remove``) or cleared (``keep``), and the counts the clean
    manifest and the console report: tasks without a choice and split votes (named: :meth:`ReviewedTask.name`),
    ids no document of the audit has."""

    remove: set[str]
    keep: set[str]
    tasks: int
    reviewed: int
    no_choice: list[str]
    ties: list[str]
    no_doc_id: int
    unknown_ids: list[str]
    sentences_confirmed: int
    sentences_cleared: int
    predicted_yes_reviewed: int
    predicted_yes_confirmed: int
    unreadable: dict[str, int]

    @property
    def precision(self) -> float | None:
        """Reviewed flagged documents that reviewers confirmed stigmatising, over all reviewed flagged documents."""
        decided = len(self.remove) + len(self.keep)
        return len(self.remove) / decided if decided else None

    @property
    def predicted_precision(self) -> float | None:
        """Of the reviewed sentences the instrument called stigmatising (stigma score >= 0.5), the share reviewers
        confirmed."""
        return self.predicted_yes_confirmed / self.predicted_yes_reviewed if self.predicted_yes_reviewed else None

    def to_dict(self) -> dict[str, Any]:
        return {"tasks": self.tasks, "tasks_reviewed": self.reviewed,
                "tasks_without_a_choice": len(self.no_choice), "tasks_without_a_choice_named": self.no_choice,
                "tasks_split_evenly": len(self.ties), "tasks_split_evenly_named": self.ties,
                "tasks_without_doc_id": self.no_doc_id,
                "unknown_doc_ids": len(self.unknown_ids), "unknown_doc_id_examples": self.unknown_ids[:10],
                "records_unreadable": self.unreadable,
                "sentences_confirmed": self.sentences_confirmed, "sentences_cleared": self.sentences_cleared,
                "documents_confirmed": len(self.remove), "documents_cleared": len(self.keep),
                "precision_documents": self.precision,
                "predicted_stigmatising_reviewed": self.predicted_yes_reviewed,
                "predicted_stigmatising_confirmed": self.predicted_yes_confirmed,
                "precision_predicted_stigmatising": self.predicted_precision}

    def lines(self) -> list[str]:
        """What the console says about the review."""
        lines = [f"review: {self.reviewed} of {self.tasks} task(s) reviewed; {len(self.remove)} document(s) "
                 f"confirmed stigmatising, {len(self.keep)} cleared"
                 + (f": the flags' precision {self.precision:.0%} ({len(self.remove)} of "
                    f"{len(self.remove) + len(self.keep)} reviewed flagged documents)" if self.precision is not None
                    else "")]
        if self.predicted_precision is not None:
            lines.append(f"review: of {self.predicted_yes_reviewed} reviewed sentence(s) the instrument called "
                         f"stigmatising, reviewers confirmed {self.predicted_yes_confirmed} "
                         f"({self.predicted_precision:.0%})")
        return lines

    def warnings(self) -> list[str]:
        """One line per problem, with counts: nothing of these tasks is removed."""
        found = []
        if self.no_choice:
            found.append(f"{len(self.no_choice)} task(s) have no choice for {STIGMATISING!r} (not reviewed, skipped "
                         f"or cancelled): {_listed(self.no_choice)}; their documents are kept")
        if self.ties:
            found.append(f"{len(self.ties)} task(s) have as many 'yes' as 'no' answers: {_listed(self.ties)}; their "
                         "documents are kept unless another sentence of theirs is confirmed")
        if self.no_doc_id:
            found.append(f"{self.no_doc_id} task(s) have no doc_id in their data: not tasks of `export-flagged "
                         "--format label-studio`?")
        if self.unknown_ids:
            found.append(f"{len(self.unknown_ids)} reviewed doc_id(s) are not documents of this audit, e.g. "
                         f"{self.unknown_ids[0]!r}: an export of another project or audit?")
        for reason, count in self.unreadable.items():
            found.append(f"{count} record(s) of the export unreadable: {reason}")
        return found


#: How many tasks a console line names before it says how many more there are (the manifest names them all).
NAMED = 10


def _listed(names: Sequence[str]) -> str:
    return ", ".join(names[:NAMED]) + (f" and {len(names) - NAMED} more" if len(names) > NAMED else "")


def review_outcome(review: Review, known_ids: set[str]) -> ReviewOutcome:
    """The documents ``review`` decides, among ``known_ids`` (the audit's documents): removed when a reviewed
    sentence of theirs is confirmed stigmatising (one suffices, as one sentence decides a document's score), kept
    when reviewers cleared every reviewed sentence of theirs. :class:`UserError` when the export has tasks but none
    names a document of the audit (another project's export), or none was reviewed."""
    by_document: dict[str, list[str]] = {}
    no_doc_id = confirmed = cleared = predicted_reviewed = predicted_confirmed = 0
    unknown: list[str] = []
    no_choice: list[str] = []
    ties: list[str] = []
    for task in review.tasks:
        decision = task.decision()
        if task.doc_id is None:
            no_doc_id += 1
            continue
        if task.doc_id not in known_ids:
            if task.doc_id not in unknown:
                unknown.append(task.doc_id)
            continue
        if decision is None:
            no_choice.append(task.name())
            continue
        if decision == "tie":
            ties.append(task.name())
        confirmed += decision == "yes"
        cleared += decision == "no"
        stigma = task.data.get(STIGMA_COLUMN)
        if decision != "tie" and isinstance(stigma, (int, float)) and stigma >= PREDICTED_STIGMATISING:
            predicted_reviewed += 1
            predicted_confirmed += decision == "yes"
        by_document.setdefault(task.doc_id, []).append(decision)
    known_tasks = len(review.tasks) - no_doc_id - sum(1 for task in review.tasks if task.doc_id in unknown)
    if review.tasks and not known_tasks:
        raise UserError(f"{review.path}: none of its {len(review.tasks)} task(s) names a document of this audit "
                        f"({no_doc_id} without a doc_id, {len(unknown)} unknown id(s), e.g. "
                        f"{(unknown or ['-'])[0]!r}): is it the export of another project?")
    if not by_document:
        raise UserError(f"{review.path}: no task has a reviewer's choice for {STIGMATISING!r} ({len(review.tasks)} "
                        "task(s)); label some tasks in Label Studio and export again")
    remove = {doc for doc, decisions in by_document.items() if "yes" in decisions}
    keep = {doc for doc, decisions in by_document.items() if set(decisions) == {"no"}}
    return ReviewOutcome(remove, keep, len(review.tasks), sum(len(d) for d in by_document.values()), no_choice, ties,
                         no_doc_id, unknown, confirmed, cleared, predicted_reviewed, predicted_confirmed,
                         dict(review.unreadable))


#: The labelled data (``templates/<lang>/stigma_labelled.csv``) spells the dimensions as docs/labelling.md does.
LABELLED_DIMENSION = {name: next((alias for alias, known in DIMENSION_ALIASES.items() if known == name), name.lower())
                      for name in REVIEW_DIMENSIONS}
#: The columns of ``templates/<lang>/stigma_labelled.csv``, in order.
LABELLED_COLUMNS = ("uid", "source", "corpus", "doc_id", "licence", "group", "sentence", "matched_term", "form",
                    "illness_type", "split", CATEGORY, STIGMATISING, DIMENSION, STRENGTH, NOTE, "labellers",
                    "double_labelled", "label_1", "label_2", "chunk")


def _label_problem(answer: dict[str, list[str]]) -> str | None:
    """What keeps a reviewer's answer out of the labelled data (docs/labelling.md's rules), or None."""
    category, stigmatising = answer.get(CATEGORY, [""])[0], answer.get(STIGMATISING, [""])[0]
    strength, dimensions = answer.get(STRENGTH, [""])[0], answer.get(DIMENSION, [])
    if category not in CATEGORIES or stigmatising not in ("yes", "no"):
        return "no category or no stigmatising choice"
    if stigmatising == "yes" and (strength not in ("1", "2", "3") or not dimensions):
        return "stigmatising = yes without a dimension or a strength 1-3"
    if stigmatising == "no" and strength not in ("", "0"):
        return "stigmatising = no with a strength above 0"
    if set(dimensions) - set(REVIEW_DIMENSIONS):
        return "a dimension the guideline does not have"
    return None


def labelled_rows(review: Review, lang: str, corpus: str, licence: str,
                  labelled: pd.DataFrame) -> tuple[pd.DataFrame, Counter]:
    """The reviewed sentences of ``review`` as new rows of the labelled data ``labelled`` (the table of
    ``templates/<lang>/stigma_labelled.csv``), with their source recorded: ``corpus`` and ``licence`` (the
    corpus's, which must allow it), the reviewer (``labellers``) and the export (``chunk``). A sentence of a
    document the labelled data already has takes that document's split (no document straddles train and held-out
    data); the others go to train. Sentences already labelled, tasks answered by several reviewers who disagree,
    and answers the guideline does not allow are left out and counted (the second value)."""
    skipped: Counter = Counter()
    split_of = dict(zip(labelled["doc_id"].astype(str), labelled["split"])) if len(labelled) else {}
    known = set(labelled["sentence"]) if len(labelled) else set()
    prefix = f"{lang}-r"
    numbers = [int(uid[len(prefix):]) for uid in labelled.get("uid", pd.Series(dtype=str)).astype(str)
               if uid.startswith(prefix) and uid[len(prefix):].isdigit()]
    rows = []
    for task in review.tasks:
        answers = [answer for answer in task.answers if answer.get(STIGMATISING)]
        if not answers or not task.sentence or task.doc_id is None:
            skipped["no reviewer's answer"] += 1
            continue
        if len({(a.get(CATEGORY, [""])[0], a[STIGMATISING][0]) for a in answers}) > 1:
            skipped["reviewers disagree (adjudicate in Label Studio first)"] += 1
            continue
        answer = answers[-1]
        if (problem := _label_problem(answer)) is not None:
            skipped[problem] += 1
            continue
        if task.sentence in known:
            skipped["sentence already labelled"] += 1
            continue
        known.add(task.sentence)
        stigmatising = answer[STIGMATISING][0]
        forms = str(task.data.get("forms") or "").split("; ")
        rows.append({"uid": f"{prefix}{max(numbers, default=0) + len(rows) + 1:05d}", "source": "real",
                     "corpus": corpus, "doc_id": task.doc_id, "licence": licence, "group": "",
                     "sentence": task.sentence, "matched_term": str(task.data.get("terms") or "").replace("; ", ";"),
                     "form": forms[0] or "diagnosis", "illness_type": task.data.get("illness_type") or "",
                     "split": split_of.get(task.doc_id, "train"), CATEGORY: answer[CATEGORY][0],
                     STIGMATISING: stigmatising,
                     DIMENSION: ";".join(LABELLED_DIMENSION[name] for name in answer.get(DIMENSION, []))
                     if stigmatising == "yes" else "",
                     STRENGTH: answer.get(STRENGTH, ["0"])[0] if stigmatising == "yes" else "0",
                     NOTE: "; ".join(filter(None, ["reviewed in Label Studio", *answer.get(NOTE, [])])),
                     "labellers": f"label-studio:{answer.get(REVIEWER, ['?'])[0]}", "double_labelled": "no",
                     "label_1": "", "label_2": "",
                     "chunk": f"label-studio:{Path(review.path).name}"})
    return pd.DataFrame(rows, columns=list(LABELLED_COLUMNS)), skipped


#: The columns of :func:`reviewed_sentences`: those the stigma head's labelled data has (``matched_term`` and
#: ``form`` as ``scm/stigma.py`` reads them), and where each sentence comes from.
REVIEWED_COLUMNS = ("sentence", "matched_term", "form", "illness_type", "doc_id", CATEGORY, STIGMATISING,
                    "reviewers", "export", "task")


def reviewed_sentences(reviews: Sequence[Review]) -> tuple[pd.DataFrame, Counter]:
    """The sentences ``reviews`` decide, one row per task (:data:`REVIEWED_COLUMNS`): ``stigmatising`` the
    reviewers' majority (:meth:`ReviewedTask.decision`), ``category`` the majority of those who gave it
    (:meth:`ReviewedTask.category`; ``judgement`` for a stigmatising sentence whose reviewers chose none, as the
    guideline has it). A task without a document id is a document of its own. Left out and counted (the second
    value): tasks without an answer or a sentence, evenly split votes, sentences not stigmatising without a
    category, categories the guideline does not have, and a sentence decided by an earlier task or file (the
    first one counts)."""
    skipped: Counter = Counter()
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    for review in reviews:
        name = Path(review.path).name
        for task in review.tasks:
            decision, category = task.decision(), task.category()
            if decision is None or not task.sentence:
                skipped["no reviewer's answer (or no sentence)"] += 1
                continue
            if decision == "tie":
                skipped["reviewers split evenly"] += 1
                continue
            if category is None and decision == "no":
                skipped["not stigmatising, without a category (or reviewers split on it)"] += 1
                continue
            if category is not None and category not in CATEGORIES:
                skipped[f"a category the guideline does not have ({category!r})"] += 1
                continue
            if task.sentence in seen:
                skipped["the same sentence decided by an earlier task or file"] += 1
                continue
            seen.add(task.sentence)
            forms = str(task.data.get("forms") or "").split("; ")
            rows.append({"sentence": task.sentence, "matched_term": str(task.data.get("terms") or "").replace("; ", ";"),
                         "form": forms[0], "illness_type": str(task.data.get("illness_type") or ""),
                         "doc_id": task.doc_id or f"{name}:{task.task_id}",
                         CATEGORY: category or JUDGEMENT, STIGMATISING: decision,
                         "reviewers": len([answer for answer in task.answers if answer.get(STIGMATISING)]),
                         "export": name, "task": str(task.task_id)})
    return pd.DataFrame(rows, columns=list(REVIEWED_COLUMNS)), skipped
