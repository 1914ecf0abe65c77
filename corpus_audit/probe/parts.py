"""Model work on sentences in fixed chunks, each saved as soon as it is done, so that an interrupted probe resumes
at the first missing chunk (the probe's counterpart of the audit's score parts): :class:`PLLParts` (PLL scores) and
:class:`FillParts` (the top fills of a masked slot).

A chunk is a Parquet file of the sentences' results (lists, no pickle); ``meta.json`` holds the configuration key
(model identity, what is computed, chunk size), the model that did the chunks and each chunk's SHA-256. Chunks of another configuration, and damaged or unrecorded chunks, are scored again, and
the log says why. Chunk boundaries depend only on the sentence list, so a resumed probe scores exactly the chunks
an uninterrupted one would.
"""

from __future__ import annotations

import io
import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from corpus_audit.common.atomic import write_bytes_atomic, write_text_atomic
from corpus_audit.common.checkpoints import fingerprint
from corpus_audit.common.resources import sha256_bytes
from corpus_audit.probe.pll import Fill, MaskedLM, SentencePLL

if TYPE_CHECKING:
    import pandas as pd

Result = TypeVar("Result")
#: Sentences per saved chunk: about 20 s of the tiny test models on 2 CPU cores, a few minutes of a base model.
PART_SENTENCES = 2000


class Parts(Generic[Result]):
    """Saved chunks of per-sentence results in ``folder`` for the configuration ``key``; subclasses say how a chunk's
    results become a table and back."""

    #: Sentences per chunk (the tests make it small to get several chunks from a few sentences).
    chunk = PART_SENTENCES

    def __init__(self, folder: Path, key: Any) -> None:
        self.folder = folder
        self.key = fingerprint([key, self.chunk])
        self.meta_path = folder / "meta.json"
        self.model_id: str | None = None
        self.digests: dict[str, str] = {}

    def _path(self, index: int) -> Path:
        return self.folder / f"part-{index:06d}.parquet"

    def _load_meta(self, log: Callable[[str], None]) -> None:
        if self.meta_path.exists():
            try:
                meta = json.loads(self.meta_path.read_text(encoding="utf-8"))
                if not (isinstance(meta, dict) and isinstance(meta.get("parts", {}), dict)):
                    raise ValueError("not a score-parts table")
            except (OSError, ValueError) as error:
                log(f"score: {self.meta_path} is unreadable ({error}); scoring every chunk again")
            else:
                if meta.get("key") == self.key:
                    self.model_id, self.digests = meta.get("model_id"), dict(meta.get("parts", {}))
                    return
                log("score: discarding saved chunks of another configuration (model, metric or sentences)")
        self.remove()
        self.folder.mkdir(parents=True, exist_ok=True)

    def _frame(self, sentences: list[str], results: list[Result]) -> pd.DataFrame:
        raise NotImplementedError

    def _results(self, frame: pd.DataFrame) -> list[Result]:
        raise NotImplementedError

    def _saved(self, index: int, sentences: list[str], log: Callable[[str], None]) -> list[Result] | None:
        """The saved scores of chunk ``index``, or None when it must be scored (missing, damaged, unrecorded)."""
        import pandas as pd

        path = self._path(index)
        recorded = self.digests.get(path.name)
        if recorded is None or not path.exists():  # never finished, or killed between saving and recording
            return None
        try:
            data = path.read_bytes()
            if sha256_bytes(data) != recorded:
                raise ValueError("its SHA-256 differs from the one recorded")
            frame = pd.read_parquet(io.BytesIO(data))
            if frame["sentence"].tolist() != sentences:
                raise ValueError("it holds other sentences")
        except (OSError, ValueError, KeyError) as error:
            log(f"score: {path.name} is damaged ({error}); scoring its sentences again")
            return None
        return self._results(frame)

    def _save(self, index: int, sentences: list[str], results: list[Result]) -> None:
        """Save chunk ``index`` and record its digest, only once saved: a kill in between leaves it unrecorded."""
        buffer = io.BytesIO()
        self._frame(sentences, results).to_parquet(buffer, index=False)
        path = self._path(index)
        write_bytes_atomic(path, buffer.getvalue())
        self.digests[path.name] = sha256_bytes(buffer.getvalue())
        write_text_atomic(self.meta_path, json.dumps({"key": self.key, "model_id": self.model_id,
                                                      "parts": self.digests}))

    def run(self, sentences: list[str], load: Callable[[], Any], work: Callable[[Any, list[str]], list[Result]],
            log: Callable[[str], None], progress: bool, unit: str = "PLL") -> list[Result]:
        """The result of every sentence: saved chunks are reused, missing ones done by ``work(model, chunk)`` with
        the model that ``load`` returns (called only if a chunk is missing, its ``model_id`` recorded) and saved as
        each is done."""
        from tqdm.auto import tqdm

        self._load_meta(log)
        spans = [(start, min(start + self.chunk, len(sentences))) for start in range(0, len(sentences), self.chunk)]
        out: list[Result | None] = [None] * len(sentences)
        missing = []
        for index, (start, end) in enumerate(spans):
            saved = self._saved(index, sentences[start:end], log)
            if saved is None:
                missing.append(index)
            else:
                out[start:end] = saved
        reused = len(sentences) - sum(spans[i][1] - spans[i][0] for i in missing)
        if missing and reused:
            log(f"score: resumed, {reused} of {len(sentences)} sentences were already scored")
        if missing:
            model = load()
            if self.model_id not in (None, model.model_id):
                log(f"score: the saved chunks were scored with {self.model_id}, not {model.model_id}; "
                    "scoring them again")
                missing, reused = list(range(len(spans))), 0
            self.model_id = model.model_id
            with tqdm(total=len(sentences), initial=reused, desc=unit, unit="sent", disable=not progress,
                      file=sys.stderr) as bar:
                for index in missing:
                    start, end = spans[index]
                    results = work(model, sentences[start:end])
                    self._save(index, sentences[start:end], results)
                    out[start:end] = results
                    bar.update(end - start)
        return out  # type: ignore[return-value]

    def remove(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


class PLLParts(Parts[SentencePLL]):
    """Saved chunks of PLL scores: each sentence's pieces, log-probabilities and word spans."""

    def _frame(self, sentences: list[str], results: list[SentencePLL]) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame({"sentence": sentences, "tokens": [r.tokens for r in results],
                             "scores": [r.scores for r in results],
                             "word_start": [[s for s, _ in r.spans] for r in results],
                             "word_end": [[e for _, e in r.spans] for r in results]})

    def _results(self, frame: pd.DataFrame) -> list[SentencePLL]:
        return [SentencePLL(list(tokens), [float(v) for v in scores], list(zip(map(int, starts), map(int, ends))))
                for tokens, scores, starts, ends in frame[["tokens", "scores", "word_start", "word_end"]]
                .itertuples(index=False)]

    def score(self, sentences: list[str], load: Callable[[], MaskedLM], metric: str, max_tokens: int,
              log: Callable[[str], None], progress: bool) -> list[SentencePLL]:
        """The PLL of every sentence (:meth:`Parts.run` with :meth:`MaskedLM.score`)."""
        return self.run(sentences, load, lambda model, chunk: model.score(chunk, metric, max_tokens), log, progress)


class FillParts(Parts[list[Fill]]):
    """Saved chunks of the top fills of each sentence's masked slot: words and probabilities, best first."""

    def _frame(self, sentences: list[str], results: list[list[Fill]]) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame({"sentence": sentences, "words": [[fill.word for fill in row] for row in results],
                             "probs": [[fill.prob for fill in row] for row in results]})

    def _results(self, frame: pd.DataFrame) -> list[list[Fill]]:
        return [[Fill(str(word), float(prob)) for word, prob in zip(words, probs)]
                for words, probs in frame[["words", "probs"]].itertuples(index=False)]
