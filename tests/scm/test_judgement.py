"""The judgement gate's data, the neutral class of the axes, the instrument's columns and their persistence."""

from __future__ import annotations

import numpy as np
import pytest

from corpus_audit.scm.axes import SCMAxes
from corpus_audit.scm.columns import DIMENSION_CLASSES, OUTPUT_COLUMNS
from corpus_audit.scm.heads import ClassifierHead
from corpus_audit.scm.judgement import fill, load_judgement_data, sentence_folds
from corpus_audit.scm.templates import TemplateError
from corpus_audit.stigma.judgement import CATEGORIES, DIMENSION_COLUMNS, label_sentences

NEUTRAL = "category,sentence\n" + "".join(f"{category},{category} number {i} about {{illness}}.\n"
                                          for category in CATEGORIES[1:] for i in range(2))
JUDGEMENTS = "dimension,stance,strength,warmth,competence,sentence\n" + "".join(
    f"{dimension},{stance},2,low,none,{dimension} {stance} people with {{illness}} {i}.\n"
    for dimension in DIMENSION_COLUMNS for stance in ("endorse", "reject") for i in range(2)) + \
    "trait,endorse,3,none,low,People with {illness} are lazy.\n"


def write_folder(tmp_path, neutral: str = NEUTRAL, judgements: str = JUDGEMENTS):
    (tmp_path / "neutral.csv").write_text(neutral, encoding="utf-8")
    (tmp_path / "judgements.csv").write_text(judgements, encoding="utf-8")
    return tmp_path


def test_data_fill_the_mask_and_label_every_class(tmp_path):
    data = load_judgement_data("en", write_folder(tmp_path))
    assert len(data) == 10 + 9 * 4 + 1
    assert data.sentences[0] == "Self_disclosure number 0 about this condition."
    category, dimension, targets, strength = data.arrays()
    assert set(category) == set(range(len(CATEGORIES))) and set(dimension) == set(range(len(DIMENSION_CLASSES)))
    # neutral sentences are the axes' 0 class on both axes; "none" leaves an axis unlabelled (NaN)
    np.testing.assert_array_equal(targets[:10], 0)
    assert targets[10, 0] == -1 and np.isnan(targets[10, 1])
    assert DIMENSION_CLASSES[dimension[10]] == "Anger:endorse" and DIMENSION_CLASSES[dimension[12]] == "Anger:reject"
    assert dimension[-1] == 0 and strength[-1] == 3 and targets[-1, 1] == -1
    assert fill("{illness} is common.", "esta afección") == "Esta afección is common."


@pytest.mark.parametrize("neutral, judgements, message", [
    (NEUTRAL + "gossip,Something about {illness}.\n", JUDGEMENTS, r"neutral.csv, line 12: category must be"),
    (NEUTRAL, JUDGEMENTS + "fear,maybe,2,low,none,x\n", r"judgements.csv, line 39: stance must be"),
    (NEUTRAL, JUDGEMENTS + "fear,endorse,5,low,none,x\n", r"line 39: strength must be 1, 2 or 3"),
    (NEUTRAL, JUDGEMENTS + "fear,endorse,2,cold,none,x\n", r"line 39: warmth must be high, low or none"),
    (NEUTRAL, JUDGEMENTS + "shame,endorse,2,low,none,x\n", r"line 39: unknown AQ-27 dimension 'shame'"),
    (NEUTRAL, JUDGEMENTS + "fear,endorse,2,low,none,\n", r"line 39: empty sentence"),
    ("category,sentence\nclinical,x {illness}\n", JUDGEMENTS, r"no training sentence for the categories"),
    (NEUTRAL, "dimension,stance,sentence\n", r"missing column\(s\) strength, warmth, competence"),
])
def test_bad_rows_name_file_and_line(tmp_path, neutral, judgements, message):
    with pytest.raises(TemplateError, match=message):
        load_judgement_data("en", write_folder(tmp_path, neutral, judgements))


def test_folds_partition_the_rows_and_spread_every_stratum(tmp_path):
    data = load_judgement_data("en", write_folder(tmp_path))
    folds = sentence_folds(data, 2, seed=3)
    assert sorted(np.concatenate(folds).tolist()) == list(range(len(data)))
    _, dimension, _, _ = data.arrays()
    for stratum in range(1, len(DIMENSION_CLASSES)):  # two sentences each: one per fold
        assert [int((dimension[fold] == stratum).sum()) for fold in folds] == [1, 1]


def neutral_plane(n: int = 60, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Embeddings whose first two coordinates are (warmth, competence); neutral sentences sit at the origin."""
    rng = np.random.default_rng(seed)
    points = [(w, c) for w in (-1, 1) for c in (-1, 1)] + [(0, 0)]
    X = np.vstack([np.r_[p, 0, 0] + rng.normal(scale=0.2, size=(n, 4)) for p in points])
    return X, np.repeat(np.array(points, dtype=float), n, axis=0)


@pytest.mark.parametrize("head", ["logistic", "mlp+logistic"])
def test_neutral_class_centres_neutral_text_and_keeps_poles(head):
    X, y = neutral_plane()
    binary = SCMAxes(head=head, hidden_units=16).fit(X[y[:, 0] != 0], y[y[:, 0] != 0])
    graded = SCMAxes(head=head, hidden_units=16, neutral=True).fit(X, y)
    origin = np.zeros((1, 4))
    corners = np.array([[1, 1, 0, 0], [-1, -1, 0, 0]], dtype=float)
    assert np.abs(graded.transform(origin)).max() < 0.3
    np.testing.assert_array_equal(np.sign(graded.transform(corners)), [[1, 1], [-1, -1]])
    # graded: halfway to a corner scores less than the corner, where a binary head saturates early
    halfway = graded.transform(corners / 2)
    assert np.all(np.abs(halfway) < np.abs(graded.transform(corners)))
    assert np.abs(graded.transform(origin + 0.3)).max() < np.abs(binary.transform(origin + 0.3)).max()


def test_neutral_head_needs_all_three_classes():
    X, y = neutral_plane()
    with pytest.raises(ValueError, match="low and neutral and high"):
        SCMAxes(head="logistic", neutral=True).fit(X[:240], y[:240])


def judging_axes(tmp_path) -> tuple[SCMAxes, np.ndarray]:
    X, y = neutral_plane(20)
    rng = np.random.default_rng(0)
    axes = SCMAxes(head="logistic", neutral=True).fit(X, y, metadata={"embedder_id": "toy"})
    categories = np.arange(len(X)) % len(CATEGORIES)
    dimensions = np.arange(len(X)) % len(DIMENSION_CLASSES)
    gate = ClassifierHead("logistic", CATEGORIES).fit(X + rng.normal(size=X.shape), categories)
    heads = ClassifierHead("mlp", DIMENSION_CLASSES).fit(X, dimensions, hidden_units=4)
    return axes.attach_judgement(gate, heads), X


def test_measure_gives_every_column_and_survives_save_and_load(tmp_path):
    axes, X = judging_axes(tmp_path)
    scores = axes.measure(X[:7])
    assert scores.shape == (7, len(OUTPUT_COLUMNS)) and scores.dtype == np.float32
    np.testing.assert_allclose(scores[:, :2], axes.transform(X[:7]))
    np.testing.assert_allclose(scores[:, 2:2 + len(CATEGORIES)].sum(axis=1), 1.0, rtol=1e-5)
    proba = axes.judgement_["dimensions"].predict_proba(X[:7])
    np.testing.assert_allclose(scores[:, 2 + len(CATEGORIES)], proba[:, 1] - proba[:, 2], rtol=1e-5)  # Anger
    axes.save(tmp_path / "judging.npz")
    again = SCMAxes.load(tmp_path / "judging.npz")
    assert again.judges and again.neutral
    np.testing.assert_array_equal(again.measure(X[:7]), scores)


def test_axes_without_gate_give_nan_judgement_columns():
    X, y = neutral_plane(20)
    axes = SCMAxes(head="polar", n_components=2).fit(X[y[:, 0] != 0], y[y[:, 0] != 0])
    scores = axes.measure(X[:3])
    assert not axes.judges and np.isfinite(scores[:, :2]).all() and np.isnan(scores[:, 2:]).all()


def test_labels_come_from_the_most_probable_category_and_the_strongest_dimension():
    probabilities = np.array([[0.5, 0.1, 0.1, 0.1, 0.1, 0.1], [0.1, 0.6, 0.1, 0.1, 0.05, 0.05],
                              [np.nan] * 6])
    scores = np.zeros((3, 9))
    scores[0, 4] = -0.8  # Segregation, rejected, beats a weaker endorsement
    scores[0, 1] = 0.5
    categories, tops = label_sentences(probabilities, scores)
    assert categories == ["judgement", "self_disclosure", None]
    assert tops == ["Segregation", None, None]


class _Recorder:
    """An embedding cache stand-in: 'embeds' a text as its row number in a lookup the test fills."""

    def __init__(self, rows: dict[str, np.ndarray]) -> None:
        self.rows, self.seen = rows, []

    def encode(self, texts):
        self.seen.extend(texts)
        return np.stack([self.rows[text] for text in texts])


class _Passthrough:
    """Axes whose measurements are the 'embeddings' themselves."""

    judges = True

    def measure(self, X, texts=None, forms=None):
        return np.asarray(X, dtype=np.float32)


def test_labelled_validity_masks_flips_rejections_and_scores_the_gate(tmp_path):
    import pandas as pd

    from corpus_audit.scm.evaluate import labelled_validity

    rows = [  # sentence, offsets, category, warmth, competence, stance, dimension
        ("People with flu are lazy.", "[[12, 15]]", "judgement", "none", "low", "endorse", "blame"),
        ("I'm not lazy, it's my anxiety.", "[[22, 29]]", "judgement", "none", "low", "reject", "blame"),
        ("I had the flu.", "[[10, 13]]", "self_disclosure", "", "", "", ""),
        ("Is flu common?", "[[3, 6]]", "question", "", "", "", ""),
    ]
    path = tmp_path / "labelled.csv"
    pd.DataFrame(rows, columns=["sentence", "term_offsets", "category", "warmth", "competence", "stance",
                                "dimension"]).to_csv(path, index=False)

    def measured(w, c, judgement, blame):
        out = np.zeros(len(OUTPUT_COLUMNS))
        out[:2] = w, c
        out[2:2 + len(CATEGORIES)] = [judgement] + [(1 - judgement) / 5] * 5
        out[2 + len(CATEGORIES) + list(DIMENSION_COLUMNS).index("Blame")] = blame
        return out

    cache = _Recorder({
        "People with this condition are lazy.": measured(0.0, -0.6, 0.9, 0.8),
        "I'm not lazy, it's my this condition.": measured(0.1, -0.4, 0.7, -0.5),  # sign wrong: net is high
        "I had the this condition.": measured(0.3, 0.4, 0.2, 0.0),
        "Is this condition common?": measured(0.0, 0.0, 0.1, 0.0),
    })
    result = labelled_validity(cache, _Passthrough(), path, "en")
    assert cache.seen[0] == "People with this condition are lazy."
    assert result["gate_auc"] == 1.0 and result["n_judgements"] == 2
    assert result["sign_accuracy"] == 0.5 and result["n_sign_labels"] == 2
    assert result["neutral_distance"] == pytest.approx(0.25)
    assert result["top_dimension"] == {"blame": {"blame": 2}}
    assert result["categories"]["judgement"] == {"judgement": 2}
    assert result["category_accuracy"] == 0.5  # the self-disclosure reads as a judgement, the question as a disclosure
