"""The Ray engine (``--engine ray``): filter and embedding on Ray Data, in this process or on a cluster.

Both stages reuse the local engine's own functions inside Ray workers, and the driver merges their results
in input order, so the outputs are those of the local engine:

- **filter**: one Ray task per input file reads it (JSON Lines in line batches of :func:`batch_bytes`, as
  :func:`~corpus_audit.corpus.readers.iter_line_batches` cuts them; other formats are handed on whole); a pool of
  actors (``map_batches`` with a callable class) runs :func:`~corpus_audit.corpus.filter.filter_unit` on each
  unit, JSON Lines batches after the local engine's pre-filter (:mod:`corpus_audit.corpus.prefilter`, in the
  actor); the driver takes the results in input order, counts them with
  :func:`~corpus_audit.corpus.filter.merge_filtered` and writes the one Parquet file and summary.
- **embedding**: chunks of sentences go to a pool of actors that each load the model and axes once (one
  GPU per actor with ``--device cuda``) and return :func:`~corpus_audit.score.scorer.score_texts` of each chunk.

Importing this module without Ray installed raises :class:`~corpus_audit.engines.options.EngineError` naming the
extra to install; nothing else in the package imports it unless ``--engine ray`` is asked for.
"""

from __future__ import annotations

import logging
import math
import time
import traceback
import warnings
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from itertools import repeat
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from corpus_audit.corpus.documents import ReadStats
from corpus_audit.corpus.filter import CorpusSpec, filter_prefiltered, filter_unit, init_filter_worker, merge_filtered
from corpus_audit.corpus.kept import FilterSummary, KeptSentence
from corpus_audit.corpus.matcher import IllnessMatcher
from corpus_audit.corpus.prefilter import LinePrefilter, line_prefilter
from corpus_audit.corpus.readers import STDIN, LineBatch, expand_paths, iter_line_batches, split_format
from corpus_audit.corpus.segment import Segmenter
from corpus_audit.corpus.writer import write_merged_rows
from corpus_audit.engines.options import RAY_INSTALL_HINT, EngineError, EngineOptions
from corpus_audit.scm.columns import OUTPUT_COLUMNS
from corpus_audit.score.scorer import CHUNK_SENTENCES, Forms, ModelSpec, Scorer, score_texts

if TYPE_CHECKING:
    from corpus_audit.scm.axes import SCMAxes

try:
    import ray
    import ray.data
except ImportError as exc:  # the optional extra is missing
    raise EngineError(f"--engine ray needs Ray, which is not installed: {RAY_INSTALL_HINT}") from exc

#: Bytes of JSON Lines per filter unit, between these bounds (see batch_bytes).
MIN_BATCH_BYTES, MAX_BATCH_BYTES = 1 << 20, 64 << 20
#: Units per filter worker that batch_bytes aims at: enough that the last ones leave workers idle only briefly.
UNITS_PER_WORKER = 8
#: File readers per filter worker: reading and decompressing cost a few percent of filtering.
READERS_PER_WORKER = 0.25


def connect(engine: EngineOptions) -> None:
    """Connect to ``engine.address``, or start Ray on this machine; a Ray already connected in this process
    (a test fixture, a notebook) is used as it is."""
    if ray.is_initialized():
        return
    local = engine.address is None
    try:
        if local:
            # Ray lives as long as this command: no dashboard. Its workers do the command's work, so they run at
            # its priority, as the local engine's do (Ray lowers them to nice 15 by default, which on a machine
            # shared with other work leaves them only the CPU nothing else wants).
            ray.init(include_dashboard=False, logging_level=logging.ERROR,
                     runtime_env={"env_vars": {"RAY_worker_niceness": "0"}})
        else:
            ray.init(address=engine.address, logging_level=logging.ERROR)
    except Exception as error:  # ray.init raises ConnectionError, ValueError, RuntimeError... for a bad address
        where = "start Ray on this machine" if local else f"connect to the Ray cluster at {engine.address}"
        raise EngineError(f"cannot {where}: {error}") from error


def _cluster(resource: str) -> int:
    return int(ray.cluster_resources().get(resource, 0))


def batch_bytes(files: list[str], workers: int) -> int:
    """Bytes per JSON Lines unit: ``UNITS_PER_WORKER`` units per worker for the input's size on disk (less
    than its text when compressed: smaller units, never fewer), within ``MIN_BATCH_BYTES``-``MAX_BATCH_BYTES``.

    Large units because Ray Data costs about 0.1 CPU second per unit (measured: 1 MB units took twice the CPU of
    8 MB ones on a corpus where 5% of the documents mention an illness), small enough to spread the input.
    """
    size = sum(Path(path).stat().st_size for path in files)
    return int(min(MAX_BATCH_BYTES, max(MIN_BATCH_BYTES, size / (workers * UNITS_PER_WORKER))))


@contextmanager
def _data_context(block_bytes: int) -> Iterator[None]:
    """Ray Data settings for the runs made inside, restored afterwards (a dataset keeps those it was made with).

    ``block_bytes``: the size of the largest row, so that each row is a block of its own."""
    context = ray.data.DataContext.get_current()
    settings: dict[str, Any] = {
        # Results come back in input order, so the driver merges them as the local engine does.
        "preserve_order": True,
        # A block per unit: the units spread over the actors as soon as they are read.
        "target_max_block_size": block_bytes,
        # The command draws its own progress bar.
        "enable_progress_bars": False,
        "print_on_execution_start": False,
        "enable_auto_log_stats": False,
        # A worker's own exception (AxesMismatchError, EmbedderError...) reaches the caller as itself.
        "raise_original_map_exception": True,
        # Values Arrow has no type for (LineBatch, results, exceptions) travel as Ray objects; set explicitly,
        # Ray Data says nothing about each such column.
        "enable_fallback_to_arrow_object_ext_type": True,
    }
    owners = {name: context.execution_options if name == "preserve_order" else context for name in settings}
    saved = {name: getattr(owners[name], name) for name in settings}
    # Ray Data's console handler (its dictConfig names it "console"); its file log, ray-data.log in the Ray
    # session's logs folder, keeps everything.
    consoles = [h for h in logging.getLogger("ray.data").handlers if h.name == "console"]
    levels = [h.level for h in consoles]
    for name, value in settings.items():
        setattr(owners[name], name, value)
    for handler in consoles:
        handler.setLevel(logging.ERROR)  # per-run banners and "progress bars disabled" are noise in a CLI
    try:
        with warnings.catch_warnings():
            # Ray warns when an actor pool is larger than a small input can use; harmless.
            warnings.filterwarnings("ignore", message="The minimum number of concurrent actors", category=UserWarning)
            yield
    finally:
        for name, value in saved.items():
            setattr(owners[name], name, value)
        for handler, level in zip(consoles, levels):
            handler.setLevel(level)


def _restarts(engine: EngineOptions) -> dict[str, int]:
    """``map_batches`` actor options: on the Ray this command starts, actors are not restarted. A crashed actor then
    ends the run with its error, as a crashed worker of the local engine does; Ray Data's default (restart forever)
    logs an error-level line on every clean run, as a restarted actor whose constructor arguments left the object
    store fails anyway (ray-project/ray#53727, #57733). A cluster keeps Ray's default: there a node may go."""
    return {"max_restarts": 0} if engine.address is None else {}


@contextmanager
def _actor_options_accepted() -> Iterator[None]:
    """Ray 2.60 deprecates passing actor options such as ``max_restarts`` to ``map_batches`` (removal announced for
    Ray 2.64) and names no replacement for it yet: its warning would be one more stray line."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="`ray_remote_args` is deprecated")
        yield


def filter_corpus_ray(spec: CorpusSpec, output: str | Path, matcher: IllnessMatcher, segmenter: Segmenter,
                      summary: FilterSummary, keep_fields: list[str], engine: EngineOptions,
                      progress: bool = False) -> FilterSummary:
    """:func:`~corpus_audit.engines.filter_corpus` on Ray: the same Parquet rows, in the same order, and the
    same counts. The input files must be readable from every Ray node (a shared or mounted file system)."""
    if spec.hf_dataset or spec.limit or spec.sample or STDIN in spec.inputs:
        raise EngineError("--engine ray reads files: use --engine local for --hf-dataset, --limit, --sample or stdin")
    start = time.perf_counter()
    files = expand_paths(spec.inputs)
    connect(engine)
    workers = engine.concurrency or max(1, _cluster("CPU"))
    summary.extra.update(engine="ray", ray_workers=workers)
    items = [{"path": path, "batched": _is_json_lines(path, spec.options.format)} for path in files]
    state = (spec.options, matcher, segmenter, summary.lang, tuple(keep_fields))
    unit_bytes = batch_bytes(files, workers)
    with _data_context(unit_bytes), _actor_options_accepted():
        dataset = (
            ray.data.from_items(items, override_num_blocks=len(items))
            # Reading is a few percent of the work and holds no CPU slot, so the actors can take every CPU.
            .flat_map(_read_units, fn_kwargs={"unit_bytes": unit_bytes}, num_cpus=0,
                      compute=ray.data.TaskPoolStrategy(size=max(1, math.ceil(workers * READERS_PER_WORKER))))
            .map_batches(_FilterActor, fn_constructor_args=state, batch_size=1, num_cpus=1,
                         compute=ray.data.ActorPoolStrategy(size=workers), **_restarts(engine))
        )
        rows = _merged(dataset.iter_rows(), summary, spec.options.strict)
        return write_merged_rows(rows, summary, output, keep_fields, progress, start)


def _is_json_lines(path: str, fmt: str | None) -> bool:
    # The local engine's rule for reading a file in line batches (readers.jsonl.line_batch_files).
    return (fmt or split_format(path)[0]) == "jsonl"


def _read_units(item: dict[str, Any], unit_bytes: int) -> Iterator[dict[str, _Carried]]:
    """Rows ``{unit}`` of one input file, carrying (LineBatch or path, files read, bytes read): the line batches
    of a JSON Lines file with the file and bytes counted for each, or the path of another file."""
    if not item["batched"]:  # read whole by filter_unit, which counts it
        yield {"unit": _Carried((item["path"], 0, 0))}
        return
    stats = ReadStats()
    counted = (0, 0)
    for batch in iter_line_batches([item["path"]], stats, unit_bytes):
        # The generator has counted exactly this batch's file and bytes since the previous one.
        read = (stats.files - counted[0], stats.bytes_read - counted[1])
        counted = (stats.files, stats.bytes_read)
        yield {"unit": _Carried((batch, *read))}


class _FilterActor:
    """A filter worker: the local engine's worker set-up once and its pre-filter (None without Hyperscan), then
    :func:`filter_unit` on each unit, JSON Lines batches after the pre-filter."""

    def __init__(self, *state: Any) -> None:
        init_filter_worker(*state)
        options, matcher = state[0], state[1]
        self.scanner = line_prefilter(matcher, options.text_field)

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return _results(_captured(_filter, *unit.value, self.scanner) for unit in batch["unit"])


def _filter(unit: LineBatch | str, files: int, bytes_read: int, scanner: LinePrefilter | None) -> tuple[Any, ...]:
    """(kept, counted, source, skips) of one unit, for :func:`merge_filtered` on the driver."""
    if isinstance(unit, LineBatch) and scanner is not None:
        kept, counted = filter_prefiltered(unit, scanner)
    else:
        kept, counted = filter_unit(unit)
    counted.reading.files += files
    counted.reading.bytes_read += bytes_read
    if isinstance(unit, LineBatch):
        return kept, counted, unit.source, unit.skips
    return kept, counted, unit, []


def _captured(function: Callable[..., Any], *args: Any) -> tuple[Any, Exception | None]:
    """(``function(*args)``, None), or (None, the exception it raised, with the worker's traceback as a note).

    The driver raises it when it reaches that unit, so errors come in input order (the first bad record in
    strict mode, as the local engine reports it) and as themselves, which the CLI turns into messages."""
    try:
        return function(*args), None
    except Exception as error:
        error.add_note("".join(traceback.format_exception(error)).rstrip())
        return None, error


class _Carried:
    """A Python value in a Ray Data column. Ray Data makes no Arrow type of it, so it moves the value between
    the processes of the run with Ray's own object serialisation (``enable_fallback_to_arrow_object_ext_type``
    in :func:`_data_context`), as it moves every task's arguments; nothing is read back from a file."""

    def __init__(self, value: Any) -> None:
        self.value = value


def _results(values: Iterable[tuple[Any, Exception | None]]) -> dict[str, np.ndarray]:
    """A Ray Data batch of results, one :class:`_Carried` (value, exception) per row."""
    carried = [_Carried(value) for value in values]
    column = np.empty(len(carried), dtype=object)  # filled after creation: numpy would unpack tuples
    column[:] = carried
    return {"result": column}


def _values(rows: Iterable[dict[str, Any]]) -> Iterator[Any]:
    """The results of :func:`_results` rows in order, raising the first captured exception."""
    for row in rows:
        value, error = row["result"].value
        if error is not None:
            raise error
        yield value


def _merged(rows: Iterable[dict[str, Any]], summary: FilterSummary, strict: bool) -> Iterator[KeptSentence]:
    for kept, counted, source, skips in _values(rows):
        yield from merge_filtered(kept, counted, source, skips, summary, strict)


class RayScorer(Scorer):
    """Scores on a pool of Ray actors, each loading ``model`` once; with ``model.device`` cuda, one GPU each."""

    def __init__(self, model: ModelSpec, engine: EngineOptions) -> None:
        self.model = model
        self.engine = engine
        self.use_gpu = model.device.startswith("cuda")
        self._axes: SCMAxes | None = None

    def start(self) -> None:
        connect(self.engine)
        if self.use_gpu and _cluster("GPU") < 1:
            raise EngineError("--device cuda: the Ray cluster has no GPU")

    def score_chunks(self, chunks: Iterable[list[str]], forms: Iterable[Forms] | None = None) -> Iterator[np.ndarray]:
        items = [{"texts": _Carried((chunk, chunk_forms))}
                 for chunk, chunk_forms in zip(chunks, repeat(None) if forms is None else forms)]
        if not items:
            return
        self.start()
        actors = min(len(items), self.engine.concurrency or max(1, _cluster("GPU" if self.use_gpu else "CPU")))
        # A CPU actor holds one CPU, and Ray limits its threads (OMP_NUM_THREADS) to match.
        resources = {"num_gpus": 1, "num_cpus": 1} if self.use_gpu else {"num_cpus": 1}
        # At most 4 UTF-8 bytes per character: the largest chunk fits one block.
        # (Forms add a few bytes per text: 64 each is generous.)
        with _data_context(max(4 * sum(map(len, item["texts"].value[0])) + 64 * len(item["texts"].value[0])
                               for item in items) + 1024), \
                _actor_options_accepted():
            dataset = ray.data.from_items(items, override_num_blocks=len(items)).map_batches(
                _ScoreActor, fn_constructor_args=(self.model,), batch_size=1,
                compute=ray.data.ActorPoolStrategy(size=actors), **resources, **_restarts(self.engine))
            for self.model_id, scores in _values(dataset.iter_rows()):
                yield scores

    def axes(self) -> SCMAxes:
        """The actors' axes, loaded once in the driver too (with the embedder, which names them)."""
        if self._axes is None:
            self._axes = self.model.load()[1]
        return self._axes

    def project(self, texts: list[str], forms: Forms = None) -> np.ndarray:
        starts = range(0, len(texts), CHUNK_SENTENCES)
        chunks = (texts[start:start + CHUNK_SENTENCES] for start in starts)
        chunk_forms = None if forms is None else (forms[start:start + CHUNK_SENTENCES] for start in starts)
        return np.concatenate([np.empty((0, len(OUTPUT_COLUMNS)), dtype=np.float32),
                               *self.score_chunks(chunks, chunk_forms)])


class _ScoreActor:
    """An embedding worker: loads the model and axes on its first chunk, then scores one chunk per row."""

    def __init__(self, model: ModelSpec) -> None:
        # Loaded on the first call, where an error (a missing model, axes of another model) is captured and
        # raised by the driver as itself, rather than failing the actor's start-up inside Ray.
        self.spec = model
        self._model: tuple[Any, Any] | None = None

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return _results(_captured(self._score, *texts.value) for texts in batch["texts"])

    def _score(self, texts: list[str], forms: Forms) -> tuple[str, np.ndarray]:
        if self._model is None:
            self._model = self.spec.load()
        embedder, axes = self._model
        return embedder.model_id, score_texts(texts, embedder, axes, show_progress=False, forms=forms)
