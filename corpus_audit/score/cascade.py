"""The cascade (issue 43): a cheap triage over every kept sentence, the encoder only where it matters.

The pattern of FineWeb-Edu's classifier: a scorer that costs a small fraction of the encoder reads every sentence,
and the encoder reads

* **the band**: every sentence whose triage score could put it among the stigmatising (triage stigma at or above
  the threshold calibrated for the axes, :class:`TriageCalibration`), for the ranking, ``clean`` and the filters;
* **a random sample**: each kept sentence independently with probability ``sample_share``, drawn from a hash of
  the sentence and the seed (so every engine and the datatrove steps draw the same sentences). The statistics
  (densities, mental vs physical, AQ-27 shares) read the band and the sample, each sentence weighted by how many
  kept sentences it stands for (``design_weight``: 1 in the band; outside it the sentences there over those of them
  sampled, about 1 / ``sample_share``), so they stay unbiased estimates of the full path's; their intervals come
  from a bootstrap of the weighted rows (stigma/stats/weighted.py) and are honest. What sits in the band
  (judgements, AQ-27 dimensions) is read whole, so its estimates are nearly the full path's; what spreads over every
  sentence is read mostly through the sample.
  Rank tests need a simple random sample and read the sample alone. The sample also measures the triage on this
  corpus: of its sentences the encoder scores stigmatising, the share the triage let into the band
  (:attr:`CascadeRecord.sample_recall`).

The triage scorer is a text head (scm/text_head.py: TF-IDF of word 1-2-grams): the stigma score's own where it has
one (English: half of the score, learnt from the same labels), put on the score's scale by the axes'
calibration; else one distilled from the full path's decisions (Spanish). A change of scorer is a re-distillation
and re-calibration (``scripts/calibrate_triage.py``), not a redesign; the axes carry the result. A sentence the encoder did not
read keeps the triage's stigma and no other score (NaN), and ``scored_by`` says which.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from corpus_audit.common.errors import UserError
from corpus_audit.scm.columns import OUTPUT_COLUMNS, STIGMA_COLUMN
from corpus_audit.score.cascade_options import AUTO_MIN_SENTENCES, CASCADE_MODES, DEFAULT_SAMPLE_SHARE

__all__ = ["AUTO_MIN_SENTENCES", "CASCADE_MODES", "DEFAULT_SAMPLE_SHARE", "DESIGN_WEIGHT_COLUMN", "CascadePlan",
           "CascadeRecord",
           "TriageCalibration", "calibrate_triage", "cascade_runs", "check_sample_share", "plan_cascade",
           "sample_draws", "triage_stigma"]

if TYPE_CHECKING:
    from collections.abc import Callable

    from corpus_audit.scm.axes import SCMAxes
    from corpus_audit.scm.stigma import StigmaData
    from corpus_audit.scm.text_head import TextHead

#: ``scored_by`` values.
ENCODER, TRIAGE = "encoder", "triage"
SCORED_BY_COLUMN, IN_SAMPLE_COLUMN = "scored_by", "in_sample"
#: How many kept sentences a sentence the encoder read stands for (NaN for the triage's alone): 1 in the band; for a
#: sampled sentence outside it, the sentences outside the band over those of them sampled (about 1 / sample_share).
DESIGN_WEIGHT_COLUMN = "design_weight"


def sample_draws(texts: Sequence[str], seed: int) -> np.ndarray:
    """A uniform number in [0, 1) per text, a function of the text and ``seed`` alone (BLAKE2b): the same sentence
    is in or out of the random sample whichever engine, batch or document it comes in."""
    salt = seed.to_bytes(8, "little", signed=True)
    return np.array([int.from_bytes(hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8,
                                                    salt=salt).digest(), "little") for text in texts],
                    dtype=np.float64) / 2.0 ** 64


@dataclass(frozen=True)
class TriageCalibration:
    """The triage threshold of a set of axes: the triage stigma at or above which the encoder reads a sentence,
    chosen so that ``target_recall`` of the labelled dev sentences the full path scores stigmatising pass it;
    ``measured`` says on what (``scripts/calibrate_triage.py``)."""

    threshold: float
    target_recall: float
    measured: dict[str, Any]

    @classmethod
    def of(cls, axes: SCMAxes) -> TriageCalibration | None:
        """The calibration saved in ``axes``, or None where they carry none (or no stigma text head)."""
        from corpus_audit.scm.axes import TRIAGE_KEY

        saved = axes.metadata_.get(TRIAGE_KEY)
        if axes.triage_head is None or not isinstance(saved, dict):
            return None
        return cls(float(saved["threshold"]), float(saved["target_recall"]), dict(saved.get("measured", {})))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def triage_stigma(axes: SCMAxes, texts: Sequence[str], forms: Sequence[Sequence[str]] | None = None) -> np.ndarray:
    """The triage's stigma of (masked, prepared) ``texts`` whose mentions have ``forms`` (as the stigma score takes
    them; None: not known): the stigma text head's p(stigmatising) through the axes' calibration (the stigma score's
    scale), or the probability of a triage head of the axes' own (distilled from the full path's decisions where the
    score has no text head)."""
    from corpus_audit.scm.axes import calibrated

    head = axes.triage_head
    probability = head.predict_proba(list(texts), forms)[:, -1]
    if head is axes.stigma_text_head:
        return calibrated(probability, getattr(axes, "stigma_calibration_", None))
    return probability


def calibrate_triage(axes: SCMAxes, encode: Callable[[list[str]], np.ndarray], data: StigmaData,
                     target_recall: float = 0.99, head: TextHead | None = None,
                     about: dict[str, Any] | None = None, unseen_dev: SCMAxes | None = None) -> TriageCalibration:
    """Give ``axes`` their triage (``head``: one of their own; None: the stigma text head) with the highest
    threshold that lets ``target_recall`` of the dev sentences of ``data`` (real, written and suite: never the
    held-out ones) that the full path (``encode`` and the axes) scores stigmatising **or** that are labelled
    stigmatising into the band (the labelled ones too: the ranking is judged against the labels, and a labelled
    sentence the full path ranks high without flagging it drops to the triage's score outside the band); measure it
    on the held-out real sentences (recall of the full path's stigmatising ones and of the labelled ones, band
    share). ``about``: more to record in ``measured``.

    ``unseen_dev``: the same axes with stigma heads that never learnt from dev (fitted on train alone, with the
    score's own calibration, which is fitted on dev scores of exactly such heads): dev is then scored by them, both
    the full path's decisions and the triage. The shipped heads learn from dev too, so their dev scores are
    in-sample, and a threshold set on them lets fewer unseen stigmatising sentences into the band than it promises."""
    from corpus_audit.stigma.judgement import STIGMA_DECISION

    axes.attach_triage({"threshold": 1.0, "target_recall": target_recall}, head)  # the threshold is set below
    if unseen_dev is not None:
        unseen_dev.attach_triage({"threshold": 1.0, "target_recall": target_recall}, head)

    def measure(rows: np.ndarray, threshold: float | None) -> tuple[float, dict[str, Any]]:
        scorer = unseen_dev if threshold is None and unseen_dev is not None else axes
        texts = [data.texts[i] for i in rows]
        forms = [data.mention_forms[i] for i in rows]
        flagged = scorer.stigma_score(encode(texts), texts, forms) >= STIGMA_DECISION
        labelled = data.stigmatising[rows].astype(bool)
        positive = flagged | labelled
        triage = triage_stigma(scorer, texts, forms)
        if threshold is None:  # no stigmatising dev sentence to calibrate on: the encoder reads everything
            threshold = float(np.quantile(triage[positive], 1.0 - target_recall, method="lower")) \
                if positive.any() else 0.0
        band = triage >= threshold
        return threshold, {"sentences": len(rows), "full_path_stigmatising": int(flagged.sum()),
                           "recall_of_full_path": float(band[flagged].mean()) if flagged.any() else None,
                           "labelled_stigmatising": int(labelled.sum()),
                           "recall_of_labelled": float(band[labelled].mean()) if labelled.any() else None,
                           "band_share": float(band.mean())}

    threshold, on_dev = measure(np.flatnonzero(data.split == "dev"), None)
    _, on_heldout = measure(data.rows(("heldout",), ("real",)), threshold)
    calibration = TriageCalibration(threshold, target_recall, {"dev": on_dev, "heldout_real": on_heldout,
                                                               "dev_scored_by": "heads fitted on train alone"
                                                               if unseen_dev is not None else "the shipped heads",
                                                               **(about or {})})
    axes.attach_triage(calibration.to_dict(), head)
    return calibration


def cascade_runs(mode: str, n_sentences: int) -> bool:
    """Whether ``--cascade mode`` runs the cascade over ``n_sentences`` distinct sentences."""
    if mode not in CASCADE_MODES:
        raise UserError(f"--cascade must be one of {', '.join(CASCADE_MODES)}, not {mode!r}")
    return mode == "on" or (mode == "auto" and n_sentences >= AUTO_MIN_SENTENCES)


def check_sample_share(share: float) -> float:
    if not 0.0 < share <= 1.0:
        raise UserError(f"--cascade-sample must be in (0, 1], not {share}")
    return share


@dataclass
class CascadePlan:
    """Which sentences the encoder reads: ``band`` (triage stigma >= the calibration's threshold) or ``sample`` (the random
    sample); ``triage`` holds the triage stigma of every sentence."""

    triage: np.ndarray
    band: np.ndarray
    sample: np.ndarray
    calibration: TriageCalibration
    sample_share: float

    @property
    def encoded(self) -> np.ndarray:
        return self.band | self.sample

    def design_weights(self, strata: np.ndarray | None = None) -> np.ndarray:
        """:data:`DESIGN_WEIGHT_COLUMN` of every sentence: 1 in the band; for the sample outside it, the sentences
        outside the band over those of them sampled, within each value of ``strata`` (e.g. the illness type; None:
        one stratum), about 1 / ``sample_share`` (post-stratified, as those numbers are known: the chance size of the
        sample then leaves the estimates, and each stratum's weights add up to its sentences); NaN for the sentences
        the encoder does not read, and for a stratum's sentences outside the band when none of them was sampled."""
        strata = np.zeros(len(self.band), dtype=int) if strata is None else np.asarray(strata)
        weights = np.where(self.band, 1.0, np.nan)
        for stratum in np.unique(strata):
            outside = (strata == stratum) & ~self.band
            sampled = outside & self.sample
            if sampled.any():
                weights[sampled] = outside.sum() / sampled.sum()
        return weights

    def for_encoder(self, texts: Sequence[str], forms: Sequence[Any] | None) -> tuple[list[str], list[Any] | None]:
        """The texts (and their forms, where given) the encoder reads, in order: what :meth:`combine` takes the
        scores of."""
        chosen = np.flatnonzero(self.encoded)
        return [texts[i] for i in chosen], None if forms is None else [forms[i] for i in chosen]

    def combine(self, encoder_scores: np.ndarray) -> np.ndarray:
        """``OUTPUT_COLUMNS`` of every sentence from the encoder's scores of the :attr:`encoded` ones (in order):
        the encoder's where it read the sentence, else the triage stigma and NaN for the rest."""
        out = np.full((len(self.triage), len(OUTPUT_COLUMNS)), np.nan, dtype=np.float32)
        out[:, OUTPUT_COLUMNS.index(STIGMA_COLUMN)] = self.triage
        out[self.encoded] = encoder_scores
        return out

    def record(self, stigma: np.ndarray) -> CascadeRecord:
        """What ran, and the triage's recall on the random sample (``stigma``: the combined scores' stigma)."""
        positive = self.sample & (stigma >= 0.5)
        return CascadeRecord(sentences=len(self.triage), encoded=int(self.encoded.sum()), band=int(self.band.sum()),
                             sample=int(self.sample.sum()), sample_share=self.sample_share,
                             threshold=self.calibration.threshold,
                             target_recall=self.calibration.target_recall,
                             sample_stigmatising=int(positive.sum()),
                             sample_stigmatising_in_band=int((positive & self.band).sum()))


def plan_cascade(axes: SCMAxes, texts: Sequence[str], sample_share: float, seed: int,
                 forms: Sequence[Sequence[str]] | None = None) -> CascadePlan:
    """The plan for distinct prepared ``texts`` (whose mentions have ``forms``, as the stigma score takes them) with
    ``axes`` (which must carry a triage calibration)."""
    calibration = TriageCalibration.of(axes)
    if calibration is None:
        raise UserError("these axes carry no triage calibration, so the cascade cannot choose the sentences the "
                        "encoder must read: run with --cascade off (the shipped axes carry one)")
    triage = triage_stigma(axes, texts, forms)
    return CascadePlan(triage, triage >= calibration.threshold, sample_draws(texts, seed) < sample_share,
                       calibration, sample_share)


@dataclass(frozen=True)
class CascadeRecord:
    """``score.json``'s ``cascade``: how many distinct sentences the encoder read and why, and the triage measured
    on the random sample."""

    sentences: int
    encoded: int
    band: int
    sample: int
    sample_share: float
    threshold: float
    target_recall: float
    sample_stigmatising: int
    sample_stigmatising_in_band: int

    @property
    def triage_only(self) -> int:
        return self.sentences - self.encoded

    @property
    def sample_recall(self) -> tuple[float, float, float] | None:
        """The share of the sample's stigmatising sentences (encoder stigma >= 0.5) that the band holds, with a
        Wilson 95% interval; None without any."""
        from scipy.stats import binomtest  # not statsmodels': its import alone costs an audit a fifth of a second

        n, k = self.sample_stigmatising, self.sample_stigmatising_in_band
        if not n:
            return None
        interval = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
        return k / n, float(interval.low), float(interval.high)

    def describe(self) -> str:
        """The cascade in words, for the log and the report."""
        recall = self.sample_recall
        measured = (f"On the random sample, the band held {self.sample_stigmatising_in_band:,} of the "
                    f"{self.sample_stigmatising:,} sentences the encoder scores stigmatising ({recall[0]:.0%}, 95% CI "
                    f"{recall[1]:.0%}-{recall[2]:.0%}; the threshold was calibrated for {self.target_recall:.0%})."
                    if recall else "The random sample holds no sentence the encoder scores stigmatising, so the "
                                   "triage's recall on this corpus is not measured.")
        return (f"The encoder read {self.encoded:,} of {self.sentences:,} distinct sentences ({self.band:,} in the "
                f"triage band, triage stigma >= {self.threshold:.3f}; {self.sample:,} in the random sample, share "
                f"{self.sample_share:.0%}); {self.triage_only:,} have the triage's stigma score only. The statistics "
                f"and figures read the {self.encoded:,} the encoder read, each weighted by how many sentences it "
                f"stands for (1 in the band, about {1 / self.sample_share:.3g} outside it), so they estimate the full "
                f"path's without bias; the rank tests read the random sample alone. {measured}")

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "triage_only": self.triage_only, "sample_recall": self.sample_recall}

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> CascadeRecord | None:
        if not data:
            return None
        return cls(**{name: data[name] for name in cls.__dataclass_fields__})
