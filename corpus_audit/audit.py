"""The audit pipeline: filter -> deduplicate -> embed and project -> analyse, with a checkpoint per stage.

Stages write into OUTDIR; ``checkpoints.json`` records, for each finished stage, a fingerprint of everything
its output depends on (inputs' sizes and times, options, lexicon, model, axes, package version). A rerun
skips every stage whose fingerprint is unchanged and whose output exists, and recomputes the rest (saying
why), so an interrupted or repeated audit never redoes finished work.

Outputs: ``filtered.parquet`` (+ ``filtered.summary.json``), ``sentences.parquet`` (the kept sentences,
one row per distinct sentence, with ``warmth``, ``competence`` and ``quadrant``), ``summary.json``,
``aq27.csv``, the figures (``density``, ``density_by_illness``, ``quadrant_shares``, ``aq27``; PNG and SVG)
and ``report.html``.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from corpus_audit import __version__
from corpus_audit.atomic import atomic_path, check_output_location, folder_lock, write_text_atomic
from corpus_audit.engines import EngineOptions, make_scorer
from corpus_audit.filtering import CorpusSpec, filter_corpus
from corpus_audit.matcher import default_lexicon_path
from corpus_audit.readers import STDIN, expand_paths
from corpus_audit.resources import sha256_file

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


def _fingerprint(payload: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


def _inputs_identity(spec: CorpusSpec) -> list[Any]:
    """Files by path, size and modification time (stdin and hub datasets cannot be fingerprinted: never resumed)."""
    if spec.hf_dataset or STDIN in spec.inputs:
        return [time.time()]
    return [(path, Path(path).stat().st_size, Path(path).stat().st_mtime_ns) for path in expand_paths(spec.inputs)]


class Checkpoints:
    """``OUTDIR/checkpoints.json``: stage name -> fingerprint of its finished output."""

    def __init__(self, outdir: Path) -> None:
        self.path = outdir / CHECKPOINTS
        try:
            self.done: dict[str, str] = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            self.done = {}

    def fresh(self, stage: str, fingerprint: str, *outputs: Path) -> str | None:
        """None when the stage can be skipped, else the reason it must run."""
        if stage not in self.done:
            return "not run yet"
        if self.done[stage] != fingerprint:
            return "its inputs or options changed"
        missing = [p.name for p in outputs if not p.exists()]
        return f"output missing ({', '.join(missing)})" if missing else None

    def mark(self, stage: str, fingerprint: str) -> None:
        self.done[stage] = fingerprint
        write_text_atomic(self.path, json.dumps(self.done, indent=2))


class ScoreParts:
    """The score stage in fixed chunks of sentences, each saved (data-only ``.npy``) as soon as it is scored.

    An interrupted audit resumes at the first missing chunk. Chunk boundaries depend only on the sentence
    list, so a resumed run embeds exactly the batches an uninterrupted one would, and gives the same scores.
    Parts of another configuration (``key``) are discarded, saying why.
    """

    CHUNK = 4096

    def __init__(self, folder: Path, key: str, n_texts: int) -> None:
        self.folder, self.key, self.n_texts = folder, key, n_texts
        self.meta_path = folder / "meta.json"
        self.model_id: str | None = None

    def _chunk_path(self, index: int) -> Path:
        return self.folder / f"part-{index:06d}.npy"

    def _load_meta(self, log: Callable[[str], None]) -> None:
        try:
            meta = json.loads(self.meta_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            meta = None
        if meta is not None and meta.get("key") == self.key:
            self.model_id = meta.get("model_id")
            return
        if meta is not None:
            log("score: discarding saved chunks of another configuration")
        self.remove()
        self.folder.mkdir(parents=True, exist_ok=True)

    def _saved(self, index: int, rows: int) -> np.ndarray | None:
        try:
            scores = np.load(self._chunk_path(index), allow_pickle=False)
        except (OSError, ValueError):
            return None
        return scores if scores.shape == (rows, 2) and scores.dtype == np.float32 else None

    def score(self, texts: list[str], scorer: Scorer, log: Callable[[str], None], progress: bool) -> np.ndarray:
        """(warmth, competence) per text, shape (n, 2): saved chunks are reused, missing ones scored by ``scorer``
        (which loads its model only if a chunk is missing) and saved as each arrives."""
        from tqdm.auto import tqdm

        self._load_meta(log)
        out = np.empty((len(texts), 2), dtype=np.float32)
        spans = [(start, min(start + self.CHUNK, len(texts))) for start in range(0, len(texts), self.CHUNK)]
        missing = []
        for index, (start, end) in enumerate(spans):
            scores = self._saved(index, end - start)
            if scores is None:
                missing.append(index)
            else:
                out[start:end] = scores
        reused = len(texts) - sum(spans[index][1] - spans[index][0] for index in missing)
        with tqdm(total=len(texts), desc="scoring", unit="sent", disable=not progress, file=sys.stderr) as bar:
            bar.update(reused)
            fresh = scorer.score_chunks(texts[spans[index][0]:spans[index][1]] for index in missing)
            for index, scores in zip(missing, fresh):
                if index == missing[0]:  # the model is known once it has scored a chunk; record it before any save
                    self.model_id = scorer.model_id
                    write_text_atomic(self.meta_path, json.dumps({"key": self.key, "model_id": self.model_id}))
                with atomic_path(self._chunk_path(index)) as tmp, open(tmp, "wb") as handle:
                    np.save(handle, scores, allow_pickle=False)
                start, end = spans[index]
                out[start:end] = scores
                bar.update(end - start)
        if reused:
            log(f"score: resumed, {reused} of {len(texts)} sentences were already scored")
        return out

    def remove(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def mask_mentions(sentence: str, terms: list[str], mask: str = MASKS["en"]) -> str:
    """Replace each matched illness term (whole words, any case) by ``mask``."""
    for term in sorted(set(terms), key=len, reverse=True):
        sentence = re.sub(rf"(?<!\w){re.escape(term)}(?!\w)", mask, sentence, flags=re.IGNORECASE)
    return sentence


def select_sentences(frame: pd.DataFrame, max_sentences: int | None, seed: int) -> tuple[pd.DataFrame, int]:
    """Distinct sentences (first occurrence kept), then at most ``max_sentences`` per illness type, uniformly."""
    distinct = frame.drop_duplicates(subset="sentence", keep="first")
    if max_sentences is None:
        return distinct, len(frame) - len(distinct)
    # The first max_sentences of a seeded shuffle, per type: a uniform sample without replacement.
    shuffled = distinct.sample(frac=1.0, random_state=seed)
    return shuffled.groupby("illness_type").head(max_sentences).sort_index(), len(frame) - len(distinct)


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
        return _run_stages(spec, outdir, options, load_model, log, progress)


def _run_stages(spec: CorpusSpec, outdir: Path, options: AuditOptions, load_model: Callable[[], tuple[Any, Any]],
                log: Callable[[str], None], progress: bool) -> dict[str, Any]:
    import pandas as pd

    from corpus_audit.analysis import analyse, load_bias_map, quadrant_of

    checkpoints = Checkpoints(outdir)
    seconds: dict[str, float] = {}
    filtered = outdir / "filtered.parquet"
    filtered_summary = outdir / "filtered.summary.json"
    lexicon_sha = sha256_file(Path(options.lexicon or default_lexicon_path(options.lang)))
    filter_key = _fingerprint({"inputs": _inputs_identity(spec), "spec": asdict(spec), "lang": options.lang,
                               "lexicon": lexicon_sha, "spacy_model": options.spacy_model,
                               "keep_fields": options.keep_fields, "version": __version__})
    started = time.perf_counter()
    if (reason := checkpoints.fresh("filter", filter_key, filtered, filtered_summary)) is not None:
        log(f"filter: running ({reason})")
        filter_corpus(spec, filtered, options.lang, options.lexicon, options.spacy_model, options.keep_fields,
                      options.workers, progress, options.engine)
        checkpoints.mark("filter", filter_key)
    else:
        log("filter: up to date, skipped")
    seconds["filter"] = time.perf_counter() - started

    sentences_path = outdir / "sentences.parquet"
    axes_sha = sha256_file(Path(options.axes_path)) if options.axes_path else None
    score_key = _fingerprint({"filter": filter_key, "model": options.model, "axes": axes_sha,
                              "mask_terms": options.mask_terms, "max_sentences": options.max_sentences,
                              "seed": options.seed, "version": __version__})
    started = time.perf_counter()
    model_id = None
    if (reason := checkpoints.fresh("score", score_key, sentences_path)) is not None:
        log(f"score: running ({reason})")
        frame, duplicates = select_sentences(pd.read_parquet(filtered), options.max_sentences, options.seed)
        texts = [mask_mentions(s, list(t), MASKS[options.lang]) if options.mask_terms else s
                 for s, t in zip(frame["sentence"], frame["terms"])]
        parts = ScoreParts(outdir / "score-parts", score_key, len(texts))
        embedding_started = time.perf_counter()
        scores = parts.score(texts, make_scorer(load_model, options.engine, options.device), log, progress)
        embedding_seconds = time.perf_counter() - embedding_started
        model_id = parts.model_id
        frame = frame.assign(warmth=scores[:, 0], competence=scores[:, 1])
        frame["quadrant"] = quadrant_of(frame["warmth"].to_numpy(), frame["competence"].to_numpy())
        with atomic_path(sentences_path) as tmp:
            frame.to_parquet(tmp, index=False)
        write_text_atomic(outdir / "score.json", json.dumps({
            "model_id": model_id, "duplicates_removed": duplicates, "sentences_scored": len(frame),
            "embedding_seconds": embedding_seconds, "masked": options.mask_terms}))
        checkpoints.mark("score", score_key)
        parts.remove()
    else:
        log("score: up to date, skipped")
    seconds["score"] = time.perf_counter() - started

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
        "score": json.loads((outdir / "score.json").read_text(encoding="utf-8")),
        "analysis": result.to_dict(),
        "seconds": seconds,
    }
    write_text_atomic(outdir / "summary.json", json.dumps(summary, indent=2, default=str))
    from corpus_audit.report import write_report

    write_report(outdir)  # reads summary.json and the figures, so it comes last
    return summary
