"""``probe contextual`` (Wang et al. 2026): the bundled scenarios in both languages, the explicit arm's parsing and
scoring, the instrument's and the judge's codes, and the whole command against the chat stub on 127.0.0.1 (retries,
budget, resume without paying twice, the key written nowhere, the link to an audit)."""

from __future__ import annotations

import csv
import json
import shutil

import numpy as np
import pandas as pd
import pytest
from chat_stub import ChatStub
from click.testing import CliRunner
from test_link import audit_dir  # noqa: F401  (the audit fixture)

from corpus_audit.cli import main
from corpus_audit.probe.folder import ProbeFolder
from corpus_audit.probe.questionnaires.coding import instrument_codes, type_agreement
from corpus_audit.probe.questionnaires.contextual import LABELS_FILE, hand_labels, public_endpoint, separated
from corpus_audit.probe.questionnaires.files import QuestionnaireError, bundled_folder
from corpus_audit.probe.questionnaires.scenarios import (
    DOMAINS,
    HEALTHY,
    TYPES,
    completion_requests,
    explicit_messages,
    load_design,
    parse_judgement,
    parse_likert,
    score_likert,
)
from corpus_audit.scm.columns import OUTPUT_COLUMNS

KEY = "sk-stub-secret-4242"
KEPT_SCENARIOS = ("work-1", "school-2", "public-1", "family-3")


@pytest.mark.parametrize("lang", ["en", "es"])
def test_the_bundled_design_crosses_four_domains_with_ten_conditions(lang):
    design = load_design(lang, bundled_folder(lang))
    assert len(design.scenarios) == 20
    assert {d: sum(s.domain == d for s in design.scenarios) for d in DOMAINS} == dict.fromkeys(DOMAINS, 5)
    assert {s.theme for s in design.scenarios} == set(TYPES)
    categories = [c.category for c in design.conditions]
    assert (categories.count("mental"), categories.count("physical-high"), categories.count("physical-low"),
            categories.count(HEALTHY)) == (5, 2, 2, 1)
    text = design.scenarios[0].text(design.condition("schizophrenia"))
    assert "[condition]" not in text and design.condition("schizophrenia").clause in text
    assert text.endswith(design.scenarios[0].stem)
    items = explicit_messages(design, design.condition("HIV"))[1][1].splitlines()
    assert len(items) == 27 and all(line.startswith(f"{n}. ") for n, line in enumerate(items, start=1))
    assert sum(design.condition("HIV").noun in line for line in items) == 27
    if lang == "es":  # "una persona" agrees in the feminine
        assert "13. Creo que una persona con VIH es peligrosa." in items


def test_both_languages_share_the_scenario_ids_and_condition_keys():
    en, es = (load_design(lang, bundled_folder(lang)) for lang in ("en", "es"))
    assert [s.id for s in en.scenarios] == [s.id for s in es.scenarios]
    assert [(c.name, c.category, c.illness) for c in en.conditions] == [(c.name, c.category, c.illness)
                                                                       for c in es.conditions]
    assert en.scenarios[0].context != es.scenarios[0].context


def test_requests_cross_scenarios_conditions_arms_and_repetitions():
    design = load_design("en", bundled_folder("en"))
    cells = completion_requests(design, "m", ("baseline", "strategy"), 3, 1.0, 50)
    assert len(cells) == 20 * 10 * 2 * 3 == len({request.key for _, request in cells})
    strategy = next(request for cell, request in cells if cell["arm"] == "strategy")
    assert design.prompts["strategy"] in strategy.messages[0][1]


def test_a_malformed_design_names_the_file_and_line(tmp_path):
    folder = tmp_path / "en"
    shutil.copytree(bundled_folder("en"), folder)
    text = (folder / "contextual.csv").read_text(encoding="utf-8").replace("[condition]", "[illness]", 1)
    (folder / "contextual.csv").write_text(text, encoding="utf-8")
    with pytest.raises(QuestionnaireError, match=r"contextual.csv:2: .*\[condition\] once"):
        load_design("en", folder)


def test_likert_answers_are_parsed_tolerantly_and_validated():
    design = load_design("en", bundled_folder("en"))
    sheet = {str(n): 3 for n in range(1, 28)}
    assert parse_likert("Sure!\n```json\n" + json.dumps(sheet) + "\n```\nHope this helps.", design.items) == \
        {n: 3 for n in range(1, 28)}
    assert parse_likert(json.dumps({f"item {n}": "4" for n in range(1, 28)}), design.items)[27] == 4
    for bad in ({**sheet, "5": 10}, {**sheet, "5": 0}, {k: v for k, v in sheet.items() if k != "27"},
                {**sheet, "5": True}, {**sheet, "5": 2.5}):
        assert parse_likert(json.dumps(bad), design.items) is None
    assert parse_likert("I would rather not answer.", design.items) is None


def test_likert_scores_reverse_help_and_avoidance_by_hand():
    design = load_design("en", bundled_folder("en"))
    scores = score_likert({n: 9 for n in range(1, 28)}, design.items)
    assert scores["Help"] == scores["Avoidance"] == 1 and scores["Fear"] == 9
    assert scores["total"] == pytest.approx((21 * 9 + 6 * 1) / 27)


def test_judge_answers_are_parsed_and_unknown_types_rejected():
    assert parse_judgement('{"stigma_congruent": true, "types": ["Danger", "social_distance"]}') == \
        (True, ("danger", "social distance"))
    assert parse_judgement('```{"stigma_congruent": false, "types": ["pity"]}```') == (False, ())
    assert parse_judgement('{"stigma_congruent": "yes", "types": []}') is None
    assert parse_judgement('{"stigma_congruent": true, "types": ["rudeness"]}') is None


def _row(warmth=0.0, competence=0.0, **dimensions):
    row = np.zeros(len(OUTPUT_COLUMNS))
    row[OUTPUT_COLUMNS.index("warmth")], row[OUTPUT_COLUMNS.index("competence")] = warmth, competence
    for name, value in dimensions.items():
        row[OUTPUT_COLUMNS.index(f"dim_{name}")] = value
    return row


def test_the_instrument_codes_cold_completions_with_the_types_of_their_dimensions():
    rows = np.array([_row(-0.5, 0.2, fear=0.6, pity=0.1), _row(-0.5, 0.2, help=-0.7), _row(-0.5, 0.2, help=0.7),
                     _row(0.4, -0.9, dangerousness=0.9), _row(-0.2, -0.6, coercion=0.5), _row(-0.3, 0.0, blame=-0.8),
                     _row(np.nan, np.nan)])
    assert instrument_codes(rows) == [(True, ("danger",)), (True, ("social distance",)), (True, ()), (False, ()),
                                      (True, ("incompetence", "control")), (True, ()), (False, ())]


def test_type_agreement_by_hand():
    a = [(True, ("danger",)), (True, ("danger", "pity")), (False, ()), (False, ()), None]
    b = [(True, ("danger",)), (False, ()), (False, ()), (True, ("blame",)), (True, ())]
    result = type_agreement(a, b)
    assert result["n"] == 4 and result["agreement"] == 0.5
    assert result["kappa"] == pytest.approx(0.0)  # po 0.5, pe 0.5 x 0.5 + 0.5 x 0.5
    assert result["jaccard"] == 1.0 and result["n_both_congruent"] == 1
    assert result["types"]["danger"]["agreement"] == 0.75


@pytest.mark.parametrize(("lang", "size"), [("en", 60), ("es", 20)])
def test_the_hand_labelled_sample_is_valid_and_balanced(lang, size):
    design = load_design(lang, bundled_folder(lang))
    labels = hand_labels(bundled_folder(lang) / LABELS_FILE, design)
    assert len(labels) >= size and 0.4 < labels["congruent"].mean() < 0.6
    assert set(t for types in labels["types"] for t in types) == set(TYPES)
    assert HEALTHY in set(labels["condition"]) and not labels.loc[labels["condition"] == HEALTHY, "congruent"].any()


def test_the_recorded_endpoint_drops_credentials_and_queries():
    assert public_endpoint("https://user:pw@api.example.org:8443/v1?key=abc") == "https://api.example.org:8443/v1"


@pytest.fixture(scope="module")
def small_design(tmp_path_factory):
    """The bundled English design with four scenarios (one per domain)."""
    folder = tmp_path_factory.mktemp("contextual") / "en"
    shutil.copytree(bundled_folder("en"), folder)
    with open(folder / "contextual.csv", newline="", encoding="utf-8") as handle:
        rows = [row for row in csv.DictReader(handle) if row["scenario"] in KEPT_SCENARIOS]
    with open(folder / "contextual.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    labels = pd.read_csv(folder / LABELS_FILE, keep_default_na=False)
    labels[labels["scenario"].isin(KEPT_SCENARIOS)].to_csv(folder / LABELS_FILE, index=False)
    return folder


def _args(stub, outdir, design, tiny_st_model, tiny_axes, *extra):
    return ["probe", "contextual", "--endpoint", stub.url, "--model", "stub-chat", "-o", str(outdir),
            "--questionnaire", str(design), "--repetitions", "3", "--judge-model", "stub-judge", "--coder", "judge",
            "--instrument-model", tiny_st_model, "--axes", tiny_axes, "--api-key-env", "STUB_KEY", "--backoff", "0",
            "--permutations", "199", "--no-progress", *extra]


@pytest.fixture(scope="module")
def contextual_run(small_design, tiny_st_model, tiny_axes, tmp_path_factory):
    """A run against the stub, interrupted by its budget, then resumed: (outdir, stub, outputs of both runs)."""
    outdir = tmp_path_factory.mktemp("contextual-probe") / "out"
    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setenv("STUB_KEY", KEY)
    with ChatStub(key=KEY) as stub:
        stub.faults = [(429, {"Retry-After": "0"}), (503, {})]
        first = CliRunner().invoke(main, _args(stub, outdir, small_design, tiny_st_model, tiny_axes, "--budget",
                                               "100"))
        answered_first = stub.answered
        second = CliRunner().invoke(main, _args(stub, outdir, small_design, tiny_st_model, tiny_axes))
        answered = stub.answered
        third = CliRunner().invoke(main, _args(stub, outdir, small_design, tiny_st_model, tiny_axes))
        unchanged = stub.answered == answered
    monkeypatch.undo()
    return outdir, stub, first, answered_first, second, answered, third, unchanged


def test_a_budget_stops_the_run_and_the_rerun_pays_for_each_request_once(contextual_run):
    outdir, stub, first, answered_first, second, answered, third, unchanged = contextual_run
    assert first.exit_code == 1 and "request budget of 100 reached" in first.output
    assert answered_first == 98  # 100 sent: two were the scripted failures, retried
    assert second.exit_code == 0, second.output
    # every distinct request was answered once over the runs: the completions, the explicit sheets (the stub's first
    # schizophrenia sheet is unusable and asked again), the judge's codes of the distinct completions and hand labels
    store = [json.loads(line) for line in (outdir / "responses.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len({record["key"] for record in store}) == len(store) == answered
    purposes = pd.Series([record["purpose"] for record in store]).value_counts().to_dict()
    assert purposes["completion"] == 4 * 10 * 2 * 3 and purposes["explicit"] == 9 * 3 + 1
    assert third.exit_code == 0 and unchanged and "report: up to date, skipped" in third.output


def test_the_key_is_written_nowhere(contextual_run):
    outdir = contextual_run[0]
    for path in outdir.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path


def test_the_statistics_find_the_scripted_stigma(contextual_run):
    outdir = contextual_run[0]
    summary = ProbeFolder(outdir).read_summary()
    results = summary.results
    assert summary.probe == "contextual" and summary.options["endpoint"].startswith("http://127.0.0.1:")
    completions = pd.read_parquet(outdir / "completions.parquet")
    assert len(completions) == 240 and completions["judge_valid"].all()
    expected = completions["completion"].str.contains("dangerous")  # what the scripted judge codes
    assert (completions["congruent"].astype(bool) == expected).all()
    categories = {e["level"]: e for e in results["by_category"]["effects"] if e["factor"] == "category"}
    assert categories["mental"]["odds_ratio"] > 3 and categories["mental"]["odds_ratio_ci"][0] > 1
    assert categories["mental"]["p_bh"] < 0.05
    prompt = next(e for e in results["by_condition"]["effects"] if e["factor"] == "prompt")
    assert prompt["level"] == "strategy" and prompt["odds_ratio"] < 1
    conditions = pd.read_csv(outdir / "conditions.csv")
    healthy = conditions.set_index("condition").loc["healthy"]
    observed = completions[(completions["condition"] == "healthy") & (completions["arm"] == "baseline")]
    assert healthy["rate_baseline"] == pytest.approx(observed["congruent"].astype(bool).mean())
    assert np.isnan(healthy["odds_ratio"]) and conditions["p_bh"].dropna().size == 9
    explicit = results["explicit"]
    assert explicit["valid"] == explicit["sheets"] == 27
    assert all(c["mean"] == pytest.approx((21 * 2 + 6 * 8) / 27) for c in explicit["conditions"])
    validation = results["coding"]["validation"]
    assert validation["labels"] > 0 and validation["instrument"]["n"] == validation["labels"]
    assert results["coding"]["coders"]["n"] == 240
    illnesses = pd.read_csv(outdir / "illnesses.csv")
    assert set(illnesses["illness"]) == {"schizophrenia", "bipolar affective disorder", "depression", "anxiety",
                                         "hypertension"}
    report = (outdir / "report.html").read_text(encoding="utf-8")
    assert "Contextual-judgement probe" in report and "odds ratio vs healthy" in report
    assert (outdir / "contextual.png").is_file() and (outdir / "contextual.svg").is_file()


def test_the_contextual_probe_links_to_an_audit(contextual_run, audit_dir, tmp_path):  # noqa: F811
    outdir = tmp_path / "probe"
    shutil.copytree(contextual_run[0], outdir)
    result = CliRunner().invoke(main, ["link", str(audit_dir), str(outdir), "--n-boot", "200", "--permutations",
                                       "199"])
    assert result.exit_code == 0, result.output
    link = json.loads((outdir / "link.json").read_text(encoding="utf-8"))
    assert link["model_measure"] == "share of stigma-congruent completions"
    assert {i["illness"] for i in link["illnesses"]} == set(pd.read_csv(outdir / "illnesses.csv")["illness"])
    assert "How far the corpus explains the model" in (outdir / "report.html").read_text(encoding="utf-8")


def test_perfect_separation_is_detected():
    coded = pd.DataFrame({"condition": ["a"] * 4 + ["healthy"] * 4,
                          "congruent": [True] * 4 + [True, False, False, True]})
    assert separated(coded, "condition", "a", "healthy")  # every completion of "a" is congruent
    coded.loc[0, "congruent"] = False
    assert not separated(coded, "condition", "a", "healthy")
    coded.loc[4:, "congruent"] = False
    assert separated(coded, "condition", "a", "healthy")  # none of the reference's is
