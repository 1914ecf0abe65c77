"""Options shared by several commands, and turning them into the library's records."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from corpus_audit.corpus.matcher import DEFAULT_TERM_SET, TERM_SETS
from corpus_audit.languages import LANGUAGE_CODES

if TYPE_CHECKING:
    from corpus_audit.corpus.filter import CorpusSpec
    from corpus_audit.engines import EngineOptions


def apply_options(options: list[Callable[[Any], Any]]) -> Callable[[Any], Any]:
    def decorate(command: Any) -> Any:
        for option in reversed(options):
            command = option(command)
        return command

    return decorate


LANG_OPTION = click.option("--lang", type=click.Choice(LANGUAGE_CODES), default="en", show_default=True,
                           help="Language: picks the default model, lexicon and templates.")
# A corpus has no default language: English rules on a Spanish corpus would give a polished, empty audit.
CORPUS_LANG_OPTION = click.option("--lang", type=click.Choice(LANGUAGE_CODES), required=True,
                                  help="Language of the corpus: picks the illness lexicon, the sentence splitter and "
                                       "the default model. A warning says when the text looks like another one.")

_MODEL_OPTIONS = [
    click.option("--model", default=None,
                 help="Embedding model: 'minilm' (English default), 'e5-small' (Spanish default), 'e5-small-fp32' "
                      "(the same, dequantised to fp32: built once into the user cache), 'use', or any "
                      "sentence-transformers name or local folder."),
    click.option("--device", default="cpu", show_default=True, help="cpu or cuda (sentence-transformers models)."),
    click.option("--batch-size", type=click.IntRange(min=1), default=64, show_default=True,
                 help="Sentences per embedding batch."),
    # Checked with the model (corpus_audit.embed.BACKENDS), so that the option list stays free of numpy.
    click.option("--backend", default="auto", show_default=True,
                 help="How a sentence-transformers model runs: 'onnx' (onnxruntime, fp32, exported once into the "
                      "user cache; the same scores, several times faster), 'onnx-int8' (the same with int8 weights, "
                      "quantised once: about 1.3x as fast again, scores measured against fp32 and shown in the "
                      "report; for large corpora), 'torch' (sentence-transformers), 'auto' (onnx for minilm and "
                      "e5-small-fp32 on the CPU, torch for other models)."),
]
model_options = apply_options([LANG_OPTION, *_MODEL_OPTIONS])
#: :data:`model_options` with ``--lang`` required, for the commands that read a corpus.
corpus_model_options = apply_options([CORPUS_LANG_OPTION, *_MODEL_OPTIONS])

engine_options = apply_options([
    click.option("--engine", type=click.Choice(["local", "ray"]), default="local", show_default=True,
                 help="Where filtering and embedding run: 'local' (this process and its worker processes) or 'ray' "
                      "(Ray Data; started inside the command, or a cluster with --ray-address; needs "
                      "pip install 'corpus-audit[ray]'). The outputs are the same. See docs/scaling.md."),
    click.option("--ray-address", default=None,
                 help="With --engine ray: the Ray cluster to run on ('auto', HOST:PORT or ray://HOST:PORT; input "
                      "files must be readable from every node). Default: start Ray on this machine."),
    click.option("--ray-concurrency", type=click.IntRange(min=1), default=None,
                 help="With --engine ray: workers per stage (filter actors, embedding actors). Default: one per "
                      "CPU of the cluster; for embedding with --device cuda, one per GPU."),
])


def engine_from(settings: dict[str, Any]) -> EngineOptions:
    """EngineOptions from the :func:`engine_options` (which it removes from ``settings``)."""
    from corpus_audit.engines import EngineOptions

    name, address, concurrency = (settings.pop(key) for key in ("engine", "ray_address", "ray_concurrency"))
    if name != "ray" and (address or concurrency):
        raise click.UsageError("--ray-address and --ray-concurrency need --engine ray")
    return EngineOptions(name, address, concurrency)


#: ``--terms`` of filter, audit and score; the term sets are the matcher's (the lexicon's ``form`` column).
TERMS_OPTION = click.option(
    "--terms", type=click.Choice(TERM_SETS), default=DEFAULT_TERM_SET, show_default=True,
    help="Which lexicon rows count as mentions: 'paper' the illness names of the seed paper's list alone (its "
         "method and numbers); 'extended' also generic terms (mental illness, the disabled), person nouns (addicts), "
         "adjectives (depressed), slang (psycho, loco) and treatment words (psych ward), under context rules. See "
         "lexicons/README.md.")

corpus_options = apply_options([
    TERMS_OPTION,
    click.option("--format", "fmt", type=click.Choice(["jsonl", "json", "csv", "tsv", "txt", "parquet"]), default=None,
                 help="Input format for every file (default: from each file's extension; stdin: jsonl)."),
    click.option("--text-field", default="text", show_default=True, help="Field/column holding the document text."),
    click.option("--id-field", default="id", show_default=True,
                 help="Field/column holding the document id (default id when absent: FILE:LINE)."),
    click.option("--line-docs", is_flag=True,
                 help="For .txt input: each non-empty line is a document (default: each file is one)."),
    click.option("--keep-field", "keep_fields", multiple=True,
                 help="Copy this input field into the output as a string column (repeatable); 'source_file' gives "
                      "the input file ('source' too, unless the records have a field of that name)."),
    click.option("--hf-dataset", default=None,
                 help="Read a Hugging Face dataset in streaming mode: a hub name, a local dataset folder, or a "
                      "builder (json, csv, parquet, text) whose data files are the CORPUS arguments."),
    click.option("--hf-config", default=None, help="Configuration (subset) name of the --hf-dataset."),
    click.option("--split", "hf_split", default="train", show_default=True, help="Split of the --hf-dataset to read."),
    click.option("--limit", type=click.IntRange(min=1), default=None,
                 help="Stop after this many documents (after sampling)."),
    click.option("--sample", type=click.FloatRange(0, 1, min_open=True), default=None,
                 help="Keep each document with this probability (0 < RATE <= 1)."),
    click.option("--seed", type=int, default=0, show_default=True,
                 help="Random seed for --sample (audit: also --max-sentences and the bootstrap and permutation "
                      "tests)."),
    click.option("--lexicon", type=click.Path(exists=True, dir_okay=False), default=None,
                 help="Illness lexicon CSV to use instead of the bundled lexicons/LANG/illnesses.csv."),
    click.option("--spacy-model", default=None,
                 help="Installed spaCy model for sentence splitting (default: blank pipeline + rule-based "
                      "sentencizer, no download)."),
    click.option("--strict", is_flag=True,
                 help="Stop at the first bad record (malformed JSON, missing text, bad UTF-8, truncated file), naming "
                      "file and line."),
    click.option("--workers", type=click.IntRange(min=1), default=None,
                 help="Processes that parse, match and split JSON Lines input with --engine local (default: one per "
                      "CPU, at most 8; 1: no worker processes). Other formats, --hf-dataset, --limit and --sample run "
                      "in one process. The output is the same either way."),
])

_CORPUS_KEYS = ("fmt", "text_field", "id_field", "line_docs", "hf_dataset", "hf_config", "hf_split", "limit", "sample",
                "seed", "strict")


def corpus_spec_from(corpus: tuple[str, ...], settings: dict[str, Any]) -> CorpusSpec:
    """A CorpusSpec from the CORPUS arguments and the :func:`corpus_options` (which it removes from ``settings``)."""
    from corpus_audit.corpus.documents import ReaderOptions
    from corpus_audit.corpus.filter import CorpusSpec

    values = {key: settings.pop(key) for key in _CORPUS_KEYS}
    if not corpus and not values["hf_dataset"]:
        raise click.UsageError("give at least one CORPUS path (or '-' for stdin), or --hf-dataset")
    if values["fmt"] == "parquet" and "-" in corpus:
        raise click.UsageError("Parquet cannot be read from stdin")
    options = ReaderOptions(text_field=values["text_field"], id_field=values["id_field"], format=values["fmt"],
                            line_docs=values["line_docs"], strict=values["strict"])
    return CorpusSpec(tuple(corpus), options, limit=values["limit"], sample=values["sample"], seed=values["seed"],
                      hf_dataset=values["hf_dataset"], hf_config=values["hf_config"], hf_split=values["hf_split"])


embedding_cache_options = apply_options([
    click.option("--embedding-cache", "embedding_cache", type=click.Path(file_okay=False), default=None,
                 help="Folder of the embedding cache, shared by every audit and score run: a sentence embedded once "
                      "by a model is never embedded again by it (about 1.5 kB per sentence with the default "
                      "model). Default: ~/.cache/corpus-audit/embeddings ($XDG_CACHE_HOME)."),
    click.option("--no-embedding-cache", is_flag=True, help="Neither read nor write the embedding cache."),
])


def embedding_cache_from(settings: dict[str, Any]) -> str | None:
    """The embedding cache folder of the :func:`embedding_cache_options` (which it removes from ``settings``)."""
    from corpus_audit.embed.cache import default_cache_dir

    folder, off = settings.pop("embedding_cache"), settings.pop("no_embedding_cache")
    if off and folder:
        raise click.UsageError("--embedding-cache and --no-embedding-cache contradict each other")
    return None if off else str(folder or default_cache_dir())


PROGRESS_OPTION = click.option("--progress/--no-progress", default=None,
                               help="Progress bars on stderr (default: when stderr is a terminal).")


def show_progress(progress: bool | None) -> bool:
    return sys.stderr.isatty() if progress is None else progress


STRICT_OUTPUT_OPTION = click.option(
    "--strict", is_flag=True,
    help="Stop at the first bad row of sentences.parquet (illness type not mental/physical/both, no sentence, "
         "infinite score, quadrant that disagrees with the scores), naming file and row; default: leave such rows "
         "out and say how many.")


def text_field_options(default: str, help: str, old_name: str) -> Callable[[Any], Any]:
    """``--text-field``, the one name of the text's field or column in every command, and ``old_name``, the
    command's former name for it: hidden, still accepted (see :func:`text_field_from`)."""
    return apply_options([
        click.option("--text-field", default=None, help=f"{help} [default: {default}]"),
        click.option(old_name, "old_text_field", default=None, hidden=True, help="Former name of --text-field."),
    ])


def text_field_from(text_field: str | None, old_text_field: str | None, default: str, old_name: str) -> str:
    """The text field of :func:`text_field_options`; the former name works, with a warning."""
    if old_text_field is not None:
        if text_field is not None and text_field != old_text_field:
            raise click.UsageError(f"--text-field {text_field!r} and {old_name} {old_text_field!r} disagree: give "
                                   "--text-field only")
        warn(f"{old_name} is now --text-field; the old name will go")
        return old_text_field
    return text_field if text_field is not None else default


def output_extension(*extensions: str, writes: str) -> Callable[[click.Context, click.Parameter, Any], Any]:
    """An option callback that refuses, when the command line is read (before any work), an output file whose
    extension is not one of ``extensions``: ``writes`` says what the command writes, e.g. "filter writes Parquet"."""
    def check(context: click.Context, parameter: click.Parameter, value: Any) -> Any:
        for path in value if isinstance(value, tuple) else () if value is None else (value,):  # tuple: repeatable
            if Path(path).suffix.lower() not in extensions:
                raise click.ClickException(f"{path}: {writes}: name the output {' or '.join(extensions)}")
        return value

    return check


def log(message: str) -> None:
    click.echo(message, err=True)


def warn(message: str) -> None:
    click.echo(f"warning: {message}", err=True)
