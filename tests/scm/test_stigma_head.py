"""The stigma head: its labelled data (masked as an audit masks), its training with weighted written sentences,
its column in the instrument's output, and its measured validity on held-out real sentences."""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import f1_score, roc_auc_score

from corpus_audit.corpus.matcher import FORMS, SLANG_WORD, mention_forms
from corpus_audit.scm.axes import STIGMA_CLASSES, AxesFileError, SCMAxes, form_indicators
from corpus_audit.scm.columns import OUTPUT_COLUMNS, STIGMA_COLUMN
from corpus_audit.scm.heads import ClassifierHead
from corpus_audit.scm.stigma import (bootstrap_auc, document_ranking, fit_stigma_head, fit_stigma_text_head,
                                     format_stigma, load_stigma_data, stigma_validity)
from corpus_audit.scm.templates import TemplateError
from corpus_audit.stigma.judgement import CATEGORIES, JUDGEMENT

# Fixture sentences written for these tests (hashing features make their words the signal).
STIGMATISING = ["Those {m} are violent and belong locked away.", "Every {m} is a lazy burden on us all.",
                "Keep the {m} away from our kids.", "{m} are dangerous and should never be hired."]
OTHER = ["My friend with {m} runs a bakery and coaches football.", "Services for {m} need more funding.",
         "The trial measured relapse in {m} over two years.", "Is {m} treatable with talking therapy?"]
MENTIONS = [("lunatics", "slang"), ("schizophrenics", "person"), ("the mentally ill", "generic"),
            ("people with psychosis", "diagnosis")]


def encode(texts: list[str]) -> np.ndarray:
    """Bag-of-words hashing: a deterministic stand-in for an embedder."""
    X = np.zeros((len(texts), 64))
    for row, text in enumerate(texts):
        for word in text.lower().replace(".", "").replace("?", "").split():
            X[row, int(hashlib.md5(word.encode()).hexdigest(), 16) % 64] += 1.0
    return X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-12)


def fixture_rows() -> pd.DataFrame:
    rows = []
    for i, (mention, form) in enumerate(MENTIONS * 9):
        for label, templates in (("yes", STIGMATISING), ("no", OTHER)):
            split = ("train", "dev", "heldout")[i % 3]
            source = "written" if (i % 4 == 1 and split != "heldout") else "real"
            rows.append({"uid": f"u{len(rows)}", "source": source, "corpus": "c", "doc_id": f"doc{i}", "group": "",
                         "sentence": templates[i % 4].format(m=mention), "matched_term": mention, "form": form,
                         "illness_type": "mental", "split": split, "category": "judgement" if label == "yes"
                         else "information", "stigmatising": label})
    return pd.DataFrame(rows)


@pytest.fixture()
def labelled(tmp_path):
    path = tmp_path / "stigma_labelled.csv"
    fixture_rows().to_csv(path, index=False)
    return load_stigma_data("en", path)


def test_sentences_are_masked_at_the_labelled_mention_and_every_lexicon_mention(tmp_path):
    table = fixture_rows().head(2)
    table.loc[1, "sentence"] = "Lunatics, said the man with depression, are everywhere."
    path = tmp_path / "stigma_labelled.csv"
    table.to_csv(path, index=False)
    data = load_stigma_data("en", path)
    assert data.texts[0] == "Those this condition are violent and belong locked away."
    assert "depression" not in data.texts[1] and "Lunatics" not in data.texts[1]
    assert data.texts[1].count("this condition") == 2


@pytest.mark.parametrize(("column", "value", "message"), [
    ("stigmatising", "maybe", "stigmatising must be yes or no"),
    ("split", "test", "split must be one of train, dev, heldout"),
    ("source", "written", "written sentences are never held out"),
    ("category", "opinion", "category must be one of judgement"),
])
def test_a_bad_row_names_its_file_and_line(tmp_path, column, value, message):
    table = fixture_rows()
    row = int(np.flatnonzero(table["split"] == "heldout")[0])
    table.loc[row, column] = value
    path = tmp_path / "stigma_labelled.csv"
    table.to_csv(path, index=False)
    with pytest.raises(TemplateError, match=f"line {row + 2}: {message}"):
        load_stigma_data("en", path)


def test_the_head_learns_the_labels_and_scores_held_out_sentences(labelled):
    X = encode(labelled.texts)
    head = fit_stigma_head(X, labelled, labelled.rows(("train", "dev")), written_weight=0.5)
    assert head.classes == STIGMA_CLASSES
    held = labelled.rows(("heldout",), ("real",))
    score = head.predict_proba(X[held])[:, 1]
    assert roc_auc_score(labelled.stigmatising[held], score) > 0.95
    assert ((score >= 0) & (score <= 1)).all()


def test_written_weight_zero_is_training_on_real_sentences_only(labelled):
    X = encode(labelled.texts)
    rows = labelled.rows(("train", "dev"))
    weighted = fit_stigma_head(X, labelled, rows, written_weight=0.0)
    real_only = fit_stigma_head(X, labelled, labelled.rows(("train", "dev"), ("real",)), written_weight=1.0)
    np.testing.assert_allclose(weighted.predict_proba(X), real_only.predict_proba(X), atol=1e-6)
    heavier = fit_stigma_head(X, labelled, rows, written_weight=3.0)
    assert not np.allclose(heavier.predict_proba(X), weighted.predict_proba(X), atol=1e-3)


def test_sample_weights_need_a_logistic_head():
    X = np.eye(4)
    with pytest.raises(ValueError, match="sample weights need a logistic head"):
        ClassifierHead("mlp", STIGMA_CLASSES).fit(X, np.array([0, 1, 0, 1]), sample_weight=np.ones(4))


def judging_axes(X: np.ndarray, labels: np.ndarray, stigma: ClassifierHead | None) -> SCMAxes:
    y = np.column_stack([np.where(labels, -1.0, 1.0), np.where(labels, -1.0, 1.0)])
    axes = SCMAxes(head="logistic").fit(X, y, metadata={"embedder_id": "toy"})
    categories = np.arange(len(X)) % len(CATEGORIES)
    from corpus_audit.scm.columns import DIMENSION_CLASSES

    gate = ClassifierHead("logistic", CATEGORIES).fit(X, categories)
    dimensions = ClassifierHead("logistic", DIMENSION_CLASSES).fit(np.tile(X, (3, 1))[:len(DIMENSION_CLASSES) * 4],
                                                                  np.arange(len(DIMENSION_CLASSES) * 4)
                                                                  % len(DIMENSION_CLASSES))
    return axes.attach_judgement(gate, dimensions, stigma)


def test_the_stigma_column_is_measured_and_survives_save_and_load(labelled, tmp_path):
    X = encode(labelled.texts)
    head = fit_stigma_head(X, labelled, labelled.rows(("train", "dev")), written_weight=1.0)
    axes = judging_axes(X, labelled.stigmatising, head)
    scores = axes.measure(X[:6])
    column = OUTPUT_COLUMNS.index(STIGMA_COLUMN)
    np.testing.assert_allclose(scores[:, column], head.predict_proba(X[:6])[:, 1], rtol=1e-5)
    axes.save(tmp_path / "axes.npz")
    np.testing.assert_array_equal(SCMAxes.load(tmp_path / "axes.npz").measure(X[:6]), scores)
    without = judging_axes(X, labelled.stigmatising, None)
    assert np.isnan(without.measure(X[:3])[:, column]).all()
    assert np.isfinite(without.measure(X[:3])[:, :column]).all()
    with pytest.raises(ValueError, match="stigma head must have the classes"):
        axes.attach_judgement(axes.judgement_["gate"], axes.judgement_["dimensions"], axes.judgement_["gate"])


def test_validity_on_held_out_real_sentences(labelled):
    X = encode(labelled.texts)
    head = fit_stigma_head(X, labelled, labelled.rows(("train", "dev")), written_weight=1.0)
    axes = judging_axes(X, labelled.stigmatising, head)
    result = stigma_validity(encode, axes, "en", labelled)
    held = labelled.rows(("heldout",), ("real",))
    assert result["n"] == len(held) and result["n_stigmatising"] == int(labelled.stigmatising[held].sum())
    expected = roc_auc_score(labelled.stigmatising[held], head.predict_proba(X[held])[:, 1])
    assert result["auc"] == pytest.approx(expected)
    assert result["auc_ci95"][0] <= result["auc"] <= result["auc_ci95"][1]
    assert result["precision_at"]["20"] == pytest.approx(
        labelled.stigmatising[held][np.argsort(-head.predict_proba(X[held])[:, 1], kind="stable")[:20]].mean())
    # 4 forms with 3 sentences of each class: too few for a per-form AUC
    assert set(result["forms"]) == {"slang", "person", "generic", "diagnosis"}
    assert all(value["auc"] is None for value in result["forms"].values())
    assert result["corpora"]["c"]["n_stigmatising"] == result["n_stigmatising"]
    assert result["corpora"]["c"]["auc"] == pytest.approx(expected)  # one corpus: the pooled AUC
    line = format_stigma(result)  # as `corpus-audit axes evaluate` and the build script print it
    assert f"AUC {result['auc']:.3f}" in line and f"{result['n']} held-out real sentences" in line
    assert "AUC within one corpus: c " in line and "documents ranked by their most stigmatising sentence" in line
    assert "the judgement gate on the same sentences" in line


def test_the_gate_is_measured_on_the_held_out_categories(labelled):
    X = encode(labelled.texts)
    axes = judging_axes(X, labelled.stigmatising, fit_stigma_head(X, labelled, labelled.rows(("train", "dev")), 1.0))
    gate = stigma_validity(encode, axes, "en", labelled)["gate"]
    held = labelled.rows(("heldout",), ("real",))
    probabilities = axes.judgement_["gate"].predict_proba(X[held])
    truth = np.array([CATEGORIES.index(category) for category in labelled.category[held]])
    judgement = CATEGORIES.index(JUDGEMENT)
    assert gate["n"] == len(held) and gate["n_judgements"] == int((truth == judgement).sum())
    assert gate["categories"]["information"] == int((truth == CATEGORIES.index("information")).sum())
    assert gate["judgement_auc"] == pytest.approx(roc_auc_score(truth == judgement, probabilities[:, judgement]))
    assert gate["judgement_auc_ci95"][0] <= gate["judgement_auc"] <= gate["judgement_auc_ci95"][1]
    assert gate["category_accuracy"] == pytest.approx((probabilities.argmax(axis=1) == truth).mean())
    assert gate["category_macro_f1"] == pytest.approx(
        f1_score(truth, probabilities.argmax(axis=1), labels=range(len(CATEGORIES)), average="macro", zero_division=0))


def test_bootstrap_interval_brackets_the_auc_and_narrows_with_data():
    rng = np.random.default_rng(1)
    truth = rng.random(400) < 0.4
    score = truth + rng.normal(scale=0.8, size=400)
    auc, low, high = bootstrap_auc(truth, score, n_boot=500)
    assert auc == pytest.approx(roc_auc_score(truth, score))
    assert low < auc < high
    _, small_low, small_high = bootstrap_auc(truth[:80], score[:80], n_boot=500)
    assert (small_high - small_low) > (high - low)


def test_documents_rank_by_their_most_stigmatising_sentence():
    sentences = pd.DataFrame({
        "corpus": "c", "doc_id": ["slur", "slur", "support", "support", "clinic", "other-type"],
        "illness_type": ["mental", "mental", "mental", "mental", "mental", "physical"],
        "category": ["judgement", "self_disclosure", "judgement", "judgement", "clinical", "judgement"],
        "stigmatising": ["yes", "no", "no", "no", "no", "no"],
        "stigma": [0.7, 0.1, 0.2, 0.8, 0.05, 0.99]})
    result = document_ranking(sentences)
    assert (result["n_documents"], result["n_stigmatising"], result["n_supportive"]) == (4, 1, 2)
    # the supportive mental document (max 0.8) ranks above the stigmatising one (0.7); the physical one is
    # another illness type and is not paired
    assert result["supportive_above_stigmatising"] == 1.0 and result["n_pairs"] == 1
    assert result["auc"] == pytest.approx(1 / 3)


def test_a_recipe_fits_its_stigma_head_on_train_and_dev_only(labelled):
    from dataclasses import replace

    from corpus_audit.scm.recipes import StigmaSettings, fit_stigma, get_recipe

    recipe = replace(get_recipe("default"), stigma_heads=(StigmaSettings("en", 0.5, 1.0, 2.0, forms=False),))
    seen: list[str] = []

    def recording_encode(texts: list[str]) -> np.ndarray:
        seen.extend(texts)
        return encode(texts)

    head, text_head, forms, calibration = fit_stigma(recipe, recording_encode, "en", labelled)
    fitted = labelled.rows(("train", "dev"))
    assert seen == [labelled.texts[i] for i in fitted]  # no held-out sentence is even embedded
    expected = fit_stigma_head(encode(labelled.texts), labelled, fitted, 0.5, C=1.0)
    np.testing.assert_allclose(head.predict_proba(encode(labelled.texts)),
                               expected.predict_proba(encode(labelled.texts)), atol=1e-8)
    expected_text = fit_stigma_text_head(labelled, fitted, 0.5, C=2.0)
    np.testing.assert_allclose(text_head.predict_proba(labelled.texts), expected_text.predict_proba(labelled.texts),
                               atol=1e-8)
    assert forms == () and len(calibration) == 2 and calibration[0] > 0  # a higher probability stays higher
    assert fit_stigma(recipe, encode, "es", labelled) == (None, None, (), None)  # no settings for that language
    assert fit_stigma(replace(recipe, stigma_heads=(StigmaSettings("en", 0.5, 1.0, None, forms=False),)), encode,
                      "en", labelled)[1] is None
    with_forms = fit_stigma(replace(recipe, stigma_heads=(StigmaSettings("en", 0.5, 1.0, None, forms=True),)),
                            encode, "en", labelled)
    assert with_forms[2] == FORMS and with_forms[0].arrays["logistic__weights"].shape == (64 + len(FORMS), 2)
    assert get_recipe("default").stigma_settings("en") is not None
    assert get_recipe("reference").stigma_settings("en") is None


def test_a_text_head_is_averaged_into_the_stigma_column_and_survives_save_and_load(labelled, tmp_path):
    X = encode(labelled.texts)
    rows = labelled.rows(("train", "dev"))
    head = fit_stigma_head(X, labelled, rows, written_weight=1.0)
    text_head = fit_stigma_text_head(labelled, rows, 1.0, C=1.0)
    axes = judging_axes(X, labelled.stigmatising, head)
    axes.attach_judgement(axes.judgement_["gate"], axes.judgement_["dimensions"], head, text_head)
    texts = labelled.texts[:6]
    column = OUTPUT_COLUMNS.index(STIGMA_COLUMN)
    scores = axes.measure(X[:6], texts)
    expected = (head.predict_proba(X[:6])[:, 1] + text_head.predict_proba(texts)[:, 1]) / 2
    np.testing.assert_allclose(scores[:, column], expected, rtol=1e-5)
    assert not np.allclose(scores[:, column], head.predict_proba(X[:6])[:, 1])  # the text head counts
    with pytest.raises(ValueError, match="pass the texts"):
        axes.measure(X[:6])
    axes.save(tmp_path / "axes.npz")
    loaded = SCMAxes.load(tmp_path / "axes.npz")
    assert loaded.stigma_text_head.arrays["vocabulary"].tolist() == text_head.arrays["vocabulary"].tolist()
    np.testing.assert_array_equal(loaded.measure(X[:6], texts), scores)
    with pytest.raises(ValueError, match="goes with a stigma head"):
        axes.attach_judgement(axes.judgement_["gate"], axes.judgement_["dimensions"], None, text_head)
    with np.load(tmp_path / "axes.npz", allow_pickle=False) as data:  # a vocabulary of numbers is no vocabulary
        arrays = {name: data[name] for name in data.files}
    arrays["stigma_text__vocabulary"] = np.zeros(len(arrays["stigma_text__vocabulary"]))
    np.savez(tmp_path / "tampered.npz", **arrays)
    with pytest.raises(AxesFileError, match="tampered.npz"):
        SCMAxes.load(tmp_path / "tampered.npz")


def test_every_lexicon_form_of_a_sentence_is_known_to_the_stigma_data(tmp_path):
    table = fixture_rows().head(2)
    table.loc[1, "sentence"] = "Lunatics, said the man with depression, are everywhere."
    table.loc[1, "matched_term"], table.loc[1, "form"] = "Lunatics", "slang"
    table.loc[0, "form"] = "diagnosis_extra"  # not a lexicon form: only what the matcher finds counts
    path = tmp_path / "stigma_labelled.csv"
    table.to_csv(path, index=False)
    data = load_stigma_data("en", path)
    # the forms, then the word of each slang mention (the mask erases it; the text head reads it)
    assert data.mention_forms[1] == ("diagnosis", "slang", "slang:lunatics")
    forms = [form for form in data.mention_forms[0] if not form.startswith(SLANG_WORD)]
    assert set(forms) <= set(FORMS) and "diagnosis_extra" not in forms
    assert data.subset(np.array([1])).mention_forms == [("diagnosis", "slang", "slang:lunatics")]


def test_form_indicators_mark_each_sentences_forms_in_the_order_given():
    names = ("diagnosis", "slang", "person")
    indicators = form_indicators([("slang",), (), ("person", "diagnosis", "treatment")], names, 3)
    np.testing.assert_array_equal(indicators, [[0, 1, 0], [0, 0, 0], [1, 0, 1]])
    np.testing.assert_array_equal(form_indicators(None, names, 2), np.zeros((2, 3)))
    with pytest.raises(ValueError, match="2 form lists for 3 sentences"):
        form_indicators([(), ()], names, 3)


def test_a_stigma_head_that_reads_forms_scores_the_same_masked_text_by_its_mention_form(labelled, tmp_path):
    """The mask makes a slur and a diagnosis name one phrase; a head trained where slurs stigmatise more tells
    them apart by the form, and keeps the forms it reads through save and load."""
    X = encode(labelled.texts)
    rows = labelled.rows(("train", "dev"))
    # a labelling where only the slang-form sentences stigmatise: the words cannot tell, the form can
    labelled.stigmatising = np.array(["slang" in forms for forms in labelled.mention_forms])
    head = fit_stigma_head(X, labelled, rows, written_weight=1.0, forms=FORMS)
    axes = judging_axes(X, labelled.stigmatising, head)
    axes.attach_judgement(axes.judgement_["gate"], axes.judgement_["dimensions"], head, stigma_forms=FORMS)
    text = ["Keep this condition away from our kids."] * 2
    column = OUTPUT_COLUMNS.index(STIGMA_COLUMN)
    scores = axes.measure(encode(text), text, [("slang",), ("diagnosis",)])[:, column]
    assert scores[0] > 0.5 > scores[1]
    unknown = axes.measure(encode(text[:1]), text[:1])[:, column]  # no forms known: read as no mention
    assert unknown[0] == pytest.approx(axes.measure(encode(text[:1]), text[:1], [()])[0, column])
    axes.save(tmp_path / "axes.npz")
    loaded = SCMAxes.load(tmp_path / "axes.npz")
    assert loaded.stigma_forms_ == FORMS
    np.testing.assert_array_equal(loaded.measure(encode(text), text, [("slang",), ("diagnosis",)])[:, column], scores)
    with pytest.raises(ValueError, match="go with a stigma head"):
        axes.attach_judgement(axes.judgement_["gate"], axes.judgement_["dimensions"], None, stigma_forms=FORMS)


def test_a_judgement_target_gives_the_non_stigmatising_judgements_their_own_class(labelled, tmp_path):
    """Supportive and other non-stigmatising judgements are a class of their own; the score is still the
    probability of the stigmatising class, and the classes travel with the axes file."""
    from corpus_audit.scm.axes import STIGMA_TARGETS
    from corpus_audit.scm.stigma import stigma_labels

    rows = labelled.rows(("train", "dev"))
    labelled.category = np.where(np.arange(len(labelled)) % 3 == 0, JUDGEMENT, labelled.category)
    labels = stigma_labels(labelled, rows, "judgement")
    expected = np.where(labelled.stigmatising[rows], 2, np.where(labelled.category[rows] == JUDGEMENT, 1, 0))
    np.testing.assert_array_equal(labels, expected)
    assert set(labels) == {0, 1, 2}
    np.testing.assert_array_equal(stigma_labels(labelled, rows), labelled.stigmatising[rows].astype(int))
    by_category = stigma_labels(labelled, rows, "category")  # the gate category's index, stigmatising last
    np.testing.assert_array_equal(by_category, np.where(labelled.stigmatising[rows], len(CATEGORIES),
                                                        [CATEGORIES.index(c) for c in labelled.category[rows]]))
    assert STIGMA_TARGETS["category"] == (*CATEGORIES, "stigmatising")
    with pytest.raises(ValueError, match="unknown stigma target"):
        stigma_labels(labelled, rows, "ternary")
    X = encode(labelled.texts)
    head = fit_stigma_head(X, labelled, rows, 1.0, target="judgement")
    text_head = fit_stigma_text_head(labelled, rows, 1.0, target="judgement")
    assert head.classes == text_head.classes == STIGMA_TARGETS["judgement"]
    axes = judging_axes(X, labelled.stigmatising, head)
    axes.attach_judgement(axes.judgement_["gate"], axes.judgement_["dimensions"], head, text_head)
    texts, column = labelled.texts[:6], OUTPUT_COLUMNS.index(STIGMA_COLUMN)
    scores = axes.measure(X[:6], texts)
    np.testing.assert_allclose(scores[:, column], (head.predict_proba(X[:6])[:, 2]
                                                   + text_head.predict_proba(texts)[:, 2]) / 2, rtol=1e-5)
    axes.save(tmp_path / "axes.npz")
    loaded = SCMAxes.load(tmp_path / "axes.npz")
    assert loaded.stigma_head.classes == loaded.stigma_text_head.classes == STIGMA_TARGETS["judgement"]
    np.testing.assert_array_equal(loaded.measure(X[:6], texts), scores)
    binary_text = fit_stigma_text_head(labelled, rows, 1.0)
    with pytest.raises(ValueError, match="classes of its stigma head"):
        axes.attach_judgement(axes.judgement_["gate"], axes.judgement_["dimensions"], head, binary_text)


def test_axes_files_without_stigma_classes_hold_a_binary_head(labelled, tmp_path):
    import json

    X = encode(labelled.texts)
    axes = judging_axes(X, labelled.stigmatising, fit_stigma_head(X, labelled, labelled.rows(("train", "dev")), 1.0))
    axes.save(tmp_path / "axes.npz")
    with np.load(tmp_path / "axes.npz", allow_pickle=False) as data:
        arrays = {name: data[name] for name in data.files}
    header = json.loads(str(arrays["header"]))
    for name, classes in (("old", None), ("odd", ["calm", "stigmatising"])):
        header["stigma_classes"] = classes
        np.savez(tmp_path / f"{name}.npz", **{**arrays, "header": np.array(json.dumps(header))})
    assert SCMAxes.load(tmp_path / "old.npz").stigma_head.classes == STIGMA_CLASSES
    with pytest.raises(AxesFileError, match="unknown stigma classes"):
        SCMAxes.load(tmp_path / "odd.npz")


def test_the_calibration_is_monotone_and_travels_with_the_axes(labelled, tmp_path):
    import json

    from corpus_audit.scm.axes import calibrated, stigma_probability
    from corpus_audit.scm.stigma import fit_stigma_calibration

    p = np.array([0.01, 0.2, 0.5, 0.7, 0.99])
    np.testing.assert_array_equal(calibrated(p, None), p)
    np.testing.assert_allclose(calibrated(p, (1.0, 0.0)), p)
    np.testing.assert_allclose(calibrated(np.array([0.5]), (2.0, 1.0)), [1 / (1 + np.exp(-1.0))])
    assert np.all(np.diff(calibrated(p, (2.1, 1.0))) > 0)  # an order never changes
    rng = np.random.default_rng(0)
    truth = rng.random(400) < 0.3
    scores = np.clip(np.where(truth, 0.38, 0.25) + 0.06 * rng.normal(size=400), 0.01, 0.49)  # all below 0.5
    slope, intercept = fit_stigma_calibration(scores, truth, np.ones(400))
    fixed = calibrated(scores, (slope, intercept))
    assert slope > 0 and roc_auc_score(truth, fixed) == pytest.approx(roc_auc_score(truth, scores))
    # balanced: 0.5 now separates the classes (most stigmatising above, most others below), which it did not
    assert (fixed[truth] >= 0.5).mean() > 0.8 and (fixed[~truth] < 0.5).mean() > 0.8 and (scores >= 0.5).sum() == 0
    X = encode(labelled.texts)
    rows = labelled.rows(("train", "dev"))
    head = fit_stigma_head(X, labelled, rows, 1.0)
    axes = judging_axes(X, labelled.stigmatising, head)
    axes.attach_judgement(axes.judgement_["gate"], axes.judgement_["dimensions"], head,
                          stigma_calibration=(slope, intercept))
    column = OUTPUT_COLUMNS.index(STIGMA_COLUMN)
    expected = calibrated(stigma_probability(head, None, X[:6], None, None), (slope, intercept))
    np.testing.assert_allclose(axes.measure(X[:6])[:, column], expected, rtol=1e-5)
    axes.save(tmp_path / "axes.npz")
    loaded = SCMAxes.load(tmp_path / "axes.npz")
    assert loaded.stigma_calibration_ == pytest.approx((slope, intercept))
    np.testing.assert_array_equal(loaded.measure(X[:6]), axes.measure(X[:6]))
    with np.load(tmp_path / "axes.npz", allow_pickle=False) as data:
        arrays = {name: data[name] for name in data.files}
    header = json.loads(str(arrays["header"]))
    header["stigma_calibration"] = [1.0, "nan"]
    np.savez(tmp_path / "odd.npz", **{**arrays, "header": np.array(json.dumps(header))})
    with pytest.raises(AxesFileError, match="odd.npz"):
        SCMAxes.load(tmp_path / "odd.npz")


def test_mention_forms_are_the_forms_once_then_each_slang_word():
    assert mention_forms(["slang", "diagnosis", "slang", "slang"], ["Retard", "depression", "mad", "retard"]) == \
        ("diagnosis", "slang", "slang:mad", "slang:retard")
    assert mention_forms([], []) == ()
    with pytest.raises(ValueError, match="2 forms for 1 mentions"):
        mention_forms(["slang", "slang"], ["mad"])
