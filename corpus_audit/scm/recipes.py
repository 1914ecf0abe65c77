"""Training recipes: which templates fill the seed lexicon, and which head maps embeddings to the plane."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from corpus_audit.common.version import __version__
from corpus_audit.common.atomic import atomic_path
from corpus_audit.scm.axes import SCMAxes, stigma_probability
from corpus_audit.scm.heads import ClassifierHead
from corpus_audit.scm.judgement import JudgementData, fit_judgement_heads, load_judgement_data
from corpus_audit.scm.lexicon import SeedAdjective, forms_table_path, load_seed_lexicon, seed_lexicon_path
from corpus_audit.common.resources import data_file, sha256_file
from corpus_audit.corpus.matcher import FORMS
from corpus_audit.scm.stigma import (StigmaData, fit_stigma_calibration, fit_stigma_head, fit_stigma_text_head,
                                     source_weights)
from corpus_audit.scm.suite import load_training_data
from corpus_audit.scm.templates import LabelledSentences, load_template_set, realise
from corpus_audit.scm.text_head import TextHead
from corpus_audit.stigma.judgement import CATEGORIES, JUDGEMENT


@dataclass(frozen=True)
class StigmaSettings:
    """The stigma head of one language (scm/stigma.py), chosen on dev by scripts/select_stigma_weight.py."""

    lang: str
    written_weight: float  # a written sentence's weight beside a real one
    C: float  # of the embedding head
    text_C: float | None  # of the text head; None for no text head
    forms: bool  # the embedding head reads the mention forms after the embedding
    target: str = "binary"  # the classes it learns (scm.axes.STIGMA_TARGETS)
    #: the gate's categories are the stigma head's (target ``category``), so that the two agree: one model
    gate_reads_stigma: bool = False


@dataclass(frozen=True)
class Recipe:
    name: str
    templates: str  # template file name in templates/<lang>/
    head: str
    n_components: int = 10
    C: float = 1.0
    hidden_units: int = 256
    alpha: float = 1e-3
    pairs_per_template: int = 150
    extra_lexicon: str | None = None  # training-only adjectives (lexicons/<lang>/<file>), never test items
    # Neutral sentences (templates/<lang>/neutral.csv) as a third class of each axis, and the judgement gate and
    # AQ-27 dimension heads trained on them and templates/<lang>/judgements.csv (scm/judgement.py).
    judgement: bool = False
    # Template sentences (trait judgements) added to the gate's judgement class, a sample of this size.
    gate_template_sentences: int = 600
    # The written judgements and neutral sentences count this many times in the axes' training (they are few beside
    # the template sentences, and closer to real text).
    judgement_repeats: int = 1
    # Head of the gate and the dimension classifier (a linear one measured as good as the mean with a network on the
    # labelled real sentences, at a twentieth of the fitting time).
    judgement_head: str = "logistic"
    # The stigma head (scm/stigma.py; needs ``judgement``) per language; a language not listed gets none.
    stigma_heads: tuple[StigmaSettings, ...] = ()

    def stigma_settings(self, lang: str) -> StigmaSettings | None:
        """The stigma head's settings for ``lang``, or None."""
        return next((settings for settings in self.stigma_heads if settings.lang == lang), None)

    def make_axes(self) -> SCMAxes:
        return SCMAxes(head=self.head, n_components=self.n_components, C=self.C, hidden_units=self.hidden_units,
                       alpha=self.alpha, neutral=self.judgement)


RECIPES = {
    # Fraser et al. (2022) as used by the seed paper: basic templates, PLS + axis-rotated POLAR.
    "reference": Recipe("reference", templates="reference", head="polar", n_components=10, pairs_per_template=400),
    # Varied affirmative/negated/two-adjective templates with the extended training lexicon, the mean of an MLP and
    # a logistic head (measured best on MiniLM, docs/axes.md), neutral text as a third class of each axis so that
    # scores are graded and centred, and the judgement gate with the AQ-27 dimension heads. English: the stigma head
    # reads the stance branch and is the gate as well (chosen on dev, docs/stigma_score.md).
    "default": Recipe("default", templates="training", head="mlp+logistic", C=1.0, hidden_units=256, alpha=1e-3,
                      pairs_per_template=150, extra_lexicon="scm_extended.csv", judgement=True, judgement_repeats=4,
                      stigma_heads=(StigmaSettings("en", 0.5, 0.3, 4.0, forms=True, target="category",
                                                   gate_reads_stigma=True),
                                    StigmaSettings("es", 0.3, 3.0, 4.0, forms=True, target="category",
                                                   gate_reads_stigma=True))),
}
DEFAULT_RECIPE = "default"


def get_recipe(name: str) -> Recipe:
    try:
        return RECIPES[name]
    except KeyError:
        raise ValueError(f"unknown recipe {name!r}; choose one of {sorted(RECIPES)}") from None


def training_adjectives(recipe: Recipe, lang: str, adjectives: list[SeedAdjective],
                        exclude: frozenset[str] = frozenset()) -> list[SeedAdjective]:
    """The seed adjectives plus the recipe's extra lexicon, minus ``exclude`` (held-out test words)."""
    if recipe.extra_lexicon is None:
        return list(adjectives)
    known = {a.word for a in adjectives} | exclude
    extra = load_seed_lexicon(data_file("lexicons", lang, recipe.extra_lexicon))
    return list(adjectives) + [a for a in extra if a.word not in known]


def training_sentences(recipe: Recipe, lang: str, adjectives: list[SeedAdjective], seed: int = 0,
                       exclude: frozenset[str] = frozenset()) -> LabelledSentences:
    return realise(load_template_set(lang, recipe.templates), training_adjectives(recipe, lang, adjectives, exclude),
                   pairs_per_template=recipe.pairs_per_template, seed=seed)


class EmbeddingCache:
    """Embeds each distinct sentence once across repeated calls (cross-validation folds reuse sentences).

    With ``path`` the vectors also persist between runs in a data-only ``.npz`` (sentences, vectors and
    the model id), so that re-evaluating after a template edit embeds only the new sentences. A file
    written for another model is ignored and replaced.
    """

    def __init__(self, embedder, path: str | Path | None = None) -> None:
        self.embedder = embedder
        self.path = Path(path) if path is not None else None
        self._vectors: dict[str, np.ndarray] = {}
        if self.path is not None and self.path.is_file():
            with np.load(self.path, allow_pickle=False) as data:
                if str(data["model_id"]) == embedder.model_id:
                    self._vectors = dict(zip(data["sentences"].tolist(), data["vectors"]))

    @property
    def model_id(self) -> str:
        return self.embedder.model_id

    @property
    def dimension(self) -> int:
        return self.embedder.dimension

    @property
    def views(self) -> tuple[int, ...]:
        return self.embedder.views

    def encode(self, sentences: list[str]) -> np.ndarray:
        missing = list(dict.fromkeys(s for s in sentences if s not in self._vectors))
        if missing:
            for sentence, vector in zip(missing, self.embedder.encode(missing)):
                self._vectors[sentence] = vector
            self._save()
        return np.stack([self._vectors[s] for s in sentences]) if sentences else np.empty((0, 0), np.float32)

    def _save(self) -> None:
        if self.path is None:
            return
        vectors = np.stack(list(self._vectors.values())).astype(np.float32)
        with atomic_path(self.path) as tmp, open(tmp, "wb") as handle:
            np.savez(handle, model_id=np.array(self.model_id), sentences=np.array(list(self._vectors)),
                     vectors=vectors)


def fit_recipe(recipe: Recipe, encode: Callable[[list[str]], np.ndarray], lang: str, templates: LabelledSentences,
               judgement: JudgementData | None = None, seed: int = 0, metadata: dict | None = None,
               stigma: StigmaData | None = None, views: Sequence[int] = ()) -> SCMAxes:
    """Axes fitted by ``recipe`` on the template sentences and, for a judgement recipe, on ``judgement`` data too:
    its neutral sentences are the axes' third class, its judgements add their SCM reading, and the gate and the
    dimension heads are fitted on it plus a sample of template sentences (trait judgements of no one dimension).
    With ``stigma`` data and a recipe with a stigma head, that head is fitted on its train and dev sentences (never
    the held-out ones). ``views``: the embedder's (:meth:`~corpus_audit.scm.axes.SCMAxes.fit`)."""
    if not recipe.judgement:
        return recipe.make_axes().fit(encode(templates.sentences), templates.targets, metadata=metadata,
                                      views=views)
    if judgement is None:
        raise ValueError(f"recipe {recipe.name!r} needs the judgement training data")
    unlabelled = np.where(templates.targets == 0, np.nan, templates.targets)  # 0 is the neutral class here
    _, _, judgement_targets, _ = judgement.arrays()
    X_templates, X_judgement = encode(templates.sentences), encode(judgement.sentences)
    repeats = recipe.judgement_repeats
    axes = recipe.make_axes().fit(np.vstack([X_templates, np.tile(X_judgement, (repeats, 1))]),
                                  np.vstack([unlabelled, np.tile(judgement_targets, (repeats, 1))]), metadata=metadata,
                                  views=views)
    X_templates, X_judgement = axes.sentence_view(X_templates), axes.sentence_view(X_judgement)
    sample = np.random.default_rng(seed).permutation(len(templates))[:recipe.gate_template_sentences]
    gate_data = JudgementData(
        sentences=judgement.sentences + [templates.sentences[i] for i in sample],
        category=judgement.category + [CATEGORIES.index(JUDGEMENT)] * len(sample),
        dimension=judgement.dimension + [0] * len(sample))
    gate, dimensions = fit_judgement_heads(np.vstack([X_judgement, X_templates[sample]]), gate_data,
                                           recipe.judgement_head,
                                           C=recipe.C, hidden_units=recipe.hidden_units, alpha=recipe.alpha,
                                           random_state=seed)
    settings = recipe.stigma_settings(lang)
    own_gate = stigma is None or settings is None or not settings.gate_reads_stigma
    return axes.attach_judgement(gate if own_gate else None, dimensions,
                                 *fit_stigma(recipe, encode, lang, stigma, views))


def fit_stigma(recipe: Recipe, encode: Callable[[list[str]], np.ndarray], lang: str, stigma: StigmaData | None,
               views: Sequence[int] = ()
               ) -> tuple[ClassifierHead | None, TextHead | None, tuple[str, ...], tuple[float, float] | None]:
    """The recipe's stigma head and text head for ``lang`` fitted on the train and dev sentences of ``stigma``
    (never the held-out ones), the mention forms the head reads (empty for none) and the score's calibration
    (:func:`~corpus_audit.scm.stigma.fit_stigma_calibration` of heads fitted on train, on the dev sentences);
    None for a recipe or language without one, or without the data. The head reads the stance view of what
    ``encode`` gives (rows holding ``views``, :meth:`~corpus_audit.scm.axes.SCMAxes.fit`)."""
    settings = recipe.stigma_settings(lang)
    if stigma is None or settings is None:
        return None, None, (), None
    forms = FORMS if settings.forms else ()
    fitted = stigma.subset(stigma.rows(("train", "dev")))
    X = encode(fitted.texts)
    X = X[:, views[0]:] if len(views) > 1 else X

    def heads(rows: np.ndarray) -> tuple[ClassifierHead, TextHead | None]:
        weight, target = settings.written_weight, settings.target
        return (fit_stigma_head(X, fitted, rows, weight, C=settings.C, forms=forms, target=target),
                None if settings.text_C is None
                else fit_stigma_text_head(fitted, rows, weight, C=settings.text_C, target=target))

    dev = fitted.rows(("dev",))
    if len(set(fitted.stigmatising[dev].tolist())) < 2:  # nothing to calibrate on: the heads' own probability
        return (*heads(np.arange(len(fitted))), forms, None)
    probability = stigma_probability(*heads(fitted.rows(("train",))), X[dev], [fitted.texts[i] for i in dev],
                                     [fitted.mention_forms[i] for i in dev], forms)
    calibration = fit_stigma_calibration(probability, fitted.stigmatising[dev],
                                         source_weights(fitted, dev, settings.written_weight))
    return (*heads(np.arange(len(fitted))), forms, calibration)


def train_axes(embedder, lang: str = "en", recipe: str = DEFAULT_RECIPE, lexicon: str | None = None,
               seed: int = 0) -> SCMAxes:
    """Train axes for ``embedder`` on the whole seed lexicon, with provenance metadata."""
    chosen = get_recipe(recipe)
    lexicon_path = lexicon or seed_lexicon_path(lang)
    adjectives = load_seed_lexicon(lexicon_path)
    data = training_sentences(chosen, lang, adjectives, seed=seed)
    judgement = load_judgement_data(lang) if chosen.judgement else None
    stigma = load_training_data(lang) if chosen.judgement and chosen.stigma_settings(lang) is not None else None
    template_set = load_template_set(lang, chosen.templates)
    metadata = {
        "embedder_id": embedder.model_id,
        "dimension": embedder.dimension,
        "lang": lang,
        "recipe": asdict(chosen),
        "lexicon_sha256": sha256_file(lexicon_path),
        "templates_sha256": template_set.sha256,
        # Gender/number forms shape the training sentences of languages with agreement.
        "forms_sha256": sha256_file(forms_path) if (forms_path := forms_table_path(lang)).is_file() else None,
        "judgement_sha256": judgement.sha256 if judgement else None,
        "stigma_sha256": stigma.sha256 if stigma else None,
        "n_training_sentences": len(data) + (len(judgement) if judgement else 0),
        "seed": seed,
        "package_version": __version__,
    }
    return fit_recipe(chosen, embedder.encode, lang, data, judgement, seed=seed, metadata=metadata, stigma=stigma,
                      views=embedder.views)
