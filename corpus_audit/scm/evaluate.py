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

import numpy as np

from corpus_audit.common.resources import data_file
from corpus_audit.scm.lexicon import SeedAdjective, load_seed_lexicon, seed_lexicon_path
from corpus_audit.scm.recipes import EmbeddingCache, Recipe, training_sentences
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
    for fold_index, test_adjectives in enumerate(adjective_folds(adjectives, n_folds, seed)):
        held_out = {a.word for a in test_adjectives}
        train_adjectives = [a for a in adjectives if a.word not in held_out]
        train = training_sentences(recipe, lang, train_adjectives, seed=seed, exclude=frozenset(held_out))
        test = realise(evaluation, test_adjectives, pairs_per_template=eval_pairs_per_template, seed=seed + fold_index)
        axes = recipe.make_axes().fit(cache.encode(train.sentences), train.targets)
        result.folds.append(accuracy_by_test(axes.transform(cache.encode(test.sentences)), test))
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
                   seed: int = 0, embedding_cache: str | Path | None = None) -> dict:
    """Cross-validation and generalisation for each recipe, sharing one embedding cache (kept on disk at
    ``embedding_cache`` when given)."""
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
        }
    return report


def validity_record(report: dict, recipe: str, source: str) -> dict:
    """The measured-validity record shipped beside a model's default axes (``<axes>.validity.json``, shown by
    the HTML report): the cross-validation means of ``recipe`` in an ``evaluate_model`` report, and where
    they come from (``source``)."""
    if recipe not in report["recipes"]:
        raise ValueError(f"the evaluation of {report['embedder_id']} has no recipe {recipe!r}")
    return {
        "embedder_id": report["embedder_id"],
        "lang": report["lang"],
        "recipe": recipe,
        "source": f"{source}: corpus-audit axes evaluate, {report['folds']} folds over held-out adjectives, "
                  f"seed {report['seed']}",
        "cross_validation_mean": {test: stats["mean"]
                                  for test, stats in report["recipes"][recipe]["cross_validation"].items()},
    }


def format_report(report: dict) -> str:
    """The evaluation as a plain-text table: mean ± sd per test type, recipes side by side."""
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
    return "\n".join(lines)
