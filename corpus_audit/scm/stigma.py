"""The signed stigma score: the probability that a sentence stigmatises people with the illness it mentions.

Trained on ``templates/<lang>/stigma_labelled.csv`` (``templates/README.md``): real sentences from licensed corpora,
labelled by this project with ``docs/labelling.md`` and split by source document into train / dev / heldout, and
sentences written by the team (hard negatives: anti-stigma text that quotes a slur, counter-stereotypes) split by
group into train / dev. Each sentence is masked as an audit masks it (its labelled mention and every mention the
language's matcher finds become the mask phrase) before it is embedded.

The head is a balanced logistic regression (:class:`~corpus_audit.scm.heads.ClassifierHead`) over the classes of
its target (``STIGMA_TARGETS``: stigmatising or not, or with the judgements that do not stigmatise a class of their
own), reading the embedding and, where the recipe says so, the indicators of the sentence's mention forms (which
the mask erases); it is fitted on train and dev, and where the recipe says so a second one on the words of the
masked sentence (:class:`~corpus_audit.scm.text_head.TextHead`), whose probability of ``stigmatising`` the score
averages with the first's. The written sentences weigh ``written_weight`` each (the settings are chosen on dev,
``scripts/select_stigma_weight.py``). The held-out real sentences are scored once, by :func:`stigma_validity`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from corpus_audit.common.resources import data_dir, sha256_file, sha256_files
from corpus_audit.scm.columns import STIGMA_COLUMN
from corpus_audit.scm.axes import STIGMA_CLASSES, STIGMA_TARGETS, form_indicators
from corpus_audit.scm.heads import ClassifierHead
from corpus_audit.scm.text_head import TextHead
from corpus_audit.scm.templates import TemplateError
from corpus_audit.stigma.judgement import CATEGORIES, JUDGEMENT

STIGMA_FILE = "stigma_labelled.csv"
__all__ = ["STIGMA_CLASSES", "STIGMA_COLUMN", "fit_stigma_head", "fit_stigma_text_head", "gate_validity",
           "load_stigma_data", "stigma_validity"]
SPLITS = ("train", "dev", "heldout")
#: Where a labelled sentence comes from: a corpus (``real``), the team's written sentences of the labelled file
#: (``written``), the functional suite's cases (``suite``, scm/suite.py: only with :meth:`StigmaData.join`).
SOURCES = ("real", "written", "suite")
REQUIRED = ("uid", "source", "doc_id", "sentence", "matched_term", "form", "illness_type", "split", "category",
            "stigmatising")
PRECISION_AT = (20, 50, 100)
#: Per-form AUC only where a form has at least this many sentences of each class.
MIN_FORM_CLASS = 10


@dataclass
class StigmaData:
    """Labelled sentences for the stigma head, each already masked (``texts``): the labelled file's, and where
    joined (:meth:`join`) the functional suite's (source ``suite``, split train / dev / test, and each case's
    ``function``)."""

    texts: list[str]
    stigmatising: np.ndarray  # bool
    split: np.ndarray  # str
    source: np.ndarray  # str
    form: np.ndarray  # str
    path: Path
    category: np.ndarray  # str: the gate's category of each sentence (stigma.judgement.CATEGORIES)
    doc_id: np.ndarray  # str: the source document (real sentences; empty for written ones)
    #: the forms of each sentence's mentions, as an audit knows them: the labelled one (if the lexicon has it) and
    #: every one the language's matcher finds
    mention_forms: list[tuple[str, ...]]
    #: the suite function of each case (empty for the labelled file's sentences); None: all empty
    function: np.ndarray | None = None
    #: files joined after ``path`` (:meth:`join`)
    joined: tuple[Path, ...] = ()

    def __post_init__(self) -> None:
        if self.function is None:
            self.function = np.full(len(self.texts), "", dtype=object)

    def __len__(self) -> int:
        return len(self.texts)

    @property
    def sha256(self) -> str:
        return sha256_files([self.path, *self.joined]) if self.joined else sha256_file(self.path)

    def subset(self, rows: np.ndarray) -> StigmaData:
        """The sentences at ``rows``."""
        return StigmaData([self.texts[i] for i in rows], self.stigmatising[rows], self.split[rows],
                          self.source[rows], self.form[rows], self.path, self.category[rows], self.doc_id[rows],
                          [self.mention_forms[i] for i in rows], self.function[rows], self.joined)

    def join(self, other: StigmaData) -> StigmaData:
        """These sentences followed by ``other``'s."""
        return StigmaData(self.texts + other.texts, *(np.concatenate([getattr(self, name), getattr(other, name)])
                                                       for name in ("stigmatising", "split", "source", "form")),
                          self.path, np.concatenate([self.category, other.category]),
                          np.concatenate([self.doc_id, other.doc_id]), self.mention_forms + other.mention_forms,
                          np.concatenate([self.function, other.function]),
                          self.joined + (other.path, *other.joined))

    def rows(self, splits: tuple[str, ...], sources: tuple[str, ...] = SOURCES) -> np.ndarray:
        return np.flatnonzero(np.isin(self.split, splits) & np.isin(self.source, sources))


def labelled_mention_forms(sentence: str, terms: str, form: str, matcher) -> tuple[str, ...]:
    """What the stigma score reads of a labelled sentence's mentions, as an audit knows them
    (:func:`~corpus_audit.corpus.matcher.mention_forms`): those ``matcher`` finds, and its labelled mentions
    (``terms``, ``;``-separated) where the labelled ``form`` is one of the lexicon's: the labelled form counts among
    the forms, and a labelled term is a slang word where the matcher finds it as one, or, where it does not find
    it, where the labelled form is slang."""
    from corpus_audit.corpus.matcher import FORMS, SLANG_WORD, mention_forms

    matches = matcher.find(sentence)
    found = {match.surface.lower(): match.form for match in matches}
    labelled = [term.strip() for term in terms.split(";") if term.strip()] if form in FORMS else []
    described = mention_forms([match.form for match in matches] + [found.get(term.lower(), form) for term in labelled],
                              [match.surface for match in matches] + labelled)
    forms = {entry for entry in described if not entry.startswith(SLANG_WORD)} | ({form} if labelled else set())
    return tuple(sorted(forms)) + tuple(entry for entry in described if entry.startswith(SLANG_WORD))


def mask_labelled(sentence: str, terms: str, masker) -> str:
    """``sentence`` with each ``;``-separated labelled mention (whole words, any case) and then every mention
    ``masker`` (:class:`~corpus_audit.corpus.select.MentionMasker`) finds replaced by the mask phrase."""
    for term in sorted({t.strip() for t in terms.split(";") if t.strip()}, key=len, reverse=True):
        sentence = re.sub(rf"(?<!\w){re.escape(term)}(?!\w)", masker.mask, sentence, flags=re.IGNORECASE)
    return masker(sentence)


def load_stigma_data(lang: str, path: Path | None = None) -> StigmaData:
    """The labelled sentences of ``lang``, masked; a bad row stops with the file and line."""
    import pandas as pd

    from corpus_audit.corpus.select import MentionMasker

    path = path or data_dir("templates") / lang / STIGMA_FILE
    if not path.is_file():
        raise TemplateError(f"stigma training file not found: {path}")
    table = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = [column for column in REQUIRED if column not in table.columns]
    if missing:
        raise TemplateError(f"{path}: missing column(s) {', '.join(missing)}")
    for line, row in zip(range(2, len(table) + 2), table.itertuples(index=False)):
        problem = (f"stigmatising must be yes or no, found {row.stigmatising!r}"
                   if row.stigmatising not in ("yes", "no") else
                   f"split must be one of {', '.join(SPLITS)}, found {row.split!r}" if row.split not in SPLITS else
                   f"source must be real or written, found {row.source!r}" if row.source not in SOURCES[:2] else
                   f"category must be one of {', '.join(CATEGORIES)}, found {row.category!r}"
                   if row.category not in CATEGORIES else
                   "written sentences are never held out" if (row.source, row.split) == ("written", "heldout") else
                   "empty sentence" if not row.sentence.strip() else None)
        if problem:
            raise TemplateError(f"{path}, line {line}: {problem}")
    masker = MentionMasker(lang)
    mention_forms = [labelled_mention_forms(sentence, terms, form, masker.matcher)
                     for sentence, terms, form in zip(table["sentence"], table["matched_term"], table["form"])]
    return StigmaData(texts=[mask_labelled(s, t, masker) for s, t in zip(table["sentence"], table["matched_term"])],
                      stigmatising=(table["stigmatising"] == "yes").to_numpy(), split=table["split"].to_numpy(),
                      source=table["source"].to_numpy(), form=table["form"].to_numpy(), path=path,
                      category=table["category"].to_numpy(), doc_id=table["doc_id"].to_numpy(),
                      mention_forms=mention_forms)


def stigma_labels(data: StigmaData, rows: np.ndarray, target: str = "binary") -> np.ndarray:
    """The class of each of ``rows`` of ``data``: an index into ``STIGMA_TARGETS[target]`` (``judgement``: the
    judgements about people that do not stigmatise are class 1; ``category``: a sentence that does not stigmatise
    is in the class of its category)."""
    stigmatising = data.stigmatising[rows]
    if target == "binary":
        return stigmatising.astype(int)
    if target == "judgement":
        return np.where(stigmatising, 2, np.where(data.category[rows] == JUDGEMENT, 1, 0))
    if target == "category":
        return np.where(stigmatising, len(CATEGORIES), [CATEGORIES.index(c) for c in data.category[rows]])
    raise ValueError(f"unknown stigma target {target!r}; choose one of {sorted(STIGMA_TARGETS)}")


def source_weights(data: StigmaData, rows: np.ndarray, written_weight: float) -> np.ndarray:
    """Each of ``rows``'s weight in fitting: a real sentence 1, one the team wrote (the labelled file's written
    sentences, the suite's cases) ``written_weight``."""
    return np.where(data.source[rows] == "real", 1.0, written_weight)


def fit_stigma_head(X: np.ndarray, data: StigmaData, rows: np.ndarray, written_weight: float, *, C: float = 1.0,
                    kind: str = "logistic", forms: tuple[str, ...] = (), target: str = "binary") -> ClassifierHead:
    """The stigma head fitted on ``rows`` of ``data`` (embeddings ``X`` of all of it) to the classes of ``target``
    (``STIGMA_TARGETS``), classes balanced, each written sentence weighing ``written_weight`` (a real one 1); with
    ``forms``, each embedding is followed by the indicators of its mention forms among them
    (:func:`~corpus_audit.scm.axes.form_indicators`)."""
    weights = source_weights(data, rows, written_weight)
    keep = rows[weights > 0]
    features = stigma_features(X[keep], [data.mention_forms[i] for i in keep], forms)
    return ClassifierHead(kind, STIGMA_TARGETS[target]).fit(features, stigma_labels(data, keep, target), C=C,
                                                            balanced=True, sample_weight=weights[weights > 0])


def fit_stigma_calibration(probability: np.ndarray, truth: np.ndarray, weights: np.ndarray) -> tuple[float, float]:
    """(slope, intercept) of the Platt scaling of stigma probabilities (:func:`~corpus_audit.scm.axes.calibrated`):
    a class-balanced logistic regression of ``truth`` on their logit, each sentence weighing ``weights``. Fitted on
    dev sentences scored by heads fitted on train, it puts 0.5 where a balanced decision on dev lies, whatever
    the number of classes the heads spread their probability over."""
    from sklearn.linear_model import LogisticRegression

    p = np.clip(probability, 1e-6, 1 - 1e-6)
    model = LogisticRegression(class_weight="balanced").fit(np.log(p / (1 - p))[:, None], np.asarray(truth, bool),
                                                          sample_weight=weights)
    return float(model.coef_[0, 0]), float(model.intercept_[0])


def stigma_features(X: np.ndarray, mention_forms: list[tuple[str, ...]], forms: tuple[str, ...]) -> np.ndarray:
    """What a stigma head reading ``forms`` takes: the embeddings, then the form indicators (none without forms)."""
    return np.hstack([X, form_indicators(mention_forms, forms, len(X))]) if forms else X


def fit_stigma_text_head(data: StigmaData, rows: np.ndarray, written_weight: float, *, C: float = 1.0,
                         target: str = "binary") -> TextHead:
    """The stigma text head fitted on the masked texts of ``rows`` of ``data`` to the classes of ``target``,
    weighted as :func:`fit_stigma_head` weighs them."""
    weights = source_weights(data, rows, written_weight)
    keep = rows[weights > 0]
    return TextHead(STIGMA_TARGETS[target]).fit([data.texts[i] for i in keep], stigma_labels(data, keep, target),
                                                C=C, sample_weight=weights[weights > 0],
                                                forms=[data.mention_forms[i] for i in keep])


def resampled_rows(truth: np.ndarray, groups: np.ndarray | None = None, n_boot: int = 2000,
                   seed: int = 0) -> Iterator[np.ndarray]:
    """The rows of ``n_boot`` bootstrap resamples that hold both classes of ``truth``; with ``groups`` (source
    documents) whole groups are resampled, since sentences of one document are not independent."""
    rng = np.random.default_rng(seed)
    labels, members = np.unique(groups if groups is not None else np.arange(len(truth)), return_inverse=True)
    by_group = [np.flatnonzero(members == g) for g in range(len(labels))]
    for _ in range(n_boot):
        rows = np.concatenate([by_group[g] for g in rng.integers(0, len(by_group), len(by_group))])
        if truth[rows].any() and not truth[rows].all():
            yield rows


def bootstrap_auc(truth: np.ndarray, score: np.ndarray, n_boot: int = 2000, seed: int = 0,
                  groups: np.ndarray | None = None) -> tuple[float, float, float]:
    """ROC AUC and its 95% percentile bootstrap interval (:func:`resampled_rows`)."""
    from sklearn.metrics import roc_auc_score

    truth, score = np.asarray(truth, dtype=bool), np.asarray(score, dtype=float)
    values = [roc_auc_score(truth[rows], score[rows]) for rows in resampled_rows(truth, groups, n_boot, seed)]
    low, high = np.percentile(values, [2.5, 97.5])
    return float(roc_auc_score(truth, score)), float(low), float(high)


def stigma_validity(encode, axes, lang: str, data: StigmaData | None = None) -> dict[str, Any]:
    """The stigma score of ``axes`` on the held-out real sentences of ``lang``: ROC AUC stigmatising vs the rest
    with a document-bootstrap 95% interval, the precision of the top k, the AUC per mention form and per corpus
    (within one corpus: the pooled AUC also rewards telling a toxic-comment corpus from a support forum) where
    there are at least ``MIN_FORM_CLASS`` sentences of each class, the documents ranked as an audit ranks them
    (:func:`document_ranking`), and the judgement gate on the same sentences (:func:`gate_validity`)."""
    import pandas as pd
    from sklearn.metrics import roc_auc_score

    data = data or load_stigma_data(lang)
    table = pd.read_csv(data.path, dtype=str, keep_default_na=False)
    rows = data.rows(("heldout",), ("real",))
    if axes.stigma_head is None:
        raise ValueError("these axes carry no stigma head")
    texts = [data.texts[i] for i in rows]
    X = encode(texts)
    score = axes.stigma_score(X, texts, [data.mention_forms[i] for i in rows])
    truth = data.stigmatising[rows]
    auc, low, high = bootstrap_auc(truth, score, groups=data.doc_id[rows])
    order = np.argsort(-score, kind="stable")
    def by(values: np.ndarray) -> dict[str, dict[str, Any]]:
        result = {}
        for value in sorted(set(values)):
            chosen = values == value
            n_yes, n_no = int(truth[chosen].sum()), int((~truth[chosen]).sum())
            result[value] = {"n_stigmatising": n_yes, "n_other": n_no,
                             "auc": float(roc_auc_score(truth[chosen], score[chosen]))
                             if min(n_yes, n_no) >= MIN_FORM_CLASS else None}
        return result

    return {
        "file": data.path.name, "split": "heldout (real sentences, never used for training or selection)",
        "n": len(rows), "n_stigmatising": int(truth.sum()),
        "auc": auc, "auc_ci95": [low, high],
        "precision_at": {str(k): float(truth[order[:k]].mean()) for k in PRECISION_AT if k <= len(rows)},
        "base_rate": float(truth.mean()),
        "forms": by(data.form[rows]),
        "corpora": by(table["corpus"].to_numpy()[rows]),
        "documents": document_ranking(table.iloc[rows].assign(stigma=score)),
        "gate": gate_validity(X, axes, data),
    }


def gate_validity(X: np.ndarray, axes, data: StigmaData) -> dict[str, Any]:
    """The judgement gate of ``axes`` on the held-out real sentences of ``data`` (embeddings ``X``, in the order of
    ``data.rows(("heldout",), ("real",))``) against their labelled categories: ROC AUC of the judgement strength,
    judgements about people vs every other category, with a document-bootstrap 95% interval; the accuracy and
    macro-F1 of the most probable category; and the counts per category."""
    from sklearn.metrics import f1_score

    rows = data.rows(("heldout",), ("real",))
    probabilities = axes.gate_probabilities(X, [data.texts[i] for i in rows], [data.mention_forms[i] for i in rows])
    truth = np.array([CATEGORIES.index(category) for category in data.category[rows]])
    is_judgement = truth == CATEGORIES.index(JUDGEMENT)
    auc, low, high = bootstrap_auc(is_judgement, probabilities[:, CATEGORIES.index(JUDGEMENT)],
                                   groups=data.doc_id[rows])
    predicted = probabilities.argmax(axis=1)
    return {"n": len(rows), "n_judgements": int(is_judgement.sum()),
            "categories": {name: int((truth == index).sum()) for index, name in enumerate(CATEGORIES)},
            "judgement_auc": auc, "judgement_auc_ci95": [low, high],
            "category_accuracy": float((predicted == truth).mean()),
            "category_macro_f1": float(f1_score(truth, predicted, labels=range(len(CATEGORIES)), average="macro",
                                                zero_division=0))}


def document_ranking(sentences) -> dict[str, Any]:
    """Documents scored as an audit scores them (the maximum sentence score; audit/documents.py) from labelled
    ``sentences`` (columns corpus, doc_id, illness_type, category, stigmatising, stigma): ROC AUC of documents with
    a stigmatising sentence vs the rest, and, on the same illness type, the share of (stigmatising, supportive)
    document pairs where the supportive one ranks higher (ties count half). A supportive document has judgements
    about people and no stigmatising sentence (support, counter-stereotypes, anti-stigma)."""
    from sklearn.metrics import roc_auc_score

    documents = sentences.assign(_yes=sentences["stigmatising"] == "yes",
                                 _judgement=sentences["category"] == "judgement").groupby(
        ["corpus", "doc_id"]).agg(stigma=("stigma", "max"), stigmatising=("_yes", "any"),
                                  judgement=("_judgement", "any"), illness_type=("illness_type", "first"))
    supportive = documents[~documents["stigmatising"] & documents["judgement"]]
    above, pairs = 0.0, 0
    for illness_type, stigmatising in documents[documents["stigmatising"]].groupby("illness_type"):
        support = supportive.loc[supportive["illness_type"] == illness_type, "stigma"].to_numpy()
        difference = support[None, :] - stigmatising["stigma"].to_numpy()[:, None]
        above += float((difference > 0).sum() + 0.5 * (difference == 0).sum())
        pairs += difference.size
    both = documents["stigmatising"].any() and not documents["stigmatising"].all()
    return {"n_documents": len(documents), "n_stigmatising": int(documents["stigmatising"].sum()),
            "n_supportive": len(supportive),
            "auc": float(roc_auc_score(documents["stigmatising"], documents["stigma"])) if both else None,
            "supportive_above_stigmatising": above / pairs if pairs else None, "n_pairs": pairs}


def format_stigma(result: dict[str, Any]) -> str:
    """One paragraph of :func:`stigma_validity`'s numbers."""
    low, high = result["auc_ci95"]
    forms, corpora = (", ".join(f"{name} {value['auc']:.2f}" for name, value in result[part].items()
                                if value["auc"] is not None) for part in ("forms", "corpora"))
    return (f"stigma score on {result['n']} held-out real sentences ({result['n_stigmatising']} stigmatising): "
            f"AUC {result['auc']:.3f} (95% CI {low:.3f}-{high:.3f}); precision of the top "
            + ", ".join(f"{k} {value:.2f}" for k, value in result["precision_at"].items())
            + f" (base rate {result['base_rate']:.2f})" + (f"; AUC by mention form: {forms}" if forms else "")
            + (f"; AUC within one corpus: {corpora}" if corpora else "")
            + _format_documents(result["documents"]) + _format_gate(result.get("gate")))


def _format_gate(gate: dict[str, Any] | None) -> str:
    if not gate:
        return ""
    low, high = gate["judgement_auc_ci95"]
    return (f"; the judgement gate on the same sentences ({gate['n_judgements']} judgements about people): AUC "
            f"{gate['judgement_auc']:.3f} (95% CI {low:.3f}-{high:.3f}), category accuracy "
            f"{gate['category_accuracy']:.3f}, macro-F1 {gate['category_macro_f1']:.3f}")


def _format_documents(documents: dict[str, Any]) -> str:
    above = documents["supportive_above_stigmatising"]
    return (f"; {documents['n_documents']} documents ranked by their most stigmatising sentence: AUC "
            + ("n/a" if documents["auc"] is None else f"{documents['auc']:.3f}")
            + ", a supportive document above a stigmatising one (same illness type) in "
            + ("n/a" if above is None else f"{above:.1%}") + f" of {documents['n_pairs']} pairs")
