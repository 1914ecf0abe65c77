"""The commands that maintain the instrument: ``axes train`` and ``axes evaluate`` (warmth/competence axes of an
embedding model) and ``lexicon forms`` (the editable language data)."""

from __future__ import annotations

from pathlib import Path

import click

from corpus_audit.cli.errors import reports_errors
from corpus_audit.cli.options import model_options, output_extension
from corpus_audit.languages import LANGUAGES

#: Languages whose adjectives agree with their noun: their SCM adjectives need a table of forms.
AGREEMENT_LANGUAGES = tuple(code for code, language in LANGUAGES.items() if language.agreement)


@click.group("axes")
def axes_group() -> None:
    """Train and evaluate the warmth/competence axes of an embedding model."""


@axes_group.command("train")
@click.option("--recipe", type=click.Choice(["default", "reference"]), default="default", show_default=True,
              help="'reference': basic templates, PLS + axis-rotated POLAR (Fraser et al. 2022; the seed paper's "
                   "recipe: no neutral class, no judgement gate); 'default': graded axes centred on neutral text, "
                   "the judgement gate and the nine AQ-27 dimension heads (docs/instrument.md).")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              callback=output_extension(".npz", writes="axes train writes NumPy .npz"),
              help="Where to save the axes (.npz); default: the user cache, where score finds them.")
@model_options
@reports_errors()
def axes_train_command(recipe: str, output: str | None, lang: str, model: str | None, device: str,
                       batch_size: int, backend: str) -> None:
    """Train the instrument for a model (axes, and for the default recipe the judgement gate and the AQ-27
    dimension heads) on all of its training data, and save it."""
    from corpus_audit.embed import load_embedder
    from corpus_audit.scm.recipes import train_axes
    from corpus_audit.scm.store import cached_axes_path

    embedder = load_embedder(model, lang=lang, device=device, batch_size=batch_size, backend=backend, log=click.echo)
    axes = train_axes(embedder, lang=lang, recipe=recipe)
    target = output or cached_axes_path(embedder.model_id, lang, recipe)
    axes.save(target)
    click.echo(f"trained {recipe} axes for {embedder.model_id} on {axes.metadata_['n_training_sentences']} "
               f"sentences -> {target}")


@axes_group.command("evaluate")
@click.option("--recipe", type=click.Choice(["default", "reference"]), default="default", show_default=True,
              help="Recipe to evaluate; the reference recipe is always shown beside it.")
@click.option("--folds", type=click.IntRange(min=2), default=5, show_default=True,
              help="Cross-validation folds over held-out adjectives.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed for folds and sampled pairs.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None,
              callback=output_extension(".json", writes="--json writes JSON"), help="Also write the results as JSON.")
@click.option("--embedding-cache", type=click.Path(dir_okay=False), default=None,
              callback=output_extension(".npz", writes="the embedding cache is NumPy .npz"),
              help="Keep the sentence embeddings in this .npz between runs, so that a rerun after editing "
                   "templates or lexicons embeds only the new sentences (a file of another model is replaced).")
@click.option("--labelled", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="A CSV of hand-labelled real sentences (the format of tests/data/labelled_en.csv, guide in "
                   "tests/data/labelling_guide.md) to measure the instrument on; repeatable.")
@model_options
@reports_errors()
def axes_evaluate_command(recipe: str, folds: int, seed: int, json_path: str | None, embedding_cache: str | None,
                          labelled: tuple[str, ...], lang: str, model: str | None, device: str,
                          batch_size: int, backend: str) -> None:
    """Cross-validated functional accuracy of the axes for a model.

    Adjectives are split into folds; each fold trains on the others and tests on sentences built from
    its own adjectives only: basic ('these people are always X'), negation ('... are never X', label
    flipped), two-adjective composition (quadrant must be right) and syntactic variants. Also reports
    generalisation to real-group sentences with adjectives outside every training lexicon.

    For the default recipe also: the neutral test (held-out neutral sentences should sit near the centre),
    the judgement gate (AUC, judgements vs neutral mentions), the graded test (written strength vs score) and
    the nine AQ-27 constructs (AUC over held-out sentences); with --labelled, the same on real sentences.
    """
    from corpus_audit.embed import load_embedder
    from corpus_audit.scm.evaluate import evaluate_model, format_report

    embedder = load_embedder(model, lang=lang, device=device, batch_size=batch_size, backend=backend, log=click.echo)
    report = evaluate_model(embedder, lang, recipes=dict.fromkeys([recipe, "reference"]), n_folds=folds, seed=seed,
                            embedding_cache=embedding_cache, labelled=list(labelled))
    click.echo(format_report(report))
    if json_path:
        import json

        from corpus_audit.common.atomic import write_text_atomic

        write_text_atomic(json_path, json.dumps(report, indent=2))
        click.echo(f"wrote {json_path}")


@axes_group.command("refit")
@click.argument("reviewed", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              callback=output_extension(".npz", writes="axes refit writes an axes file (.npz)"),
              help="The new axes file (.npz), for `corpus-audit audit --axes`, `score --axes` and "
                   "Instrument(axes=...). Never the axes it starts from, nor a file of the package.")
@click.option("--axes", "base", type=click.Path(exists=True, dir_okay=False), default=None,
              help="The axes to start from (default: those of the model, shipped or trained before); their stigma "
                   "head's settings are refitted, everything else is kept.")
@click.option("--labelled", type=click.Path(exists=True, dir_okay=False), default=None,
              help="The labelled data to start from (default: the package's templates/<lang>/stigma_labelled.csv, "
                   "read, never written).")
@click.option("--weight", type=click.IntRange(min=1), default=5, show_default=True,
              help="How many times a reviewed sentence counts beside one of the labelled data "
                   "(docs/stigma_score.md, \"Refitting on your reviews\").")
@click.option("--folds", type=click.IntRange(min=0), default=5, show_default=True,
              help="Cross-validation folds over the reviewed documents, to measure the new score against the "
                   "original on your sentences held out (0: refit without measuring).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the folds and the bootstrap.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None,
              callback=output_extension(".json", writes="--json writes JSON"),
              help="Also write what was measured as JSON (the axes file keeps it too).")
@click.option("--embedding-cache", type=click.Path(dir_okay=False), default=None,
              callback=output_extension(".npz", writes="the embedding cache is NumPy .npz"),
              help="Keep the sentence embeddings in this .npz between runs (the labelled data is embedded once).")
@model_options
@reports_errors("cannot write {output}")
def axes_refit_command(reviewed: tuple[str, ...], output: str, base: str | None, labelled: str | None,
                       weight: int, folds: int, seed: int, json_path: str | None,
                       embedding_cache: str | None, lang: str, model: str | None, device: str, batch_size: int,
                       backend: str) -> None:
    """Learn from your reviews: refit the stigma score on sentences you reviewed, and write new axes.

    REVIEWED: Label Studio exports (JSON, JSON-MIN or a snapshot export of the tasks of `corpus-audit
    export-flagged --format label-studio`) and labelled CSVs (columns text or sentence, stigmatising, category;
    optionally doc_id, terms, forms, dimension, stigma_strength, note, id). A task's reviewers decide by majority;
    ties, unanswered tasks and sentences already decided are left out, counted.

    The stigma head is refitted as the package's was (the axes' recipe, the same features), on the labelled data
    plus your sentences; the projection, the judgement gate and the dimension heads are kept. The command then
    reports, on your sentences held out (cross-validation, whole documents per fold), the new score's ROC AUC
    beside the original's, with a 95% interval of the difference, and both on the labelled data's held-out
    sentences. Nothing of the package changes: use the new file with `corpus-audit audit --axes OUTPUT`.

    Example: corpus-audit axes refit review/export.json my-labels.csv -o my-axes.npz
    """
    import json

    from corpus_audit.audit.label_studio import read_review, reviewed_sentences
    from corpus_audit.common.atomic import write_text_atomic
    from corpus_audit.common.errors import UserError
    from corpus_audit.common.resources import SHIPPED_AXES_DIR
    from corpus_audit.embed import load_embedder
    from corpus_audit.scm.axes import SCMAxes
    from corpus_audit.scm.recipes import EmbeddingCache
    from corpus_audit.scm.refit import format_refit, refit_axes
    from corpus_audit.scm.store import axes_for, find_axes

    target = Path(output).resolve()
    if target.parent == SHIPPED_AXES_DIR.resolve():
        raise UserError(f"{output}: write the new axes to a file of your own, not into the package")
    table, skipped = reviewed_sentences([read_review(path) for path in reviewed])
    click.echo(f"{len(table)} reviewed sentence(s) from {len(reviewed)} file(s) "
               f"({int((table['stigmatising'] == 'yes').sum())} stigmatising)")
    for reason, count in skipped.items():
        click.echo(f"  left out {count}: {reason}")
    if base is not None:
        lang = str(SCMAxes.load(base).metadata_.get("lang", lang))
    embedder = load_embedder(model, lang=lang, device=device, batch_size=batch_size, backend=backend, log=click.echo)
    if base is None:
        axes_for(embedder, lang, log=click.echo)  # trains and caches the model's axes where none exist yet
        base = str(find_axes(embedder.model_id, lang))
    SCMAxes.load(base).check_embedder(embedder.model_id)
    if target == Path(base).resolve():
        raise UserError(f"{output}: write the new axes to a file of your own, not over the axes it starts from")
    click.echo(f"starting from {base}")
    result = refit_axes(base, EmbeddingCache(embedder, embedding_cache).encode, table, labelled_path=labelled,
                        weight=weight, folds=folds, seed=seed, sources=list(reviewed))
    for line in format_refit(result.report):
        click.echo(line)
    result.axes.save(output)
    if json_path:
        write_text_atomic(json_path, json.dumps(result.report, indent=2))
        click.echo(f"wrote {json_path}")
    click.echo(f"wrote {output}: use it with `corpus-audit audit CORPUS --axes {output}` (and score --axes, "
               "Instrument(axes=...))")


@click.group("lexicon")
def lexicon_group() -> None:
    """Maintain the editable language data (lexicons/)."""


@lexicon_group.command("forms")
@click.option("--lang", type=click.Choice(AGREEMENT_LANGUAGES), default=AGREEMENT_LANGUAGES[0], show_default=True,
              help="Language whose SCM adjectives take gender/number forms.")
@click.option("--backend", type=click.Choice(["auto", "lookup", "rule", "stanza"]), default="auto", show_default=True,
              help="'lookup': forms attested in spacy-lookups-data (pip install 'corpus-audit[lexicon-tools]'), "
                   "rules for the rest; 'rule': rules only; 'stanza': also check every form with a local Stanza "
                   "Spanish model; 'auto': whatever is installed.")
@reports_errors()
def lexicon_forms_command(lang: str, backend: str) -> None:
    """Regenerate lexicons/<lang>/scm_forms.csv, the masculine/feminine x singular/plural forms of every SCM
    adjective. Rows whose source is 'manual' are your corrections: they are kept as they are."""
    from corpus_audit.scm.inflect import rebuild_forms_table

    path, counts = rebuild_forms_table(lang, backend)
    click.echo(f"wrote {path}: {sum(counts.values())} rows (" +
               ", ".join(f"{source} {count}" for source, count in sorted(counts.items())) + ")")


COMMANDS = (axes_group, lexicon_group)
