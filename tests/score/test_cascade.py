"""The cascade's parts (score/cascade.py): the random sample's draws, the plan, its record, the triage of the
shipped axes, and a triage head saved with axes."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from corpus_audit.common.errors import UserError
from corpus_audit.scm.axes import TRIAGE_CLASSES, SCMAxes, calibrated
from corpus_audit.scm.columns import OUTPUT_COLUMNS, STIGMA_COLUMN
from corpus_audit.scm.text_head import TextHead
from corpus_audit.score.cascade import (CascadePlan, CascadeRecord, TriageCalibration, cascade_runs,
                                        check_sample_share, plan_cascade, sample_draws, triage_stigma)
from corpus_audit.common.resources import SHIPPED_AXES_DIR

STIGMA = OUTPUT_COLUMNS.index(STIGMA_COLUMN)


def test_draws_depend_on_the_text_and_seed_alone_and_are_uniform():
    texts = [f"sentence number {i} about this condition" for i in range(20_000)]
    draws = sample_draws(texts, seed=0)
    assert ((draws >= 0) & (draws < 1)).all()
    # the same text draws the same number in any order or batch
    assert np.array_equal(sample_draws(texts[::-1], 0)[::-1], draws)
    assert np.array_equal(sample_draws(texts[5:9], 0), draws[5:9])
    assert not np.array_equal(sample_draws(texts, 1), draws)
    assert stats.kstest(draws, "uniform").pvalue > 0.001
    # a share of 10 % draws a binomial count
    assert stats.binomtest(int((draws < 0.1).sum()), len(texts), 0.1).pvalue > 0.001


def test_modes_and_shares():
    assert cascade_runs("on", 1) and not cascade_runs("off", 10**9)
    assert not cascade_runs("auto", 49_999) and cascade_runs("auto", 50_000)
    with pytest.raises(UserError, match="--cascade must be one of"):
        cascade_runs("maybe", 1)
    assert check_sample_share(1.0) == 1.0
    for share in (0.0, 1.5, -0.1):
        with pytest.raises(UserError, match="--cascade-sample"):
            check_sample_share(share)


def _plan() -> CascadePlan:
    calibration = TriageCalibration(0.3, 0.99, {})
    triage = np.array([0.1, 0.5, 0.2, 0.9, 0.05])
    return CascadePlan(triage, triage >= 0.3, np.array([True, False, False, True, False]), calibration, 0.4)


def test_combine_keeps_the_encoders_scores_where_it_read_and_the_triage_stigma_elsewhere():
    plan = _plan()
    assert plan.encoded.tolist() == [True, True, False, True, False]
    encoder = np.arange(3 * len(OUTPUT_COLUMNS), dtype=np.float32).reshape(3, -1)
    out = plan.combine(encoder)
    assert np.array_equal(out[plan.encoded], encoder)
    assert np.isnan(np.delete(out[~plan.encoded], STIGMA, axis=1)).all()
    np.testing.assert_allclose(out[~plan.encoded, STIGMA], [0.2, 0.05])


def test_design_weights_say_how_many_sentences_each_read_one_stands_for():
    plan = _plan()  # band: rows 1, 3; outside it rows 0, 2, 4, of which row 0 is sampled
    np.testing.assert_allclose(plan.design_weights(), [3.0, 1.0, np.nan, 1.0, np.nan])
    # within strata: rows 0 and 2 (the sampled 0 stands for both), rows 1, 3, 4 (4 is outside, none sampled)
    strata = np.array(["mental", "physical", "mental", "physical", "physical"])
    np.testing.assert_allclose(plan.design_weights(strata), [2.0, 1.0, np.nan, 1.0, np.nan])
    none_outside = CascadePlan(plan.triage, plan.band, np.array([False, False, False, True, False]),
                               plan.calibration, 0.4)
    np.testing.assert_allclose(none_outside.design_weights(), [np.nan, 1.0, np.nan, 1.0, np.nan])


def test_record_counts_and_recall_with_its_wilson_interval():
    plan = _plan()
    stigma = np.array([0.8, 0.9, 0.1, 0.7, 0.0])  # sample: rows 0 and 3, both stigmatising; row 0 not in the band
    record = plan.record(stigma)
    assert (record.sentences, record.encoded, record.band, record.sample, record.triage_only) == (5, 3, 2, 2, 2)
    assert (record.sample_stigmatising, record.sample_stigmatising_in_band) == (2, 1)
    share, low, high = record.sample_recall
    # Wilson interval of 1 of 2 by hand: centre (k + z^2/2) / (n + z^2), half width z sqrt(n p q + z^2/4) / (n + z^2)
    z = stats.norm.ppf(0.975)
    centre = (1 + z * z / 2) / (2 + z * z)
    half = z * np.sqrt(2 * 0.25 + z * z / 4) / (2 + z * z)
    assert share == 0.5 and low == pytest.approx(centre - half) and high == pytest.approx(centre + half)
    assert CascadeRecord.from_dict(record.to_dict()) == record
    assert "1 of the 2 sentences" in record.describe() and "read the 3 the encoder read" in record.describe()
    empty = CascadePlan(plan.triage, plan.band, np.zeros(5, bool), plan.calibration, 0.4).record(stigma)
    assert empty.sample_recall is None and "not measured" in empty.describe()


def test_the_shipped_english_triage_is_the_stigma_text_head_on_the_score_scale():
    axes = SCMAxes.load(SHIPPED_AXES_DIR / "en-default-minilm.npz")
    calibration = TriageCalibration.of(axes)
    assert calibration is not None and 0 < calibration.threshold < 0.5
    measured = calibration.measured["heldout_real"]
    assert measured["recall_of_full_path"] >= 0.95 and measured["band_share"] < 1
    texts = ["people with this condition are dangerous scum", "i was told i have this condition today"]
    expected = calibrated(axes.stigma_text_head.predict_proba(texts)[:, -1], axes.stigma_calibration_)
    np.testing.assert_allclose(triage_stigma(axes, texts), expected)
    # it reads each sentence's slang words as the score's text head does: a slur and a false friend apart
    masked = ["the man is this condition"] * 2
    forms = [("slang", "slang:retard"), ("slang", "slang:mad")]
    slur, angry = triage_stigma(axes, masked, forms)
    np.testing.assert_allclose([slur, angry], calibrated(axes.stigma_text_head.predict_proba(masked, forms)[:, -1],
                                                         axes.stigma_calibration_))
    assert slur > angry
    assert plan_cascade(axes, masked, 0.0, 0, forms).band.tolist() == list(
        triage_stigma(axes, masked, forms) >= calibration.threshold)


def test_the_default_axes_of_each_language_carry_a_triage():
    for name in ("en-default-minilm.npz", "es-default-e5-small-fp32.npz"):
        calibration = TriageCalibration.of(SCMAxes.load(SHIPPED_AXES_DIR / name))
        assert calibration is not None and calibration.measured["dev"]["recall_of_full_path"] >= 0.99, name


def test_a_triage_head_of_their_own_is_saved_with_the_axes_and_dropped_with_a_new_score(forms_axes, tmp_path):
    axes = SCMAxes.load(forms_axes)
    with pytest.raises(UserError, match="no triage calibration"):
        plan_cascade(axes, ["a sentence"], 0.1, 0)
    with pytest.raises(ValueError, match="need a triage head of their own"):
        axes.attach_triage({"threshold": 0.5, "target_recall": 0.99})
    texts = [f"{word} and this condition {i}" for word in ("cruel", "kind") for i in range(6)]
    head = TextHead(TRIAGE_CLASSES).fit(texts, np.array([w == "cruel" for w in ("cruel", "kind") for _ in range(6)],
                                                        dtype=int))
    axes.attach_triage({"threshold": 0.5, "target_recall": 0.99, "measured": {"dev": {"n": 1}}}, head)
    axes.save(tmp_path / "a.npz")
    loaded = SCMAxes.load(tmp_path / "a.npz")
    assert TriageCalibration.of(loaded) == TriageCalibration(0.5, 0.99, {"dev": {"n": 1}})
    np.testing.assert_allclose(triage_stigma(loaded, texts), head.predict_proba(texts)[:, 1])
    plan = plan_cascade(loaded, texts, 0.5, 0)
    assert plan.band.tolist() == [True] * 6 + [False] * 6
    judgement = loaded.judgement_
    loaded.attach_judgement(judgement.get("gate"), judgement["dimensions"], judgement["stigma"],
                            stigma_forms=loaded.stigma_forms_)
    assert loaded.triage_head is None and TriageCalibration.of(loaded) is None
