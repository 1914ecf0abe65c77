"""The review loop through Label Studio, without its SDK (tasks and exports are plain JSON).

:func:`export_tasks` turns an audit's flagged sentences into Label Studio tasks, most stigmatising first, each with
the instrument's category, stigma label and dimension as a pre-annotation (``predictions``), and
:func:`label_config` is the labelling configuration whose choices are those of docs/labelling.md.
:func:`read_review` reads what the reviewers decided from a Label Studio export (JSON or JSON-MIN), and
:func:`review_outcome` turns it into documents to remove (a reviewer marked a sentence of theirs stigmatising) and
documents to keep (reviewers cleared every reviewed sentence of theirs), with the flags' precision.
:func:`labelled_rows` gives the reviewed sentences as rows of ``templates/<lang>/stigma_labelled.csv``.
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

from corpus_audit.audit.flagged import DEFAULT_CATEGORIES, flagged_sentences
from corpus_audit.audit.folder import AuditFolder
from corpus_audit.common.atomic import write_text_atomic
from corpus_audit.common.errors import UserError
from corpus_audit.common.version import __version__
from corpus_audit.scm.columns import STIGMA_COLUMN
from corpus_audit.score.documents import STIGMA_SCORE
from corpus_audit.stigma.aq27 import DIMENSIONS
from corpus_audit.stigma.judgement import CATEGORIES, CATEGORY_COLUMN, TOP_DIMENSION_COLUMN

#: The fields of docs/labelling.md, as the labelling configuration names its controls.
CATEGORY, STIGMATISING, DIMENSION, STRENGTH, NOTE = "category", "stigmatising", "dimension", "stigma_strength", "note"
#: The guideline's dimensions (section 3): the nine AQ-27 attitudes (Help as "withholding_help") and ``other``.
GUIDELINE_DIMENSIONS = ("anger", "dangerousness", "fear", "blame", "segregation", "coercion", "avoidance",
                        "withholding_help", "pity", "other")
#: The guideline's name of each AQ-27 dimension of the instrument.
GUIDELINE_DIMENSION_OF = {dimension: "withholding_help" if dimension == "Help" else dimension.lower()
                          for dimension in DIMENSIONS}
STRENGTHS = ("0", "1", "2", "3")
#: The stigma score at which the pre-annotation says "stigmatising: yes" (the stigma head's probability).
PREDICTED_STIGMATISING = 0.5
#: The suffix of the labelling configuration written beside the tasks file.
CONFIG_SUFFIX = ".label_config.xml"
#: The data field that holds the sentence (``$text`` in the configuration).
TEXT = "text"
#: The data field of the instrument's category: not ``category``, which JSON-MIN exports fill with the reviewer's.
PREDICTED_CATEGORY = "instrument_category"


def _choices(name: str, values: Sequence[str], multiple: bool = False, required: bool = True) -> str:
    options = "".join(f"\n    <Choice value={quoteattr(value)}/>" for value in values)
    kind = "multiple" if multiple else "single"
    needed = ' required="true"' if required else ""
    return (f'  <Choices name="{name}" toName="{TEXT}" choice="{kind}" showInline="true"{needed}>{options}\n'
            "  </Choices>")


def label_config() -> str:
    """The Label Studio labelling configuration (XML) of docs/labelling.md: category, stigmatising, dimension
    (shown when stigmatising is yes), stigma strength and a note."""
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
        _choices(DIMENSION, GUIDELINE_DIMENSIONS, multiple=True, required=False),
        "  </View>",
        f'  <Header value="{STRENGTH} (0 when not stigmatising)" size="5"/>',
        _choices(STRENGTH, STRENGTHS),
        f'  <TextArea name="{NOTE}" toName="{TEXT}" rows="2" editable="true" maxSubmissions="1"/>',
        "</View>",
    ]) + "\n"


def _prediction(row: dict[str, Any], model_version: str) -> dict[str, Any]:
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
            choice(DIMENSION, GUIDELINE_DIMENSION_OF[row[TOP_DIMENSION_COLUMN]])
    return {"model_version": model_version, "score": stigma, "result": result}


def _joined(value: Any) -> str:
    return "; ".join(map(str, value)) if isinstance(value, (list, tuple)) or hasattr(value, "tolist") else str(value)


def label_studio_tasks(outdir: str | Path, quadrant: str | None = None, dimension: str | None = None,
                       illness_type: str | None = None, strict: bool = False,
                       log: Callable[[str], None] | None = None,
                       categories: Sequence[str] | None = DEFAULT_CATEGORIES) -> list[dict[str, Any]]:
    """The flagged sentences of the audit in ``outdir`` (:func:`~corpus_audit.audit.flagged.flagged_sentences`,
    the same choices) as Label Studio tasks, most stigmatising first: ``data`` holds the sentence (``text``), its
    document (``doc_id``, the document's ``document_stigma_score``), illnesses, type, matched terms and forms and
    the instrument's category and scores (named apart from the controls, which JSON-MIN exports put beside the
    data); ``predictions`` the instrument's category, stigmatising (stigma score at least
    :data:`PREDICTED_STIGMATISING`) and dimension as a pre-annotation whose ``score`` is the stigma score."""
    folder = AuditFolder(outdir)
    flagged = flagged_sentences(outdir, quadrant=quadrant, dimension=dimension, illness_type=illness_type,
                                strict=strict, log=log, categories=categories)
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
    that was not cancelled: control name -> list of values)."""

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


@dataclass
class Review:
    """What a Label Studio export holds: its format (``json`` or ``json-min``), its tasks and the records it could
    not read (reason -> count, with examples)."""

    path: str
    format: str
    tasks: list[ReviewedTask]
    unreadable: Counter = field(default_factory=Counter)
    examples: list[str] = field(default_factory=list)


def _answer_of_results(results: Any) -> dict[str, list[str]]:
    answer: dict[str, list[str]] = {}
    for item in results if isinstance(results, list) else ():
        if not isinstance(item, dict) or not isinstance(item.get("value"), dict):
            continue
        value = item["value"]
        values = value.get("choices", value.get("text"))
        if isinstance(values, str):
            values = [values]
        if isinstance(values, list) and item.get("from_name"):
            answer[str(item["from_name"])] = [str(v) for v in values]
    return answer


def _answer_of_min(record: dict[str, Any]) -> dict[str, list[str]]:
    """JSON-MIN: each control's value at the top level, a string (one choice, a text) or ``{"choices": [...]}``."""
    answer = {}
    for name in (CATEGORY, STIGMATISING, DIMENSION, STRENGTH, NOTE):
        value = record.get(name)
        if isinstance(value, dict):
            value = value.get("choices", value.get("text"))
        if isinstance(value, str):
            value = [value]
        if isinstance(value, list) and value:
            answer[name] = [str(v) for v in value]
    return answer


#: Where an answer keeps who gave it (Label Studio's user id, or email where the export has it).
REVIEWER = "_reviewer"


def _with_reviewer(answer: dict[str, list[str]], reviewer: Any) -> dict[str, list[str]]:
    if isinstance(reviewer, dict):
        reviewer = reviewer.get("email") or reviewer.get("id")
    return {**answer, REVIEWER: [str(reviewer)]} if answer and reviewer is not None else answer


def read_review(path: str | Path) -> Review:
    """The tasks of a Label Studio export (JSON: tasks with ``data`` and ``annotations``; JSON-MIN: one flat record
    per task with its data fields and the controls' values). :class:`UserError` naming the file, line and column
    for a file that is not JSON, and for JSON that is not a list of tasks."""
    path = Path(path)
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
    for position, record in enumerate(records):
        if not isinstance(record, dict):
            review.unreadable["not a task (a JSON object)"] += 1
            if len(review.examples) < 5:
                review.examples.append(f"task {position + 1}: a {type(record).__name__}")
            continue
        if full:
            data = record.get("data") if isinstance(record.get("data"), dict) else {}
            answers = [_with_reviewer(_answer_of_results(annotation.get("result")), annotation.get("completed_by"))
                       for annotation in record.get("annotations") or []
                       if isinstance(annotation, dict) and not annotation.get("was_cancelled")]
        else:
            data = record
            answers = [_with_reviewer(_answer_of_min(record), record.get("annotator"))]
        doc_id = data.get("doc_id")
        review.tasks.append(ReviewedTask(record.get("id"), None if doc_id is None else str(doc_id),
                                         data.get(TEXT), data, [answer for answer in answers if answer]))
    return review


@dataclass
class ReviewOutcome:
    """Documents the reviewers marked stigmatising (``remove``) or cleared (``keep``), and the counts the clean
    manifest and the console report: tasks without a choice, split votes, ids no document of the audit has."""

    remove: set[str]
    keep: set[str]
    tasks: int
    reviewed: int
    no_choice: int
    ties: int
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
        return {"tasks": self.tasks, "tasks_reviewed": self.reviewed, "tasks_without_a_choice": self.no_choice,
                "tasks_split_evenly": self.ties, "tasks_without_doc_id": self.no_doc_id,
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
            found.append(f"{self.no_choice} task(s) have no choice for {STIGMATISING!r} (not reviewed, skipped or "
                         "cancelled): their documents are kept")
        if self.ties:
            found.append(f"{self.ties} task(s) have as many 'yes' as 'no' answers: their documents are kept unless "
                         "another sentence of theirs is confirmed")
        if self.no_doc_id:
            found.append(f"{self.no_doc_id} task(s) have no doc_id in their data: not tasks of `export-flagged "
                         "--format label-studio`?")
        if self.unknown_ids:
            found.append(f"{len(self.unknown_ids)} reviewed doc_id(s) are not documents of this audit, e.g. "
                         f"{self.unknown_ids[0]!r}: an export of another project or audit?")
        for reason, count in self.unreadable.items():
            found.append(f"{count} record(s) of the export unreadable: {reason}")
        return found


def review_outcome(review: Review, known_ids: set[str]) -> ReviewOutcome:
    """The documents ``review`` decides, among ``known_ids`` (the audit's documents): removed when a reviewed
    sentence of theirs is confirmed stigmatising (one suffices, as one sentence decides a document's score), kept
    when reviewers cleared every reviewed sentence of theirs. :class:`UserError` when the export has tasks but none
    names a document of the audit (another project's export), or none was reviewed."""
    by_document: dict[str, list[str]] = {}
    no_choice = ties = no_doc_id = confirmed = cleared = predicted_reviewed = predicted_confirmed = 0
    unknown: list[str] = []
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
            no_choice += 1
            continue
        ties += decision == "tie"
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
    if set(dimensions) - set(GUIDELINE_DIMENSIONS):
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
                     DIMENSION: ";".join(answer.get(DIMENSION, [])) if stigmatising == "yes" else "",
                     STRENGTH: answer.get(STRENGTH, ["0"])[0] if stigmatising == "yes" else "0",
                     NOTE: "; ".join(filter(None, ["reviewed in Label Studio", *answer.get(NOTE, [])])),
                     "labellers": f"label-studio:{answer.get(REVIEWER, ['?'])[0]}", "double_labelled": "no",
                     "label_1": "", "label_2": "",
                     "chunk": f"label-studio:{Path(review.path).name}"})
    return pd.DataFrame(rows, columns=list(LABELLED_COLUMNS)), skipped
