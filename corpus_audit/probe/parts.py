"""PLL scoring in fixed chunks of sentences, each saved as soon as it is scored, so that an interrupted probe resumes
at the first missing chunk (the probe's counterpart of the audit's score parts).

A chunk is a Parquet file of the sentences' pieces, log-probabilities and word spans (lists, no pickle);
``meta.json`` holds the configuration key (model identity, metric, chunk size), the model that scored the chunks
and each chunk's SHA-256. Chunks of another configuration, and damaged or unrecorded chunks, are scored again, and
the log says why. Chunk boundaries depend only on the sentence list, so a resumed probe scores exactly the chunks
an uninterrupted one would.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Callable

from corpus_audit.common.chunks import SavedChunks
from corpus_audit.probe.pll import MaskedLM, SentencePLL

#: Sentences per saved chunk: about 20 s of the tiny test models on 2 CPU cores, a few minutes of a base model.
PART_SENTENCES = 2000


class PLLParts(SavedChunks):
    """Saved chunks of PLL scores in ``folder`` for the configuration ``key`` (the bookkeeping:
    :class:`~corpus_audit.common.chunks.SavedChunks`)."""

    #: Sentences per chunk (the tests make it small to get several chunks from a few sentences).
    chunk = PART_SENTENCES
    suffix = ".parquet"
    configuration = "model, metric or sentences"

    def _saved(self, index: int, sentences: list[str], log: Callable[[str], None]) -> list[SentencePLL] | None:
        """The saved scores of chunk ``index``, or None when it must be scored (missing, damaged, unrecorded)."""
        import pandas as pd

        def decode(data: bytes) -> pd.DataFrame:
            frame = pd.read_parquet(io.BytesIO(data))
            if frame["sentence"].tolist() != sentences:
                raise ValueError("it holds other sentences")
            return frame

        frame = self.load_chunk(index, decode, log)
        if frame is None:
            return None
        return [SentencePLL(list(tokens), [float(v) for v in scores], list(zip(map(int, starts), map(int, ends))))
                for tokens, scores, starts, ends in frame[["tokens", "scores", "word_start", "word_end"]]
                .itertuples(index=False)]

    def _save(self, index: int, sentences: list[str], results: list[SentencePLL]) -> None:
        """Save chunk ``index`` as a Parquet table (then record its digest)."""
        import pandas as pd

        frame = pd.DataFrame({"sentence": sentences, "tokens": [r.tokens for r in results],
                              "scores": [r.scores for r in results],
                              "word_start": [[s for s, _ in r.spans] for r in results],
                              "word_end": [[e for _, e in r.spans] for r in results]})
        buffer = io.BytesIO()
        frame.to_parquet(buffer, index=False)
        self.save_chunk(index, buffer.getvalue())

    def score(self, sentences: list[str], load: Callable[[], MaskedLM], metric: str, max_tokens: int,
              log: Callable[[str], None], progress: bool) -> list[SentencePLL]:
        """The PLL of every sentence: saved chunks are reused, missing ones scored by the model that ``load``
        returns (called only if a chunk is missing) and saved as each is done."""
        from tqdm.auto import tqdm

        self.load_meta(log)
        spans = self.spans(len(sentences))
        out: list[SentencePLL | None] = [None] * len(sentences)
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
            with tqdm(total=len(sentences), initial=reused, desc="PLL", unit="sent", disable=not progress,
                      file=sys.stderr) as bar:
                for index in missing:
                    start, end = spans[index]
                    results = model.score(sentences[start:end], metric, max_tokens)
                    self._save(index, sentences[start:end], results)
                    out[start:end] = results
                    bar.update(end - start)
        return out  # type: ignore[return-value]
