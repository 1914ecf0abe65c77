"""A user's stigma score: the stigma head of an axes file refitted on the user's reviewed sentences
(``corpus-audit axes refit``), the FineWeb-Edu recipe (a sample labelled, a small scorer over the whole corpus) for a
user's own corpus.

The refit starts where the shipped score started: the labelled data of the language (``templates/<lang>/
stigma_labelled.csv`` and the functional suite's train and dev cases, read, never written) and the settings of the
axes' recipe (``fit_stigma`` of scm/recipes.py: the same heads, features (a stance branch's, where the axes read
one), targets and calibration as the shipped head). The reviewed sentences join
its training sentences, masked as an audit masks them, each counting ``weight`` times (as that many copies: the
logistic heads weigh a repeated row as a weighted one). Everything else of the axes (projection, judgement gate,
dimension heads) is kept as it is.

Whether it got better is measured on the reviewed sentences themselves, by cross-validation with the documents as
folds (no document's sentences on both sides): each fold's sentences are scored by heads fitted without them, and
the ROC AUC of those out-of-fold scores is set beside the AUC of the original score on the same sentences, with a
paired document-bootstrap interval of the difference. The final head is also measured on the labelled data's
held-out real sentences (:func:`~corpus_audit.scm.stigma.stigma_validity`), beside the original's, so that a gain
on the user's corpus is not paid for elsewhere unseen.
"""

from __future__ import annotations

import copy
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from corpus_audit.common.errors import UserError
from corpus_audit.common.resources import sha256_file
from corpus_audit.scm.axes import SCMAxes, calibrated, stigma_probability
from corpus_audit.scm.recipes import Recipe, StigmaSettings, fit_stigma
from corpus_audit.scm.stigma import StigmaData, bootstrap_auc, load_stigma_data, resampled_rows, stigma_validity
from corpus_audit.scm.suite import load_suite, suite_path
from corpus_audit.score.cascade import TriageCalibration, calibrate_triage

#: How many times a reviewed sentence counts beside one of the labelled data: a hundred reviewed sentences then
#: weigh about a tenth of the training data. Fixed before any refit was run, not tuned (docs/stigma_score.md,
#: "Refitting on your reviews", measures 5 and 20 on the mixed demo).
DEFAULT_WEIGHT = 5
DEFAULT_FOLDS = 5
#: Fewest reviewed sentences of each class for a cross-validated AUC.
MIN_CLASS = 5
#: The axes metadata key that says the stigma head was refitted, on what, and how well it did.
REFIT_KEY = "stigma_refit"
#: Precision of the top k reviewed sentences, where there are at least 2k of them.
TOP_K = (10, 20)

Encode = Callable[[list[str]], np.ndarray]


def recipe_of(axes: SCMAxes) -> Recipe:
    """The recipe the axes were trained with, from their metadata (the settings as they were then, whatever the
    package's recipes say now). :class:`UserError` for axes without a stigma head or without their recipe."""
    recorded = dict(axes.metadata_.get("recipe") or {})
    known = {field.name for field in fields(Recipe)}
    if axes.stigma_head is None or not recorded or not {"name", "templates", "head"} <= set(recorded):
        raise UserError("these axes carry no stigma head (or no record of their recipe): train them with "
                        "`corpus-audit axes train` first")
    settings = tuple(StigmaSettings(**entry) for entry in recorded.get("stigma_heads") or ())
    return Recipe(**{**{name: value for name, value in recorded.items() if name in known}, "stigma_heads": settings})


def reviewed_stigma_data(table, lang: str) -> StigmaData:
    """The reviewed sentences of ``table`` (columns of :data:`~corpus_audit.audit.label_studio.REVIEWED_COLUMNS`)
    as labelled data of the stigma head, real sentences of the train split, masked and checked as
    :func:`~corpus_audit.scm.stigma.load_stigma_data` masks and checks the shipped ones."""
    rows = table.assign(uid=[f"reviewed-{number}" for number in range(len(table))], source="real", split="train")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "reviewed.csv"
        rows.to_csv(path, index=False)
        return load_stigma_data(lang, path)


def joined(labelled: StigmaData, reviewed: StigmaData, rows: np.ndarray, weight: int) -> StigmaData:
    """The labelled sentences, then ``rows`` of the reviewed ones, each ``weight`` times."""
    return labelled.join(reviewed.subset(np.repeat(np.asarray(rows, dtype=int), weight)))


def unseen_dev_axes(axes: SCMAxes, encode: Encode, lang: str, data: StigmaData,
                    calibration: tuple[float, float] | None) -> SCMAxes:
    """A copy of ``axes`` whose stigma heads are fitted by their recipe on the train sentences of ``data`` alone,
    with ``calibration`` (the score's, fitted on exactly such heads' dev scores): what dev looks like to heads that
    never learnt from it, on which the cascade's triage is calibrated (``calibrate_triage``'s ``unseen_dev``)."""
    unseen = copy.deepcopy(axes)
    head, text_head, forms, _ = fit_stigma(recipe_of(axes), encode, lang, data.subset(data.rows(("train",))),
                                           axes.views_)
    unseen.attach_judgement(axes.judgement_.get("gate"), axes.judgement_["dimensions"], head, text_head, forms,
                            calibration)
    return unseen


@dataclass
class StigmaHeads:
    """What ``fit_stigma`` fits: the head, the text head (or None), the mention forms the head reads and the
    calibration."""

    head: Any
    text_head: Any
    forms: tuple[str, ...]
    calibration: tuple[float, float] | None

    def score(self, X: np.ndarray, texts: list[str], mention_forms: list[tuple[str, ...]]) -> np.ndarray:
        """The stigma score of embeddings ``X`` of ``texts``, as :meth:`SCMAxes.stigma_score` computes it."""
        return calibrated(stigma_probability(self.head, self.text_head, X, texts, mention_forms, self.forms),
                          self.calibration)


def fit_heads(recipe: Recipe, encode: Encode, lang: str, labelled: StigmaData, reviewed: StigmaData,
              rows: np.ndarray, weight: int, views: tuple[int, ...] = ()) -> StigmaHeads:
    """The recipe's stigma heads fitted on the labelled data and ``rows`` of the reviewed sentences, reading the
    stance view of rows that hold ``views`` (:meth:`~corpus_audit.scm.axes.SCMAxes.fit`)."""
    return StigmaHeads(*fit_stigma(recipe, encode, lang, joined(labelled, reviewed, rows, weight), views))


def paired_auc_difference(truth: np.ndarray, new: np.ndarray, old: np.ndarray, groups: np.ndarray,
                          n_boot: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    """AUC(new) - AUC(old) on the same sentences and its 95% percentile interval, whole documents (``groups``)
    resampled together for both scores (:func:`~corpus_audit.scm.stigma.resampled_rows`)."""
    from sklearn.metrics import roc_auc_score

    truth = np.asarray(truth, dtype=bool)
    values = [roc_auc_score(truth[rows], new[rows]) - roc_auc_score(truth[rows], old[rows])
              for rows in resampled_rows(truth, groups, n_boot, seed)]
    low, high = np.percentile(values, [2.5, 97.5])
    return float(roc_auc_score(truth, new) - roc_auc_score(truth, old)), float(low), float(high)


def _measures(truth: np.ndarray, score: np.ndarray, groups: np.ndarray) -> dict[str, Any]:
    auc, low, high = bootstrap_auc(truth, score, groups=groups)
    order = np.argsort(-score, kind="stable")
    return {"auc": auc, "auc_ci95": [low, high],
            "precision_at": {str(k): float(truth[order[:k]].mean()) for k in TOP_K if 2 * k <= len(truth)},
            "share_at_least_0.5": float((score >= 0.5).mean()),
            "precision_at_0.5": float(truth[score >= 0.5].mean()) if (score >= 0.5).any() else None,
            "recall_at_0.5": float((score[truth] >= 0.5).mean())}


def cross_validate(recipe: Recipe, encode: Encode, lang: str, labelled: StigmaData, reviewed: StigmaData,
                   original: np.ndarray, weight: int, folds: int = DEFAULT_FOLDS, seed: int = 0,
                   views: tuple[int, ...] = ()) -> dict[str, Any]:
    """Out-of-fold stigma scores of the reviewed sentences (folds of whole documents, stratified by label: each
    fold scored by heads fitted on the labelled data and the other folds) against ``original``, the original
    score of the same sentences: AUC with document-bootstrap intervals, the paired difference, the precision of
    the top k and at the 0.5 decision point. :class:`UserError` for fewer than :data:`MIN_CLASS` sentences of a
    class or fewer documents than two folds need."""
    from sklearn.model_selection import StratifiedGroupKFold

    truth = reviewed.stigmatising
    groups = reviewed.doc_id
    n_yes, n_no = int(truth.sum()), int((~truth).sum())
    documents = len(set(groups.tolist()))
    if min(n_yes, n_no) < MIN_CLASS or documents < 2:
        raise UserError(f"cross-validation needs at least {MIN_CLASS} reviewed sentences of each class, from 2 "
                        f"documents or more: found {n_yes} stigmatising and {n_no} not, from {documents} "
                        "document(s); review more sentences (or pass --folds 0 to refit without measuring)")
    splitter = StratifiedGroupKFold(n_splits=min(folds, documents, n_yes, n_no), shuffle=True, random_state=seed)
    refitted = np.full(len(reviewed), np.nan)
    X = encode(reviewed.texts)
    X = X[:, views[0]:] if len(views) > 1 else X
    for train, test in splitter.split(np.zeros(len(reviewed)), truth, groups):
        heads = fit_heads(recipe, encode, lang, labelled, reviewed, train, weight, views)
        refitted[test] = heads.score(X[test], [reviewed.texts[i] for i in test],
                                     [reviewed.mention_forms[i] for i in test])
    return {"n": len(reviewed), "n_stigmatising": n_yes, "n_documents": documents,
            "folds": splitter.get_n_splits(), "seed": seed,
            "refitted": _measures(truth, refitted, groups), "original": _measures(truth, original, groups),
            "auc_difference": dict(zip(("value", "low", "high"),
                                       paired_auc_difference(truth, refitted, original, groups)))}


@dataclass
class Refit:
    """The refitted axes and what the refit measured (the ``stigma_refit`` metadata of the axes)."""

    axes: SCMAxes
    report: dict[str, Any]


def refit_axes(base: str | Path, encode: Encode, reviewed_table, *, labelled_path: str | Path | None = None,
               weight: int = DEFAULT_WEIGHT, folds: int = DEFAULT_FOLDS, seed: int = 0,
               sources: list[str] | None = None) -> Refit:
    """The axes of ``base`` (an axes file) with their stigma head refitted on the labelled data
    (``labelled_path``, default the shipped ``templates/<lang>/stigma_labelled.csv``) and the reviewed sentences
    of ``reviewed_table`` (:func:`~corpus_audit.audit.label_studio.reviewed_sentences`) counting ``weight``
    times each; cross-validated on the reviewed sentences over ``folds`` folds of documents (0: not measured)
    and measured on the labelled data's held-out real sentences, beside the original axes. ``encode`` embeds with
    the axes' model. ``sources``: the files the reviewed sentences come from (recorded with their hashes)."""
    if weight < 1:
        raise UserError(f"the weight of a reviewed sentence is a whole number of at least 1, not {weight}")
    axes = SCMAxes.load(base)
    original = SCMAxes.load(base)
    recipe = recipe_of(axes)
    lang = str(axes.metadata_.get("lang"))
    labelled = load_stigma_data(lang, Path(labelled_path) if labelled_path else None)
    if suite_path(lang).is_file():  # the shipped score learnt from the suite's train and dev cases too
        labelled = labelled.join(load_suite(lang))
    views = axes.views_
    if not len(reviewed_table):
        raise UserError("no reviewed sentence to learn from: every task was left out (see the counts above)")
    reviewed = reviewed_stigma_data(reviewed_table, lang)
    X = encode(reviewed.texts)
    original_score = original.stigma_score(X, reviewed.texts, reviewed.mention_forms)
    report: dict[str, Any] = {
        "base_axes": str(Path(base).name), "base_axes_sha256": sha256_file(Path(base)),
        "labelled": labelled.path.name, "labelled_sha256": labelled.sha256, "n_labelled": len(labelled),
        "reviewed": [{"file": Path(source).name, "sha256": sha256_file(Path(source))} for source in sources or []],
        "n_reviewed": len(reviewed), "n_reviewed_stigmatising": int(reviewed.stigmatising.sum()),
        "weight": weight,
        "cross_validation": cross_validate(recipe, encode, lang, labelled, reviewed, original_score, weight,
                                           folds, seed, views) if folds else None}
    every_row = np.arange(len(reviewed))
    heads = fit_heads(recipe, encode, lang, labelled, reviewed, every_row, weight, views)
    axes.attach_judgement(axes.judgement_.get("gate"), axes.judgement_["dimensions"], heads.head, heads.text_head,
                          heads.forms, heads.calibration)
    # The base's cascade triage, calibrated again against the refitted score (its own head, where the score has no
    # text head; else the refitted text head), so that a large audit with these axes keeps the cascade.
    own_triage = original.judgement_.get("triage")
    if TriageCalibration.of(original) is not None and (axes.stigma_text_head is not None or own_triage is not None):
        unseen = unseen_dev_axes(axes, encode, lang, joined(labelled, reviewed, every_row, weight), heads.calibration)
        report["triage"] = calibrate_triage(axes, encode, labelled, TriageCalibration.of(original).target_recall,
                                            None if axes.stigma_text_head is not None else own_triage,
                                            unseen_dev=unseen).to_dict()
    held_out = labelled.rows(("heldout",), ("real",))
    if len(held_out) and len(set(labelled.stigmatising[held_out].tolist())) == 2:
        report["labelled_heldout"] = {"refitted": _heldout(encode, axes, lang, labelled),
                                      "original": _heldout(encode, original, lang, labelled)}
    axes.metadata_ = {**axes.metadata_, REFIT_KEY: report}
    return Refit(axes, report)


def _heldout(encode: Encode, axes: SCMAxes, lang: str, labelled: StigmaData) -> dict[str, Any]:
    measured = stigma_validity(encode, axes, lang, labelled)
    return {key: measured[key] for key in ("n", "n_stigmatising", "auc", "auc_ci95", "precision_at")}


def format_refit(report: dict[str, Any]) -> list[str]:
    """What the console says about a refit: the cross-validated AUCs on the reviewed sentences, refitted beside
    original, and the two on the labelled data's held-out sentences."""
    lines = [f"refitted the stigma score on {report['n_labelled']} labelled sentences ({report['labelled']}) and "
             f"{report['n_reviewed']} reviewed ones ({report['n_reviewed_stigmatising']} stigmatising), each "
             f"reviewed sentence counting {report['weight']} times"]
    cv = report.get("cross_validation")
    if cv:
        new, old, difference = cv["refitted"], cv["original"], cv["auc_difference"]
        lines.append(f"on your reviewed sentences, held out ({cv['folds']}-fold cross-validation over "
                     f"{cv['n_documents']} documents; {cv['n']} sentences, {cv['n_stigmatising']} stigmatising): "
                     f"ROC AUC {_auc(new)} refitted, {_auc(old)} original; difference "
                     f"{difference['value']:+.3f} (95% CI {difference['low']:+.3f} to {difference['high']:+.3f})")
        for k in new["precision_at"]:
            lines.append(f"  precision of the top {k}: {new['precision_at'][k]:.0%} refitted, "
                         f"{old['precision_at'][k]:.0%} original")
        lines.append(f"  at the decision point 0.5: precision {_share(new['precision_at_0.5'])} and recall "
                     f"{_share(new['recall_at_0.5'])} refitted, {_share(old['precision_at_0.5'])} and "
                     f"{_share(old['recall_at_0.5'])} original")
    heldout = report.get("labelled_heldout")
    if heldout:
        lines.append(f"on the {heldout['original']['n']} held-out sentences of the labelled data: ROC AUC "
                     f"{_auc(heldout['refitted'])} refitted, {_auc(heldout['original'])} original")
    return lines


def _auc(measured: dict[str, Any]) -> str:
    low, high = measured["auc_ci95"]
    return f"{measured['auc']:.3f} ({low:.3f}-{high:.3f})"


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"
