"""Cross-validated functional tests of SCM axes over held-out adjectives (Fraser et al. 2022).

Each fold trains on the sentences built from the training adjectives only and tests on evaluation
templates filled with the held-out adjectives, so no test adjective is ever seen in training. Test types
(``templates/<lang>/evaluation.csv``): ``basic`` and ``syntax`` (the sign on the adjective's dimension
must match its polarity), ``negation`` (the sign must be flipped) and ``composition`` (two adjectives:
the quadrant must be right).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from corpus_audit.common.resources import data_file
from corpus_audit.scm.lexicon import SeedAdjective, load_seed_lexicon, seed_lexicon_path
from corpus_audit.scm.columns import AXES, DIMENSION_CLASSES, OUTPUT_COLUMNS
from corpus_audit.scm.judgement import load_judgement_data, sentence_folds
from corpus_audit.scm.recipes import EmbeddingCache, Recipe, fit_recipe, training_sentences
from corpus_audit.scm.stigma import format_stigma, stigma_validity
from corpus_audit.scm.suite import format_suite, suite_path, suite_validity
from corpus_audit.stigma.judgement import CATEGORIES, DIMENSION_COLUMNS, JUDGEMENT
from corpus_audit.scm.templates import LabelledSentences, load_template_set, realise

TEST_TYPES = ("basic", "negation", "composition", "syntax")


def adjective_folds(adjectives: list[SeedAdjective], n_folds: int, seed: int = 0) -> list[list[SeedAdjective]]:
    """Split adjectives into ``n_folds`` test folds, stratified by dimension and polarity."""
    if n_folds < 2:
        raise ValueError("cross-validation needs at least 2 folds")
    rng = np.random.default_rng(seed)
    folds: list[list[SeedAdjective]] = [[] for _ in range(n_folds)]
    offset = 0
    for stratum in sorted({(a.dimension, a.polarity) for a in adjectives}):
        members = [a for a in adjectives if (a.dimension, a.polarity) == stratum]
        for position, index in enumerate(rng.permutation(len(members))):
            folds[(position + offset) % n_folds].append(members[index])
        offset += len(members)
    return folds


def correct_predictions(scores: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """A prediction is right when every labelled dimension has the target's sign (shape (n,) bool)."""
    labelled = targets != 0
    return np.all(~labelled | (np.sign(scores) == np.sign(targets)), axis=1)


def accuracy_by_test(scores: np.ndarray, data: LabelledSentences) -> dict[str, float]:
    right = correct_predictions(scores, data.targets)
    tests = np.asarray(data.test)
    return {test: float(right[tests == test].mean() * 100) for test in TEST_TYPES if (tests == test).any()}


@dataclass
class CrossValidationResult:
    recipe: str
    folds: list[dict[str, float]] = field(default_factory=list)

    def summary(self) -> dict[str, dict[str, float]]:
        return {
            test: {"mean": float(np.mean(values)), "sd": float(np.std(values, ddof=1)) if len(values) > 1 else 0.0}
            for test in TEST_TYPES
            if (values := [fold[test] for fold in self.folds if test in fold])
        }


def cross_validate(
    cache: EmbeddingCache,
    recipe: Recipe,
    lang: str,
    adjectives: list[SeedAdjective],
    n_folds: int = 5,
    seed: int = 0,
    eval_pairs_per_template: int = 100,
) -> CrossValidationResult:
    """Train/test ``recipe`` on ``n_folds`` adjective folds; accuracy (%) per test type and fold."""
    evaluation = load_template_set(lang, "evaluation")
    result = CrossValidationResult(recipe.name)
    judgement = load_judgement_data(lang) if recipe.judgement else None
    for fold_index, test_adjectives in enumerate(adjective_folds(adjectives, n_folds, seed)):
        held_out = {a.word for a in test_adjectives}
        train_adjectives = [a for a in adjectives if a.word not in held_out]
        train = training_sentences(recipe, lang, train_adjectives, seed=seed, exclude=frozenset(held_out))
        test = realise(evaluation, test_adjectives, pairs_per_template=eval_pairs_per_template, seed=seed + fold_index)
        axes = fit_recipe(recipe, cache.encode, lang, train, judgement, seed=seed, views=cache.views)
        result.folds.append(accuracy_by_test(axes.transform(cache.encode(test.sentences)), test))
    return result


def judgement_cross_validation(cache: EmbeddingCache, recipe: Recipe, lang: str, adjectives: list[SeedAdjective],
                               n_folds: int = 5, seed: int = 0) -> dict[str, Any]:
    """The neutral test, the judgement gate, the graded test and the AQ-27 constructs over held-out sentences.

    Each fold trains ``recipe`` without a fifth of the sentences of ``neutral.csv`` and ``judgements.csv``
    (stratified by category and dimension x stance) and scores them; the predictions of all folds are pooled:

    - ``neutral_distance`` / ``judgement_distance``: mean distance from the centre of the plane, sqrt(w^2 + c^2),
      of held-out neutral sentences and of held-out judgements (neutral text should sit near 0);
    - ``gate_auc``: ROC AUC of the judgement strength, judgements vs neutral sentences; ``category_accuracy``;
    - ``strength_spearman``: rank correlation of the written strength (1-3) with the largest absolute dimension
      score of the judgements (the graded test);
    - ``dimensions``: per dimension, ROC AUC of its score for the sentences that endorse it vs every other held-out
      sentence (``auc``), and for endorse vs reject (``stance_auc``);
    - ``top_dimension_accuracy``: share of held-out dimension judgements whose largest absolute score is their
      dimension.
    """
    from scipy.stats import spearmanr
    from sklearn.metrics import roc_auc_score

    if not recipe.judgement:
        raise ValueError(f"recipe {recipe.name!r} has no judgement gate to evaluate")
    judgement = load_judgement_data(lang)
    templates = training_sentences(recipe, lang, adjectives, seed=seed)
    predictions = np.full((len(judgement), len(OUTPUT_COLUMNS)), np.nan)
    for test in sentence_folds(judgement, n_folds, seed):
        train = np.setdiff1d(np.arange(len(judgement)), test)
        axes = fit_recipe(recipe, cache.encode, lang, templates, judgement.subset(train), seed=seed,
                          views=cache.views)
        texts = [judgement.sentences[i] for i in test]
        predictions[test] = axes.measure(cache.encode(texts), texts)
    category, dimension, _, strength = judgement.arrays()
    is_judgement = category == CATEGORIES.index(JUDGEMENT)
    distance = np.hypot(predictions[:, 0], predictions[:, 1])
    probabilities = predictions[:, len(AXES):len(AXES) + len(CATEGORIES)]
    scores = predictions[:, len(AXES) + len(CATEGORIES):len(AXES) + len(CATEGORIES) + len(DIMENSION_COLUMNS)]
    result: dict[str, Any] = {
        "n_neutral": int((~is_judgement).sum()), "n_judgements": int(is_judgement.sum()),
        "neutral_distance": float(distance[~is_judgement].mean()),
        "judgement_distance": float(distance[is_judgement].mean()),
        "gate_auc": float(roc_auc_score(is_judgement, probabilities[:, 0])),
        "category_accuracy": float((probabilities.argmax(axis=1) == category).mean()),
        "strength_spearman": float(spearmanr(strength[is_judgement], np.abs(scores[is_judgement]).max(axis=1))[0]),
        "dimensions": {},
    }
    classes = np.asarray(DIMENSION_CLASSES)
    for index, name in enumerate(DIMENSION_COLUMNS):
        endorse = dimension == int(np.flatnonzero(classes == f"{name}:endorse")[0])
        reject = dimension == int(np.flatnonzero(classes == f"{name}:reject")[0])
        result["dimensions"][name] = {
            "n_endorse": int(endorse.sum()), "n_reject": int(reject.sum()),
            "auc": float(roc_auc_score(endorse, scores[:, index])),
            "stance_auc": float(roc_auc_score(endorse[endorse | reject], scores[endorse | reject, index])),
        }
    with_dimension = dimension > 0
    truth = (dimension[with_dimension] - 1) // 2  # classes: none, then (endorse, reject) per dimension
    result["top_dimension_accuracy"] = float((np.abs(scores[with_dimension]).argmax(axis=1) == truth).mean())
    result["mean_dimension_auc"] = float(np.mean([d["auc"] for d in result["dimensions"].values()]))
    return result


def generalisation(cache: EmbeddingCache, axes, lang: str, seed: int = 0) -> dict[str, float]:
    """Sentences about real groups (``templates/<lang>/generalisation.csv`` with the illness groups of
    ``groups_mental.csv`` / ``groups_physical.csv``) and adjectives outside every training lexicon
    (``lexicons/<lang>/scm_generalisation.csv``): does the point keep the adjective's pole, and does it
    stay put when a mental illness is swapped for a physical one?"""
    adjectives = load_seed_lexicon(data_file("lexicons", lang, "scm_generalisation.csv"))
    realised = {
        group: realise(load_template_set(lang, "generalisation", subjects=f"groups_{group}"), adjectives, seed=seed)
        for group in ("mental", "physical")
    }
    scores = {group: axes.transform(cache.encode(data.sentences)) for group, data in realised.items()}
    targets = realised["mental"].targets
    axis = np.argmax(targets != 0, axis=1)  # one adjective per sentence: its dimension
    rows = np.arange(len(targets))
    on_axis = {group: scores[group][rows, axis] for group in scores}
    return {
        "n_sentences": int(len(targets) * 2),
        "accuracy_mental": float(correct_predictions(scores["mental"], targets).mean() * 100),
        "accuracy_physical": float(correct_predictions(scores["physical"], targets).mean() * 100),
        "same_pole_mental_vs_physical": float((np.sign(on_axis["mental"]) == np.sign(on_axis["physical"])).mean() * 100),
        "mean_abs_shift_mental_vs_physical": float(np.abs(on_axis["mental"] - on_axis["physical"]).mean()),
        "mean_abs_score": float(np.abs(np.concatenate(list(on_axis.values()))).mean()),
        # Signed bias of the instrument itself: same sentence, mental minus physical group.
        "warmth_shift_mental_minus_physical": float((scores["mental"][:, 0] - scores["physical"][:, 0]).mean()),
        "competence_shift_mental_minus_physical": float((scores["mental"][:, 1] - scores["physical"][:, 1]).mean()),
    }


def evaluate_model(embedder, lang: str, recipes: dict[str, None] | list[str], n_folds: int = 5,
                   seed: int = 0, embedding_cache: str | Path | None = None,
                   labelled: list[str | Path] = ()) -> dict:
    """Cross-validation and generalisation for each recipe, sharing one embedding cache (kept on disk at
    ``embedding_cache`` when given); for a recipe with the judgement gate also :func:`judgement_cross_validation`;
    each recipe's axes (trained on everything) on every ``labelled`` file of real sentences; and, for axes with
    the stigma head, its score on the held-out real sentences (:func:`~corpus_audit.scm.stigma.stigma_validity`)
    and on the functional suite's test cases, per function (:func:`~corpus_audit.scm.suite.suite_validity`)."""
    from corpus_audit.scm.recipes import get_recipe, train_axes

    cache = EmbeddingCache(embedder, embedding_cache)
    adjectives = load_seed_lexicon(seed_lexicon_path(lang))
    report = {"embedder_id": embedder.model_id, "lang": lang, "folds": n_folds, "seed": seed, "recipes": {}}
    for name in recipes:
        recipe = get_recipe(name)
        result = cross_validate(cache, recipe, lang, adjectives, n_folds=n_folds, seed=seed)
        axes = train_axes(cache, lang=lang, recipe=name, seed=seed)
        report["recipes"][name] = {
            "cross_validation": result.summary(),
            "per_fold": result.folds,
            "generalisation": generalisation(cache, axes, lang, seed=seed),
            "judgement": judgement_cross_validation(cache, recipe, lang, adjectives, n_folds=n_folds, seed=seed)
            if recipe.judgement else None,
            "labelled": [labelled_validity(cache, axes, path, lang) for path in labelled],
            "stigma": stigma_validity(cache.encode, axes, lang) if axes.stigma_head is not None else None,
            "suite": suite_validity(cache.encode, axes, lang)
            if axes.stigma_head is not None and suite_path(lang).is_file() else None,
        }
    return report


def validity_record(report: dict, recipe: str, source: str) -> dict:
    """The measured-validity record shipped beside a model's default axes (``<axes>.validity.json``, shown by
    the HTML report): the cross-validation means of ``recipe`` in an ``evaluate_model`` report, its judgement
    cross-validation and its results on labelled real sentences, and where they come from (``source``)."""
    if recipe not in report["recipes"]:
        raise ValueError(f"the evaluation of {report['embedder_id']} has no recipe {recipe!r}")
    measured = report["recipes"][recipe]
    return {
        "embedder_id": report["embedder_id"],
        "lang": report["lang"],
        "recipe": recipe,
        "source": f"{source}: corpus-audit axes evaluate, {report['folds']} folds over held-out adjectives and "
                  f"held-out judgement sentences, seed {report['seed']}",
        "cross_validation_mean": {test: stats["mean"] for test, stats in measured["cross_validation"].items()},
        "judgement": measured.get("judgement"),
        "labelled": measured.get("labelled", []),
        "stigma": measured.get("stigma"),
        "suite": measured.get("suite"),
    }


def format_report(report: dict) -> str:
    """The evaluation as a plain-text table: mean ± sd per test type, recipes side by side; then the judgement
    cross-validation and the labelled real sentences of each recipe that has them."""
    names = list(report["recipes"])
    lines = [f"model {report['embedder_id']} ({report['lang']}), {report['folds']}-fold CV over held-out adjectives",
             f"{'test':<14}" + "".join(f"{name:>18}" for name in names)]
    for test in TEST_TYPES:
        cells = []
        for name in names:
            stats = report["recipes"][name]["cross_validation"].get(test)
            cells.append(f"{stats['mean']:6.1f} ± {stats['sd']:4.1f}" if stats else "n/a")
        lines.append(f"{test:<14}" + "".join(f"{cell:>18}" for cell in cells))
    lines.append("generalisation (real groups, adjectives outside all training lexicons):")
    for key in ("accuracy_mental", "accuracy_physical", "same_pole_mental_vs_physical",
                "mean_abs_shift_mental_vs_physical", "warmth_shift_mental_minus_physical",
                "competence_shift_mental_minus_physical"):
        lines.append(f"  {key:<36}" + "".join(f"{report['recipes'][n]['generalisation'][key]:>12.2f}" for n in names))
    for name in names:
        measured = report["recipes"][name]
        if measured.get("judgement"):
            j = measured["judgement"]
            lines.append(f"{name}: judgement gate and AQ-27 dimensions, held-out written sentences "
                         f"({j['n_judgements']} judgements, {j['n_neutral']} neutral):")
            lines.append(f"  distance from centre: neutral {j['neutral_distance']:.2f}, judgements "
                         f"{j['judgement_distance']:.2f}; gate AUC {j['gate_auc']:.3f}; category accuracy "
                         f"{j['category_accuracy']:.3f}; strength rank correlation {j['strength_spearman']:.2f}")
            lines.append("  dimension AUC (endorse vs rest / endorse vs reject): " + ", ".join(
                f"{dimension} {d['auc']:.2f}/{d['stance_auc']:.2f}" for dimension, d in j["dimensions"].items()))
            lines.append(f"  top dimension right for {j['top_dimension_accuracy']:.1%} of held-out judgements")
        if measured.get("stigma"):
            lines.append(f"{name}: {format_stigma(measured['stigma'])}")
        if measured.get("suite"):
            lines.append(f"{name}: {format_suite(measured['suite'])}")
            lines.extend(f"  {function:<24} {result['kind']:<13} {result['n']:>4} cases  mean score "
                         f"{result['mean_score']:.2f}  at or above 0.5: {result['share_flagged']:>4.0%}"
                         f"{'' if result['meets_target'] else '  (short of the target)'}"
                         for function, result in measured["suite"]["functions"].items())
        for result in measured.get("labelled") or []:
            lines.append(f"{name}: {result['file']} ({result['n']} real sentences, {result['n_judgements']} "
                         "judgements):")
            lines.append("  " + "; ".join(f"{key} {_number(result[key])}" for key in
                                         ("gate_auc", "sign_accuracy", "neutral_distance", "judgement_distance",
                                          "category_accuracy")))
    return "\n".join(lines)


def _number(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def labelled_validity(cache: EmbeddingCache, axes, labelled: str | Path, lang: str) -> dict[str, Any]:
    """The instrument on hand-labelled real sentences (``tests/data/labelled_<lang>.csv``, guide beside it): each
    sentence masked at its ``term_offsets`` as an audit masks it, then measured. Axes without the judgement gate
    get the axis measures only.

    - ``gate_auc``: ROC AUC of the judgement strength, judgements vs every other category (None without both);
    - ``sign_accuracy``: on judgements labelled high or low on an axis, the share whose score has the sign of the
      net label (the trait's pole, flipped when the sentence rejects it), pooled over both axes;
    - ``neutral_distance`` / ``judgement_distance``: mean distance from the centre of non-judgements / judgements;
    - ``categories``: confusion table, true category -> predicted category -> count; ``category_accuracy``;
    - ``top_dimension``: for judgements labelled with a dimension, true -> predicted top dimension -> count.
    """
    import json

    import pandas as pd
    from sklearn.metrics import roc_auc_score

    from corpus_audit.corpus.select import mask_mentions
    from corpus_audit.languages import get_language
    from corpus_audit.stigma.judgement import label_sentences

    table = pd.read_csv(labelled, keep_default_na=False)
    mask = get_language(lang).mask
    texts = [mask_mentions(sentence, json.loads(offsets), mask)
             for sentence, offsets in zip(table["sentence"], table["term_offsets"])]
    scores = axes.measure(cache.encode(texts), texts)
    n_categories = len(CATEGORIES)
    predicted, top = label_sentences(scores[:, 2:2 + n_categories],
                                     scores[:, 2 + n_categories:2 + n_categories + len(DIMENSION_COLUMNS)])
    is_judgement = (table["category"] == JUDGEMENT).to_numpy()
    distance = np.hypot(scores[:, 0], scores[:, 1])
    right = []
    for axis, column in enumerate(AXES):
        pole = table[column].map({"high": 1.0, "low": -1.0}).to_numpy(dtype=float)
        net = np.where(table["stance"] == "reject", -pole, pole)
        labelled_rows = is_judgement & np.isfinite(net)
        right.extend((np.sign(scores[labelled_rows, axis]) == net[labelled_rows]).tolist())
    confusion: dict[str, dict[str, int]] = {}
    for truth, guess in zip(table["category"], predicted):
        confusion.setdefault(truth, {}).setdefault(guess, 0)
        confusion[truth][guess] += 1
    dimensions: dict[str, dict[str, int]] = {}
    for truth, guess, judged in zip(table["dimension"], top, is_judgement):
        if judged and truth and truth != "none":
            guess = guess if guess is not None else "(not a judgement)"
            dimensions.setdefault(truth, {}).setdefault(guess.lower(), 0)
            dimensions[truth][guess.lower()] += 1
    both = is_judgement.any() and (~is_judgement).any() and axes.judges
    return {
        "file": Path(labelled).name, "n": int(len(table)), "n_judgements": int(is_judgement.sum()),
        "gate_auc": float(roc_auc_score(is_judgement, scores[:, 2])) if both else None,
        "sign_accuracy": float(np.mean(right)) if right else None, "n_sign_labels": len(right),
        "neutral_distance": float(distance[~is_judgement].mean()) if (~is_judgement).any() else None,
        "judgement_distance": float(distance[is_judgement].mean()) if is_judgement.any() else None,
        "category_accuracy": float(np.mean([t == p for t, p in zip(table["category"], predicted)]))
        if axes.judges else None,
        "categories": confusion if axes.judges else {}, "top_dimension": dimensions,
    }
