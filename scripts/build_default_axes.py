"""Rebuild the shipped default axes and their measured-validity records.

For each language (default: every language of ``corpus_audit.languages``), train the default recipe on the
language's default model into ``corpus_audit/axes/<lang>-default-<model>.npz`` and write
``<lang>-default-<model>.validity.json`` beside it from that model's evaluation in ``docs/`` (the JSON of
``corpus-audit axes evaluate --json``), checked to be of the same model weights and language, with the stigma
score of the axes just trained measured on the held-out real sentences (``scm/stigma.py``):

    corpus-audit axes evaluate --lang es --model e5-small --json docs/axes_es_e5.json \
        --embedding-cache /tmp/es-e5.npz
    python scripts/build_default_axes.py --lang es --embedding-cache /tmp/es-e5.npz

Run it after editing a lexicon, a template or the default recipe (and re-run the evaluation first). After editing
only ``templates/<lang>/stigma_labelled.csv`` or the recipe's stigma settings, ``--stigma-only`` refits just the
stigma head (the same fit as ``train_axes``) on the shipped axes and keeps every other array and measure as is:

    python scripts/build_default_axes.py --lang en --stigma-only
    python scripts/build_default_axes.py --lang es --stigma-only --model e5-small   # the other Spanish axes

Where the model runs on onnxruntime, the record also holds the same stigma measures with the encoder's weights in
int8 (``--backend onnx-int8``, scm/quantised.py), which the report shows for an audit run that way; after any
other change, ``--int8-only`` measures just those.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path

import numpy as np

from corpus_audit.common.atomic import write_text_atomic
from corpus_audit.embed import load_embedder
from corpus_audit.embed.base import ONNX_FP32_BACKEND, same_embeddings
from corpus_audit.languages import LANGUAGES
from corpus_audit.scm.evaluate import validity_record
from corpus_audit.scm.quantised import INT8_KEY, int8_validity
from corpus_audit.scm.axes import SCMAxes
from corpus_audit.scm.recipes import DEFAULT_RECIPE, EmbeddingCache, fit_stigma, get_recipe, train_axes
from corpus_audit.scm.stigma import format_stigma, stigma_validity
from corpus_audit.scm.suite import format_suite, load_training_data, suite_path, suite_validity
from corpus_audit.scm.store import SHIPPED_DIR

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def find_evaluation(embedder_id: str, lang: str, folder: Path = DOCS) -> Path:
    """The one evaluation JSON in ``folder`` made on ``embedder_id`` for ``lang``."""
    found = []
    for path in sorted(folder.glob("axes_*.json")):
        report = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(report, dict) and (report.get("embedder_id"), report.get("lang")) == (embedder_id, lang):
            found.append(path)
    if len(found) != 1:
        raise SystemExit(f"expected one evaluation of {embedder_id} ({lang}) in {folder}, found "
                         f"{[p.name for p in found] or 'none'}: run corpus-audit axes evaluate --json first")
    return found[0]


def refit_stigma(lang: str, embedding_cache: Path | None = None, model: str | None = None) -> Path:
    """The shipped axes of ``lang`` (of its default model, or of ``model``: a language may ship axes for another
    model too) with the default recipe's stigma head fitted again (on the labelled sentences
    and the suite's train and dev cases; on the stance branch's features where the default model has one, the axes
    moved onto that model first: :func:`rebase`), and its validity record with the stigma head's held-out and suite
    measures; the SCM axes and the dimension heads do not change."""
    model = model or LANGUAGES[lang].default_model
    embedder = EmbeddingCache(load_embedder(model, lang=lang), embedding_cache)
    target = SHIPPED_DIR / f"{lang}-{DEFAULT_RECIPE}-{model}.npz"
    axes = SCMAxes.load(target)
    validity = target.with_suffix(".validity.json")
    record = json.loads(validity.read_text(encoding="utf-8"))
    if not same_embeddings(str(axes.metadata_.get("embedder_id")), embedder.model_id):
        plain = load_embedder(model, lang=lang, stance=False)
        rebase(axes, embedder, plain)
        # the SCM axes' measures were made on the model without the branch: its sentence view
        record.update(embedder_id=embedder.model_id, sentence_embedder_id=plain.model_id)
    recipe = get_recipe(DEFAULT_RECIPE)
    settings = recipe.stigma_settings(lang)
    gate = None if settings and settings.gate_reads_stigma else axes.judgement_.get("gate")
    if gate is None and not (settings and settings.gate_reads_stigma):
        raise SystemExit(f"{target} has no gate of its own to keep: rebuild the axes in full (without --stigma-only)")
    stigma = load_training_data(lang)
    axes.attach_judgement(gate, axes.judgement_["dimensions"],
                          *fit_stigma(recipe, embedder.encode, lang, stigma, embedder.views))
    axes.metadata_.update(recipe=asdict(recipe), stigma_sha256=stigma.sha256)
    measure_stigma(record, embedder, axes, lang, stigma, model)
    axes.save(target)
    write_text_atomic(validity, json.dumps(record, indent=2) + "\n")
    return target


def remeasure_int8(lang: str, model: str | None = None) -> Path:
    """The int8 entry of the validity record of the shipped axes of ``lang`` (of ``model``) measured again."""
    model = model or LANGUAGES[lang].default_model
    target = SHIPPED_DIR / f"{lang}-{DEFAULT_RECIPE}-{model}.npz"
    validity = target.with_suffix(".validity.json")
    record = json.loads(validity.read_text(encoding="utf-8"))
    measure_int8(record, load_embedder(model, lang=lang), SCMAxes.load(target), lang, load_training_data(lang), model)
    write_text_atomic(validity, json.dumps(record, indent=2) + "\n")
    return validity


def rebase(axes: SCMAxes, embedder, plain) -> None:
    """Move ``axes`` onto ``embedder``, the model they were trained on (``plain``) run with a stance branch:
    checked to give ``plain``'s embeddings as its sentence view, then its views and identity recorded. Axes already
    on another branch of ``plain`` (their ``sentence_embedder_id``) move the same way."""
    sentence_view = axes.metadata_.get("sentence_embedder_id")
    if sentence_view is None or not same_embeddings(str(sentence_view), plain.model_id):
        axes.check_embedder(plain.model_id)
    probe = ["People with this condition are never violent.", "I was diagnosed last year.", "ok"]
    difference = float(np.abs(embedder.encode(probe)[:, :plain.dimension] - plain.encode(probe)).max())
    if not difference <= 1e-4:
        raise SystemExit(f"{embedder.model_id}'s sentence view differs from {plain.model_id} by {difference:.2g}")
    axes.views_, axes.n_features_in_ = tuple(embedder.views), embedder.dimension
    axes.metadata_.update(embedder_id=embedder.model_id, dimension=embedder.dimension,
                          sentence_embedder_id=plain.model_id)


def measure_stigma(record: dict, embedder, axes: SCMAxes, lang: str, stigma, model: str) -> None:
    """The stigma score's held-out measures (real sentences, and the suite's test cases where the language has a
    suite) into the validity ``record``, printed."""
    record["stigma"] = stigma_validity(embedder.encode, axes, lang, stigma)
    print(format_stigma(record["stigma"]))
    record["suite"] = suite_validity(embedder.encode, axes, lang) if suite_path(lang).is_file() else None
    if record["suite"]:
        print(format_suite(record["suite"]))
    measure_int8(record, embedder, axes, lang, stigma, model)


def measure_int8(record: dict, embedder, axes: SCMAxes, lang: str, stigma, model: str) -> None:
    """:func:`int8_validity` into the validity ``record`` where ``embedder`` (of ``model``) runs on onnxruntime in
    fp32 (else the record keeps no int8 entry), printed."""
    if not str(embedder.model_id).startswith(f"{ONNX_FP32_BACKEND}:"):
        record.pop(INT8_KEY, None)
        return
    quantised = EmbeddingCache(load_embedder(model, lang=lang, backend="onnx-int8"))  # held-out texts embed once
    record[INT8_KEY] = int8_validity(embedder.encode, quantised.encode, quantised.model_id, axes, lang, stigma)
    agreement = record[INT8_KEY]["agreement"]
    print(f"int8: {format_stigma(record[INT8_KEY]['stigma'])}")
    if record[INT8_KEY]["suite"]:
        print(f"int8: {format_suite(record[INT8_KEY]['suite'])}")
    print(f"int8 against fp32 on {agreement['n']} held-out sentences: stigma flag changed "
          f"{agreement['stigma_flag_changed']:.1%}, same quadrant {agreement['same_quadrant']:.1%}, mean |stigma "
          f"difference| {agreement['mean_abs_difference']['stigma']:.4f}")


def build(lang: str, evaluation: Path | None = None, embedding_cache: Path | None = None) -> Path:
    model = LANGUAGES[lang].default_model
    embedder = EmbeddingCache(load_embedder(model, lang=lang), embedding_cache)
    evaluation = evaluation or find_evaluation(embedder.model_id, lang)
    report = json.loads(evaluation.read_text(encoding="utf-8"))
    if (report["embedder_id"], report["lang"]) != (embedder.model_id, lang):
        raise SystemExit(f"{evaluation} evaluates {report['embedder_id']} ({report['lang']}), "
                         f"not {embedder.model_id} ({lang})")
    record = validity_record(report, DEFAULT_RECIPE, evaluation.resolve().relative_to(ROOT).as_posix())
    target = SHIPPED_DIR / f"{lang}-{DEFAULT_RECIPE}-{model}.npz"
    axes = train_axes(embedder, lang=lang, recipe=DEFAULT_RECIPE)
    measure_stigma(record, embedder, axes, lang, load_training_data(lang), model)
    axes.save(target)
    write_text_atomic(target.with_suffix(".validity.json"), json.dumps(record, indent=2) + "\n")
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lang", choices=sorted(LANGUAGES), action="append",
                        help="language to rebuild (repeatable; default: all)")
    parser.add_argument("--evaluation", type=Path, default=None,
                        help="evaluation JSON to take the validity from (default: the one in docs/ for the model)")
    parser.add_argument("--embedding-cache", type=Path, default=None,
                        help="the --embedding-cache file of the evaluation: its sentences are not embedded again")
    parser.add_argument("--stigma-only", action="store_true",
                        help="refit only the stigma head of the shipped axes (and its validity measures)")
    parser.add_argument("--int8-only", action="store_true",
                        help="measure only the int8 entry of the shipped axes' validity records")
    parser.add_argument("--model", default=None,
                        help="with --stigma-only or --int8-only and one --lang: the shipped axes of this model "
                             "(default: the language's default model), e.g. --lang es --model e5-small")
    args = parser.parse_args()
    languages = args.lang or sorted(LANGUAGES)
    if args.model and not ((args.stigma_only or args.int8_only) and len(languages) == 1):
        parser.error("--model needs --stigma-only or --int8-only and exactly one --lang")
    if args.int8_only:
        for lang in languages:
            print(f"wrote {remeasure_int8(lang, args.model)}")
        return
    if args.stigma_only:
        for lang in languages:
            print(f"wrote {refit_stigma(lang, args.embedding_cache if len(languages) == 1 else None, args.model)}")
        return
    if (args.evaluation or args.embedding_cache) and len(languages) != 1:
        parser.error("--evaluation and --embedding-cache need exactly one --lang")
    for lang in languages:
        print(f"wrote {build(lang, args.evaluation, args.embedding_cache)}")


if __name__ == "__main__":
    main()
