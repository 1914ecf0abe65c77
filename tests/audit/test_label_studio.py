"""The review loop through Label Studio: tasks and labelling configuration from an audit, the real Label Studio
1.23.2 exports (tests/data/label_studio/: JSON, JSON-MIN and snapshot exports, one and several reviewers per task)
read back with the task the unit, `clean --reviewed`, the labelled data extended, and every kind of bad export
refused or counted with a clear message."""

from __future__ import annotations

import json
from xml.etree import ElementTree
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from corpus_audit.audit.label_studio import (LABELLED_COLUMNS, PREDICTED_CATEGORY, REVIEW_DIMENSIONS, label_config,
                                             labelled_rows, read_review, review_outcome, reviewed_sentences)
from corpus_audit.cli import main
from corpus_audit.common.errors import UserError
from corpus_audit.stigma.aq27 import DIMENSIONS, dimension_label
from corpus_audit.stigma.judgement import CATEGORIES, DIMENSION_COLUMNS

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "label_studio"
ROOT = Path(__file__).resolve().parents[2]
#: The documents of the real export, in the order of its tasks (rank 1 to 12), and what the reviewer decided.
REVIEWED = ["rmhd-486", "rmhd-5533", "rmhd-5842", "rmhd-1502", "rmhd-6192", "rmhd-161", "rmhd-1021", "rmhd-2472",
            "rmhd-958", "rmhd-1488", "rmhd-3309", "rmhd-1323"]
CONFIRMED = {"rmhd-1488"}
CLEARED = set(REVIEWED[:9])


def write_audit(folder: Path, doc_ids: list[str], stigma: list[float], corpus: Path) -> Path:
    """An audit folder as an audit writes it: one judgement per document, scored ``stigma``."""
    folder.mkdir(parents=True)
    sentences = [f"sentence of {doc_id}" for doc_id in doc_ids]
    filtered = pd.DataFrame({"doc_id": doc_ids, "sentence_index": 0, "sentence": sentences,
                             "terms": [["alcoholic"]] * len(doc_ids), "illnesses": [["substance use"]] * len(doc_ids),
                             "illness_type": "mental", "forms": [["person"]] * len(doc_ids)})
    filtered.to_parquet(folder / "filtered.parquet")
    filtered.assign(warmth=-0.5, competence=-0.5, quadrant="cold-incompetent", judgement_strength=0.9,
                    category="judgement", top_dimension="Avoidance", stigma=stigma,
                    **dict.fromkeys(DIMENSION_COLUMNS.values(), 0.1)).to_parquet(folder / "sentences.parquet")
    summary = {"options": {}, "score": {"model_id": "test-model"},
               "corpus": {"inputs": [str(corpus)], "reading": {"text_field": "text", "id_field": "id"}}}
    (folder / "summary.json").write_text(json.dumps(summary))
    return folder


@pytest.fixture()
def reviewed_audit(tmp_path):
    """A corpus of the reviewed documents and two others, and its audit: every document flagged, the reviewed
    ones ranked first (stigma 0.9 down), the two others last."""
    doc_ids = [*REVIEWED, "other-1", "other-2"]
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": doc_id, "text": f"text of {doc_id}"}) + "\n" for doc_id in doc_ids))
    stigma = [0.9 - 0.01 * position for position in range(len(doc_ids))]
    return corpus, write_audit(tmp_path / "audit", doc_ids, stigma, corpus)


def required_controls(config: str) -> set[str]:
    return {node.get("name") for node in ElementTree.fromstring(config).iter() if node.get("required") == "true"}


def test_the_labelling_configuration_has_the_guidelines_choices_and_is_the_one_label_studio_took():
    config = label_config()
    assert config == (FIXTURES / "label_config.xml").read_text(encoding="utf-8")  # accepted by Label Studio 1.23.2
    controls = {node.get("name"): [choice.get("value") for choice in node.iter("Choice")]
                for node in ElementTree.fromstring(config).iter("Choices")}
    assert controls == {"category": list(CATEGORIES), "stigmatising": ["yes", "no"],
                        "dimension": [*DIMENSIONS, "Other"], "stigma_strength": ["1", "2", "3"]}
    assert required_controls(config) == {"category", "stigmatising"}  # what the predictions fill
    guideline = (ROOT / "docs" / "labelling.md").read_text(encoding="utf-8")
    for value in CATEGORIES:
        assert f"`{value}`" in guideline
    # the guideline spells the dimensions its own way; each of its names is read as the one name of the tool
    spelt = guideline.split("| `dimension` | one or more of ")[1].split(", joined")[0]
    assert [dimension_label(name.strip(" `")) for name in spelt.split(",")] == \
        ["Anger", "Dangerousness", "Fear", "Blame", "Segregation", "Coercion", "Avoidance", "Help", "Pity", "Other"]
    assert set(REVIEW_DIMENSIONS) == {*DIMENSIONS, "Other"}


def test_one_name_per_dimension_whatever_the_spelling():
    assert dimension_label("withholding_help") == dimension_label("HELP") == dimension_label(" help ") == "Help"
    assert dimension_label("other") == "Other" and dimension_label("trait") is None
    # the old configuration's exports (lowercase, withholding_help) read as the outputs name the dimensions
    answers = [answer for task in read_review(FIXTURES / "export.json").tasks for answer in task.answers]
    assert [answer["dimension"] for answer in answers if "dimension" in answer] == [["Avoidance"]]
    assert set(DIMENSION_COLUMNS) == set(DIMENSIONS)  # the parquet's dim_<name> and top_dimension use them too


def test_export_flagged_writes_tasks_most_stigmatising_first_with_pre_annotations(reviewed_audit, tmp_path):
    _, audit = reviewed_audit
    frame = pd.read_parquet(audit / "sentences.parquet")
    frame.loc[frame["doc_id"] == "other-2", "stigma"] = 0.99  # now the most stigmatising
    frame.loc[frame["doc_id"] == "other-1", "stigma"] = 0.2  # below the pre-annotation's "yes"
    frame.to_parquet(audit / "sentences.parquet")
    output = tmp_path / "tasks.json"
    result = CliRunner().invoke(main, ["export-flagged", str(audit), "--format", "label-studio", "-o", str(output)])
    assert result.exit_code == 0, result.output
    assert "14 Label Studio task(s) from 14 documents" in result.output
    tasks = json.loads(output.read_text())
    assert [task["data"]["doc_id"] for task in tasks][:2] == ["other-2", "rmhd-486"]
    assert [task["data"]["rank"] for task in tasks] == list(range(1, 15))
    first, low = tasks[0], next(task for task in tasks if task["data"]["doc_id"] == "other-1")
    assert first["data"][PREDICTED_CATEGORY] == "judgement" and "category" not in first["data"]
    assert (first["data"]["terms"], first["data"]["forms"], first["data"]["illnesses"]) == \
        ("alcoholic", "person", "substance use")
    choices = {item["from_name"]: item["value"]["choices"] for item in first["predictions"][0]["result"]}
    assert choices == {"category": ["judgement"], "stigmatising": ["yes"], "dimension": ["Avoidance"]}
    assert all(required_controls(label_config()) <= {item["from_name"] for item in task["predictions"][0]["result"]}
               for task in tasks)
    assert first["predictions"][0]["score"] == pytest.approx(0.99)
    low_choices = {item["from_name"]: item["value"]["choices"] for item in low["predictions"][0]["result"]}
    assert low_choices == {"category": ["judgement"], "stigmatising": ["no"]}
    assert (tmp_path / "tasks.label_config.xml").read_text() == label_config()
    refused = CliRunner().invoke(main, ["export-flagged", str(audit), "-o", str(tmp_path / "tasks2.json")])
    assert refused.exit_code != 0 and "pass --format label-studio" in refused.output


@pytest.mark.parametrize("name", ["export.json", "export_min.json"])
def test_the_real_exports_give_the_reviewers_decisions(name):
    review = read_review(FIXTURES / name)
    assert review.format == ("json" if name == "export.json" else "json-min")
    outcome = review_outcome(review, set(REVIEWED))
    assert (outcome.remove, outcome.keep) == (CONFIRMED, CLEARED)
    # rank 11 was answered without a stigmatising choice; rank 12 skipped (JSON-MIN leaves skipped tasks out)
    assert len(outcome.no_choice) == (2 if name == "export.json" else 1)
    assert outcome.no_choice[0] == "task 189 (#11, document rmhd-3309)"
    assert outcome.precision == pytest.approx(1 / 10)
    assert (outcome.predicted_yes_reviewed, outcome.predicted_yes_confirmed) == (10, 1)


def test_clean_reviewed_removes_confirmed_keeps_cleared_and_reports_precision(reviewed_audit, tmp_path):
    corpus, audit = reviewed_audit
    out = tmp_path / "clean"
    result = CliRunner().invoke(main, ["clean", str(corpus), "--audit", str(audit), "--reviewed",
                                       str(FIXTURES / "export.json"), "-o", str(out)])
    assert result.exit_code == 0, result.output
    kept = [json.loads(line)["id"] for line in (out / "corpus.jsonl").read_text().splitlines()]
    assert kept == [doc for doc in [*REVIEWED, "other-1", "other-2"] if doc not in CONFIRMED]
    assert "the flags' precision 10% (1 of 10 reviewed flagged documents)" in result.output
    assert "2 task(s) have no choice for 'stigmatising'" in result.output
    manifest = json.loads((out / "clean-manifest.json").read_text())
    assert manifest["review"]["precision_documents"] == pytest.approx(0.1)
    assert manifest["review"]["documents_confirmed"] == 1 and manifest["review"]["documents_cleared"] == 9
    assert [(row["doc_id"], row["reason"]) for row in manifest["removed"]] == [("rmhd-1488", "reviewer")]


def test_clean_reviewed_over_a_rule_keeps_what_reviewers_cleared(reviewed_audit, tmp_path):
    corpus, audit = reviewed_audit
    out = tmp_path / "clean"
    # the top 3 are rmhd-486, rmhd-5533, rmhd-5842: all cleared; rmhd-1488 (rank 10) confirmed
    result = CliRunner().invoke(main, ["clean", str(corpus), "--audit", str(audit), "--top", "3", "--reviewed",
                                       str(FIXTURES / "export_min.json"), "-o", str(out)])
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "clean-manifest.json").read_text())
    assert [row["doc_id"] for row in manifest["removed"]] == ["rmhd-1488"]
    assert manifest["records_removed"] == 1
    broad = CliRunner().invoke(main, ["clean", str(corpus), "--audit", str(audit), "--top", "13", "--reviewed",
                                         str(FIXTURES / "export_min.json"), "-o", str(tmp_path / "clean2")])
    removed = json.loads((tmp_path / "clean2" / "clean-manifest.json").read_text())["removed"]
    assert broad.exit_code == 0 and [row["doc_id"] for row in removed] == ["rmhd-1488", "rmhd-3309", "rmhd-1323",
                                                                             "other-1"]


def test_bad_exports_are_refused_or_counted_and_nothing_unchosen_is_removed(reviewed_audit, tmp_path):
    corpus, audit = reviewed_audit

    def clean(export: Path, *more: str) -> tuple:
        out = tmp_path / f"clean-{export.stem}"
        result = CliRunner().invoke(main, ["clean", str(corpus), "--audit", str(audit), "--reviewed", str(export),
                                           *more, "-o", str(out)])
        return result, out

    malformed = tmp_path / "malformed.json"
    malformed.write_text('[{"id": 1, "data": {"doc_id": "rmhd-486"}},\n {"id": 2,, }]')
    result, out = clean(malformed)
    assert result.exit_code != 0 and f"{malformed}:2:11: not valid JSON" in result.output and not out.exists()

    other = json.loads((FIXTURES / "export.json").read_text())
    for task in other:
        task["data"]["doc_id"] = "another-project-" + task["data"]["doc_id"]
    other_path = tmp_path / "other.json"
    other_path.write_text(json.dumps(other))
    result, out = clean(other_path)
    assert result.exit_code != 0 and "none of its 12 task(s) names a document of this audit" in result.output
    assert "12 unknown id(s)" in result.output and not out.exists()

    mixed = json.loads((FIXTURES / "export_min.json").read_text())
    mixed[0]["doc_id"] = "not-in-this-audit"  # a cleared task of another audit
    mixed.append("not a task")
    mixed_path = tmp_path / "mixed.json"
    mixed_path.write_text(json.dumps(mixed))
    result, out = clean(mixed_path)
    assert result.exit_code == 0, result.output
    assert "1 reviewed doc_id(s) are not documents of this audit, e.g. 'not-in-this-audit'" in result.output
    assert "1 record(s) of the export unreadable: not a task (a JSON object)" in result.output
    assert json.loads((out / "clean-manifest.json").read_text())["records_removed"] == 1

    unanswered = [{"id": 1, "data": {"doc_id": "rmhd-486", "text": "x"}, "annotations": []}]
    unanswered_path = tmp_path / "unanswered.json"
    unanswered_path.write_text(json.dumps(unanswered))
    result, out = clean(unanswered_path)
    assert result.exit_code != 0 and "no task has a reviewer's choice for 'stigmatising' (1 task(s))" in result.output

    # a reviewed document the audit has but the corpus lacks: said, and nothing else removed
    short = tmp_path / "short" / "corpus.jsonl"
    short.parent.mkdir()
    short.write_text("".join(line + "\n" for line in corpus.read_text().splitlines()
                             if "rmhd-1488" not in line))
    summary = json.loads((audit / "summary.json").read_text())
    summary["corpus"]["inputs"] = [str(short)]
    (audit / "summary.json").write_text(json.dumps(summary))
    result = CliRunner().invoke(main, ["clean", str(short), "--audit", str(audit), "--reviewed",
                                       str(FIXTURES / "export.json"), "-o", str(tmp_path / "clean-short")])
    assert result.exit_code == 0, result.output
    assert "1 chosen id(s) are in no input file, e.g. 'rmhd-1488'" in result.output
    assert json.loads((tmp_path / "clean-short" / "clean-manifest.json").read_text())["records_removed"] == 0


def test_a_tie_between_reviewers_removes_nothing():
    from corpus_audit.audit.label_studio import Review, ReviewedTask

    yes, no = {"stigmatising": ["yes"]}, {"stigmatising": ["no"]}
    review = Review("tie.json", "json", [ReviewedTask(1, "d1", "s", {}, [yes, no]),
                                         ReviewedTask(2, "d2", "s2", {}, [yes, yes, no])])
    outcome = review_outcome(review, {"d1", "d2"})
    assert outcome.remove == {"d2"} and outcome.keep == set() and outcome.ties == ["task 1 (document d1)"]


def test_reviewed_sentences_join_the_labelled_data_with_their_source():
    labelled = pd.read_csv(ROOT / "templates" / "en" / "stigma_labelled.csv", dtype=str, keep_default_na=False)
    # a reviewed document the labelled data already holds keeps its split (no document in train and held-out)
    labelled = pd.concat([labelled, pd.DataFrame([{**dict.fromkeys(LABELLED_COLUMNS, ""), "uid": "en-r00041",
                                                   "doc_id": "rmhd-1488", "split": "heldout",
                                                   "sentence": "an earlier sentence"}])], ignore_index=True)
    rows, skipped = labelled_rows(read_review(FIXTURES / "export.json"), "en", "reddit_mh_27subs_en",
                                  "Apache-2.0 (Reddit Mental Health Dataset, Low et al. 2020)", labelled)
    assert len(rows) == 10 and dict(skipped) == {"no reviewer's answer": 2}
    assert list(rows.columns) == list(LABELLED_COLUMNS) == list(labelled.columns)
    assert rows["uid"].tolist()[:2] == ["en-r00042", "en-r00043"]
    row = rows.set_index("doc_id").loc["rmhd-1488"]
    assert (row["sentence"], row["stigmatising"], row["dimension"], row["stigma_strength"], row["split"]) == \
        ("People are just kidding themselves if they can be with an alcoholic", "yes", "avoidance", "2", "heldout")
    assert (row["source"], row["labellers"], row["chunk"], row["matched_term"], row["form"]) == \
        ("real", "label-studio:1", "label-studio:export.json", "alcoholic", "person")
    assert set(rows.drop(index=rows.index[rows["doc_id"] == "rmhd-1488"])["split"]) == {"train"}
    again, skipped = labelled_rows(read_review(FIXTURES / "export_min.json"), "en", "reddit_mh_27subs_en", "x",
                                   pd.concat([labelled, rows], ignore_index=True))
    assert again.empty and skipped["sentence already labelled"] == 10


def test_answers_the_guideline_does_not_allow_stay_out_of_the_labelled_data():
    from corpus_audit.audit.label_studio import Review, ReviewedTask

    def task(number: int, **answer: list[str]) -> ReviewedTask:
        return ReviewedTask(number, f"d{number}", f"sentence {number}", {"forms": "slang"}, [answer])

    review = Review("x.json", "json", [task(1, category=["judgement"], stigmatising=["yes"], stigma_strength=["2"]),
                                       task(2, category=["judgement"], stigmatising=["no"], stigma_strength=["3"]),
                                       task(3, category=["judgement"], stigmatising=["yes"],
                                            dimension=["Blame", "Help"], stigma_strength=["2"])])
    rows, skipped = labelled_rows(review, "es", "c", "l", pd.DataFrame(columns=list(LABELLED_COLUMNS)))
    assert rows["doc_id"].tolist() == ["d3"] and rows["uid"].tolist() == ["es-r00001"]
    assert rows["dimension"].tolist() == ["blame;withholding_help"]  # the labelled data's spelling
    assert dict(skipped) == {"stigmatising = yes without a dimension or a strength 1-3": 1,
                             "stigmatising = no with a strength above 0": 1}


def test_read_review_refuses_json_that_is_no_export(tmp_path):
    path = tmp_path / "x.json"
    path.write_text('"a string"')
    with pytest.raises(UserError, match="a JSON list of tasks, not a str"):
        read_review(path)


TWO = FIXTURES / "two_reviewers"
#: The real project with several reviewers per task (two_reviewers/labels.csv): what every export must give.
TWO_REMOVED = {"mlma-3247", "mlma-2271", "mlma-3642", "mlma-4298", "mlma-926", "mlma-4646", "mlma-1963"}
TWO_CLEARED = {"mlma-2265"}  # task #6: one yes, two no
TWO_TIED = ["task 15 (#15, document mlma-2314)"]


@pytest.fixture()
def two_reviewer_audit(tmp_path):
    """A corpus of the 20 documents of the two-reviewer project and its audit (ranked as the tasks)."""
    tasks = json.loads((TWO / "snapshot.json").read_text())
    doc_ids = [task["data"]["doc_id"] for task in sorted(tasks, key=lambda task: task["data"]["rank"])]
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": doc_id, "text": f"text of {doc_id}"}) + "\n" for doc_id in doc_ids))
    return corpus, write_audit(tmp_path / "audit", doc_ids, [0.99 - 0.01 * i for i in range(len(doc_ids))], corpus)


@pytest.mark.parametrize("name", ["export.json", "export_min.json", "snapshot.json", "snapshot_min.json"])
def test_every_export_format_gives_one_answer_per_task(name):
    review = read_review(TWO / name)
    ids = [task.task_id for task in review.tasks]
    assert len(ids) == len(set(ids))  # JSON-MIN's records of one task are gathered into it
    answers = {task.data["rank"]: len(task.answers) for task in review.tasks}
    assert (answers[1], answers[6], answers[15], answers[9]) == (3, 3, 2, 1)  # the skipped answer is not one
    outcome = review_outcome(review, TWO_REMOVED | TWO_CLEARED | {"mlma-2314", "mlma-3488", "mlma-25", "mlma-5389",
                                                                  "mlma-3411", "mlma-337", "mlma-3329", "mlma-3841",
                                                                  "mlma-4094", "mlma-2152", "mlma-3174", "mlma-2518"})
    assert (outcome.remove, outcome.keep, outcome.ties) == (TWO_REMOVED, TWO_CLEARED, TWO_TIED)
    assert outcome.precision == pytest.approx(7 / 8) and outcome.reviewed == 9
    assert (outcome.predicted_yes_reviewed, outcome.predicted_yes_confirmed) == (8, 7)
    # tasks without a choice, named: JSON keeps the task only skipped (#12), JSON-MIN leaves it out; snapshots hold
    # every task of the project, the unanswered ones too
    expected = {"export.json": 1, "export_min.json": 0, "snapshot.json": 11, "snapshot_min.json": 10}[name]
    assert len(outcome.no_choice) == expected
    assert ("task 12 (#12, document mlma-3488)" in outcome.no_choice) == name.endswith("t.json")


def test_json_and_json_min_of_one_project_clean_the_same(two_reviewer_audit, tmp_path):
    corpus, audit = two_reviewer_audit
    manifests = {}
    for name in ("export.json", "export_min.json"):
        out = tmp_path / f"clean-{name}"
        result = CliRunner().invoke(main, ["clean", str(corpus), "--audit", str(audit), "--reviewed",
                                           str(TWO / name), "-o", str(out)])
        assert result.exit_code == 0, result.output
        assert "9 of" in result.output and "the flags' precision 88% (7 of 8 reviewed flagged documents)" in \
            result.output
        assert "1 task(s) have as many 'yes' as 'no' answers: task 15 (#15, document mlma-2314)" in result.output
        manifests[name] = json.loads((out / "clean-manifest.json").read_text())
    removed = [[row["doc_id"] for row in manifest["removed"]] for manifest in manifests.values()]
    assert removed[0] == removed[1] and set(removed[0]) == TWO_REMOVED
    reviews = [manifest["review"] for manifest in manifests.values()]
    assert reviews[0]["precision_documents"] == reviews[1]["precision_documents"] == pytest.approx(7 / 8)
    assert reviews[0]["tasks_split_evenly_named"] == reviews[1]["tasks_split_evenly_named"] == TWO_TIED
    assert reviews[0]["tasks_without_a_choice_named"] == ["task 12 (#12, document mlma-3488)"]
    kept = [json.loads(line)["id"] for line in (tmp_path / "clean-export_min.json" / "corpus.jsonl").read_text()
            .splitlines()]
    assert len(kept) == 20 - 7 and "mlma-2314" in kept and "mlma-2265" in kept


def test_the_real_servers_predictions_fill_every_required_control():
    config = (FIXTURES / "label_config.xml").read_text(encoding="utf-8")
    tasks = json.loads((TWO / "imported_tasks.json").read_text())  # as the server lists them after the import
    assert len(tasks) == 20 and all(required_controls(config) <= {item["from_name"] for item in
                                                                  task["predictions"][0]["result"]}
                                    for task in tasks)


def test_export_flagged_top_keeps_the_most_stigmatising_documents(reviewed_audit, tmp_path):
    _, audit = reviewed_audit
    frame = pd.read_parquet(audit / "sentences.parquet")
    second = frame[frame["doc_id"] == "rmhd-5533"].assign(sentence_index=1, stigma=0.1)  # a second, milder sentence
    pd.concat([frame, second], ignore_index=True).to_parquet(audit / "sentences.parquet")
    output = tmp_path / "t.json"
    result = CliRunner().invoke(main, ["export-flagged", str(audit), "--format", "label-studio", "--top", "3", "-o",
                                       str(output)])
    assert result.exit_code == 0, result.output
    assert "4 Label Studio task(s) from 3 documents" in result.output
    tasks = json.loads(output.read_text())
    assert [task["data"]["doc_id"] for task in tasks] == ["rmhd-486", "rmhd-5533", "rmhd-5842", "rmhd-5533"]
    table = tmp_path / "t.csv"
    result = CliRunner().invoke(main, ["export-flagged", str(audit), "--top", "2", "-o", str(table)])
    assert result.exit_code == 0 and set(pd.read_csv(table)["doc_id"]) == {"rmhd-486", "rmhd-5533"}
    refused = CliRunner().invoke(main, ["export-flagged", str(audit), "--top", "0", "-o", str(table)])
    assert refused.exit_code != 0


def test_reviewed_sentences_take_the_majority_and_count_what_they_leave_out():
    table, skipped = reviewed_sentences([read_review(TWO / "export_min.json"), read_review(TWO / "export.json")])
    decided = dict(zip(table["doc_id"], table["stigmatising"]))
    assert decided == {**dict.fromkeys(TWO_REMOVED, "yes"), "mlma-2265": "no"}
    assert table.set_index("doc_id").loc["mlma-2265", "category"] == "information"  # the two who said no
    assert table.set_index("doc_id").loc["mlma-3247", "reviewers"] == 3
    assert dict(skipped) == {"reviewers split evenly": 2, "no reviewer's answer (or no sentence)": 1,
                             "the same sentence decided by an earlier task or file": 8}


def test_a_labelled_csv_reads_as_tasks(tmp_path):
    path = tmp_path / "labels.csv"
    pd.DataFrame({"sentence": ["They are all lunatics.", "I have asthma.", "They are all lunatics.", "x"],
                  "stigmatising": ["yes", "no", "no", ""], "category": ["judgement", "self_disclosure", "judgement", ""],
                  "dimension": ["other", "", "", ""], "id": ["1", "2", "1", "3"], "terms": ["lunatics", "asthma",
                                                                                          "lunatics", ""],
                  "doc_id": ["d1", "d2", "d1", "d3"]}).to_csv(path, index=False)
    review = read_review(path)
    assert review.format == "csv" and [len(task.answers) for task in review.tasks] == [2, 1, 0]
    review.tasks[1].answers[0]["category"] = ["opinion"]
    table, skipped = reviewed_sentences([review])
    assert table.empty and dict(skipped) == {"reviewers split evenly": 1, "no reviewer's answer (or no sentence)": 1,
                                             "a category the guideline does not have ('opinion')": 1}
    review = read_review(path)
    assert review.tasks[0].answers[0]["dimension"] == ["Other"] and review.tasks[0].decision() == "tie"
    assert review.tasks[1].data["terms"] == "asthma"
    bad = tmp_path / "bad.csv"
    pd.DataFrame({"text": ["a", "b"], "stigmatising": ["no", "maybe"]}).to_csv(bad, index=False)
    with pytest.raises(UserError, match=r"bad.csv, line 3: stigmatising must be yes, no or empty, not 'maybe'"):
        read_review(bad)
    missing = tmp_path / "missing.csv"
    pd.DataFrame({"text": ["a"]}).to_csv(missing, index=False)
    with pytest.raises(UserError, match="needs the column"):
        read_review(missing)
