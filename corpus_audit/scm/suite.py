"""The functional test suite for health stigma: what the stigma score does with each kind of sentence.

``templates/stigma_suite_functions.csv`` names the functions: 17 ways of stigmatising (each AQ-27 dimension as a
stated belief, dehumanisation, slurs at people, threats, stigma as a question, an opinion, in a subordinate clause,
behind a disclaimer, in obfuscated spelling) and 16 hard negatives (negated stigma, counter-speech that quotes or
reports stigma to reject it, positive, neutral and supportive statements, counter-stereotypical facts,
self-disclosure, self-stigma, clinical, informational, questions, figurative and self-directed uses, reclaimed
terms, stigma reported in news style). ``templates/<lang>/stigma_suite.csv`` holds the cases, written by the team
from templates (``scripts/build_stigma_suite.py``), labelled by ``docs/labelling.md`` and split by template: the
``train`` and ``dev`` cases may teach and select the score, the ``test`` cases never do.

A stigmatising function passes when the score recalls at least ``RECALL_TARGET`` of its cases at 0.5, a hard
negative when it flags at most ``FLAG_TARGET`` of them; the suite's AUC is stigmatising vs hard negatives.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from corpus_audit.common.csv_rows import read_csv_rows
from corpus_audit.common.resources import data_dir
from corpus_audit.scm.stigma import StigmaData, bootstrap_auc, labelled_mention_forms, load_stigma_data, mask_labelled
from corpus_audit.scm.templates import TemplateError
from corpus_audit.stigma.judgement import CATEGORIES, STIGMA_DECISION

SUITE_FILE = "stigma_suite.csv"
FUNCTIONS_FILE = "stigma_suite_functions.csv"
SUITE_SPLITS = ("train", "dev", "test")
KINDS = ("stigmatising", "hard_negative")
#: At the score's decision point (``STIGMA_DECISION``), a stigmatising function should be recalled at least this
#: often, a hard negative flagged at most this often.
RECALL_TARGET, FLAG_TARGET = 0.80, 0.15
COLUMNS = ("uid", "function", "kind", "template_id", "split", "sentence", "matched_term", "form", "illness_type",
           "category", "stigmatising")


def suite_path(lang: str) -> Path:
    return data_dir("templates") / lang / SUITE_FILE


def load_functions(path: Path | None = None) -> dict[str, str]:
    """Each function's kind (``stigmatising`` or ``hard_negative``), in the file's order."""
    path = path or data_dir("templates") / FUNCTIONS_FILE
    functions = {}
    for line, row in read_csv_rows(path, ("function", "kind", "stigmatising", "description"), TemplateError,
                                   "suite functions file not found"):
        if row["kind"] not in KINDS:
            raise TemplateError(f"{path}, line {line}: kind must be one of {', '.join(KINDS)}, found {row['kind']!r}")
        functions[row["function"]] = row["kind"]
    return functions


def load_suite(lang: str, path: Path | None = None) -> StigmaData:
    """The suite's cases of ``lang``, masked as an audit masks (source ``suite``); a bad row stops with the file
    and line."""
    from corpus_audit.corpus.select import MentionMasker

    path = path or suite_path(lang)
    functions = load_functions()
    rows = read_csv_rows(path, COLUMNS, TemplateError, "suite file not found")
    for line, row in rows:
        problem = (f"unknown function {row['function']!r}" if row["function"] not in functions else
                   f"kind {row['kind']!r} is not the function's ({functions[row['function']]})"
                   if row["kind"] != functions[row["function"]] else
                   f"split must be one of {', '.join(SUITE_SPLITS)}, found {row['split']!r}"
                   if row["split"] not in SUITE_SPLITS else
                   f"category must be one of {', '.join(CATEGORIES)}, found {row['category']!r}"
                   if row["category"] not in CATEGORIES else
                   f"stigmatising must be yes or no, found {row['stigmatising']!r}"
                   if row["stigmatising"] not in ("yes", "no") else
                   "a hard negative must not stigmatise, nor a stigmatising case fail to"
                   if (row["stigmatising"] == "yes") != (row["kind"] == "stigmatising") else None)
        if problem:
            raise TemplateError(f"{path}, line {line}: {problem}")
    masker = MentionMasker(lang)
    table = [row for _, row in rows]
    column = {name: np.array([row[name] for row in table], dtype=object) for name in COLUMNS}
    return StigmaData(texts=[mask_labelled(row["sentence"], row["matched_term"], masker) for row in table],
                      stigmatising=column["stigmatising"] == "yes", split=column["split"],
                      source=np.full(len(table), "suite", dtype=object), form=column["form"], path=path,
                      category=column["category"], doc_id=column["template_id"],
                      mention_forms=[labelled_mention_forms(row["sentence"], row["matched_term"], row["form"],
                                                            masker.matcher) for row in table],
                      function=column["function"])


def load_training_data(lang: str) -> StigmaData:
    """What the stigma score learns from: the labelled sentences of ``lang`` and, where the language has a suite,
    its cases (whose train and dev splits only are ever fitted on)."""
    data = load_stigma_data(lang)
    return data.join(load_suite(lang)) if suite_path(lang).is_file() else data


def suite_results(score: np.ndarray, data: StigmaData, split: str = "test") -> dict[str, Any]:
    """The score on the ``split`` cases of suite ``data`` (``score``: one per case of ``data``): the AUC of
    stigmatising vs hard-negative cases (templates resampled for its 95% interval), and per function the cases,
    the mean score and the share at or above ``STIGMA_DECISION`` (recall of a stigmatising function, false flags of a
    hard negative), with whether it meets its target."""
    rows = data.rows((split,), ("suite",))
    truth, values = data.stigmatising[rows], np.asarray(score, dtype=float)[rows]
    auc, low, high = bootstrap_auc(truth, values, groups=data.doc_id[rows])
    functions = load_functions()
    per_function = {}
    for function, kind in functions.items():
        chosen = data.function[rows] == function
        if not chosen.any():
            continue
        share = float((values[chosen] >= STIGMA_DECISION).mean())
        per_function[function] = {"kind": kind, "n": int(chosen.sum()),
                                  "templates": int(len(set(data.doc_id[rows][chosen]))),
                                  "mean_score": float(values[chosen].mean()), "share_flagged": share,
                                  "meets_target": share >= RECALL_TARGET if kind == "stigmatising"
                                  else share <= FLAG_TARGET}
    failing = sorted(name for name, result in per_function.items() if not result["meets_target"])
    return {"split": split, "n": len(rows), "n_stigmatising": int(truth.sum()), "auc": auc, "auc_ci95": [low, high],
            "threshold": STIGMA_DECISION, "recall_target": RECALL_TARGET, "flag_target": FLAG_TARGET,
            "functions": per_function, "functions_failing": failing}


def suite_validity(encode: Callable[[list[str]], np.ndarray], axes, lang: str, data: StigmaData | None = None,
                   split: str = "test") -> dict[str, Any]:
    """:func:`suite_results` of ``axes``'s stigma score on the suite of ``lang`` (the ``test`` cases: never trained
    on nor used for selection), with the file it read."""
    data = data or load_suite(lang)
    rows = data.rows((split,), ("suite",))
    texts = [data.texts[i] for i in rows]
    score = np.full(len(data), np.nan)
    score[rows] = axes.stigma_score(encode(texts), texts, [data.mention_forms[i] for i in rows])
    return {"file": data.path.name, **suite_results(score, data, split)}


def format_suite(result: dict[str, Any]) -> str:
    """One paragraph of :func:`suite_validity`'s numbers."""
    low, high = result["auc_ci95"]
    functions = result["functions"]
    kinds = {kind: [name for name, value in functions.items() if value["kind"] == kind] for kind in KINDS}
    passed = {kind: sum(functions[name]["meets_target"] for name in names) for kind, names in kinds.items()}
    failing = ", ".join(f"{name} {functions[name]['share_flagged']:.0%}" for name in result["functions_failing"])
    return (f"functional suite ({result['split']} cases: {result['n']}, {result['n_stigmatising']} stigmatising): "
            f"AUC {result['auc']:.3f} (95% CI {low:.3f}-{high:.3f}); stigmatising functions recalled at "
            f"{result['threshold']:.1f} by at least {result['recall_target']:.0%}: {passed['stigmatising']} of "
            f"{len(kinds['stigmatising'])}; hard negatives flagged at most {result['flag_target']:.0%}: "
            f"{passed['hard_negative']} of {len(kinds['hard_negative'])}"
            + (f"; short of the target (share at or above {result['threshold']:.1f}): {failing}" if failing else ""))
