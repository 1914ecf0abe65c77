"""Model work on sentences in fixed chunks, each saved as soon as it is done, so that an interrupted probe resumes
at the first missing chunk (the probe's counterpart of the audit's score parts): :class:`PLLParts` (PLL scores, or
the log-probability of a span masked whole) and :class:`FillParts` (the top fills of a masked slot).

A chunk is a Parquet file of the sentences' results (lists, no pickle); ``meta.json`` holds the configuration key
(model identity, what is computed, chunk size), the model that did the chunks and each chunk's SHA-256. Chunks of another configuration, and damaged or unrecorded chunks, are scored again, and
the log says why. Chunk boundaries depend only on the sentence list, so a resumed probe scores exactly the chunks
an uninterrupted one would.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from corpus_audit.common.chunks import SavedChunks
from corpus_audit.probe.models.masked import Fill, MaskedLM, SentencePLL

if TYPE_CHECKING:
    import pandas as pd

Result = TypeVar("Result")
#: Sentences per saved chunk: about 20 s of the tiny test models on 2 CPU cores, a few minutes of a base model.
PART_SENTENCES = 2000


class Parts(SavedChunks, Generic[Result]):
    """Saved chunks of per-sentence results in ``folder`` for the configuration ``key`` (the bookkeeping:
    :class:`~corpus_audit.common.chunks.SavedChunks`); subclasses say how a chunk's results become a table and
    back."""

    #: Sentences per chunk (the tests make it small to get several chunks from a few sentences).
    chunk = PART_SENTENCES
    suffix = ".parquet"
    configuration = "model, metric or sentences"

    def _frame(self, sentences: list[str], results: list[Result]) -> pd.DataFrame:
        raise NotImplementedError

    def _results(self, frame: pd.DataFrame) -> list[Result]:
        raise NotImplementedError

    def _saved(self, index: int, sentences: list[str], log: Callable[[str], None]) -> list[Result] | None:
        """The saved results of chunk ``index``, or None when it must be done again (missing, damaged, unrecorded)."""
        import pandas as pd

        def decode(data: bytes) -> pd.DataFrame:
            frame = pd.read_parquet(io.BytesIO(data))
            if frame["sentence"].tolist() != sentences:
                raise ValueError("it holds other sentences")
            return frame

        frame = self.load_chunk(index, decode, log)
        return None if frame is None else self._results(frame)

    def _save(self, index: int, sentences: list[str], results: list[Result]) -> None:
        """Save chunk ``index`` as a Parquet table (then record its digest)."""
        buffer = io.BytesIO()
        self._frame(sentences, results).to_parquet(buffer, index=False)
        self.save_chunk(index, buffer.getvalue())

    def run(self, sentences: list[str], load: Callable[[], Any], work: Callable[[Any, list[str]], list[Result]],
            log: Callable[[str], None], progress: bool, unit: str = "PLL") -> list[Result]:
        """The result of every sentence: saved chunks are reused, missing ones done by ``work(model, chunk)`` with
        the model that ``load`` returns (called only if a chunk is missing, its ``model_id`` recorded) and saved as
        each is done."""
        from tqdm.auto import tqdm

        self.load_meta(log)
        spans = self.spans(len(sentences))
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

    def score_spans(self, sentences: list[str], spans: dict[str, tuple[int, int]], load: Callable[[], MaskedLM],
                    max_tokens: int, log: Callable[[str], None], progress: bool) -> list[SentencePLL]:
        """The pieces of each sentence's span (``spans[sentence]``: its characters) masked as one unit
        (:meth:`Parts.run` with :meth:`MaskedLM.span_log_probs`): only those pieces are scored."""
        return self.run(sentences, load, lambda model, chunk: model.span_log_probs(
            chunk, [spans[sentence] for sentence in chunk], max_tokens), log, progress, unit="span")


class FillParts(Parts[list[Fill]]):
    """Saved chunks of the top fills of each sentence's masked slot: words and probabilities, best first."""

    def _frame(self, sentences: list[str], results: list[list[Fill]]) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame({"sentence": sentences, "words": [[fill.word for fill in row] for row in results],
                             "probs": [[fill.prob for fill in row] for row in results]})

    def _results(self, frame: pd.DataFrame) -> list[list[Fill]]:
        return [[Fill(str(word), float(prob)) for word, prob in zip(words, probs)]
                for words, probs in frame[["words", "probs"]].itertuples(index=False)]
