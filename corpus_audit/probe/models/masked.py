"""Pseudo-log-likelihood (PLL) of sentences under a masked language model, as minicons 0.3.39 computes it.

For each non-special token t of a sentence, one copy of the sentence is made with t masked and the model's log
softmax at t gives log P(t | rest); the PLL is the sum over tokens (Salazar et al. 2020). Two metrics:

* ``within_word_l2r`` (Kauf & Ivanova 2023, the seed paper's "PLL-word-l2r"): the copy also masks every *later*
  token of the same word (a fast tokenizer's ``word_ids``; a slow one's words: :func:`slow_word_spans`), so a
  multi-token word is not scored from its own later pieces ("so ##uven ##ir": ``so`` is scored with ``##uven ##ir``
  masked too); earlier pieces stay visible;
* ``original``: only t is masked.

Special tokens (CLS/BOS, SEP/EOS) are context and never scored. What is reproduced, and how the tests check it
against minicons' own numbers: docs/probe.md.

Two differences from minicons, neither changing a number: the masked copies of many sentences are run in batches
of at most ``max_tokens`` tokens (padded length x rows) instead of all copies of a batch of sentences at once,
which exhausts memory on long inputs (300 tokens make 300 copies of 300 tokens); and the vocabulary projection is
applied only at each copy's masked target, not at every position (a copy needs one row of logits, not L x V).

Models load with ``use_safetensors=True`` only: a pickled checkpoint (``pytorch_model.bin``) can run code when
loaded and is refused.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from corpus_audit.common.errors import UserError
from corpus_audit.common.log import to_stderr

if TYPE_CHECKING:
    import torch

#: How every questionnaire file and prompt writes the masked slot; replaced by the model's own mask token
#: (:attr:`MaskedLM.mask`) when a prompt is put to it.
MASK = "<mask>"
METRICS = ("within_word_l2r", "original")
#: Default bound on the tokens of one forward pass (rows x padded length). At 8,192 a BERT-base pass holds about
#: 8,192 x 768 x 4 bytes = 25 MB per hidden layer; the tiny test models are fastest between 4k and 16k.
MAX_TOKENS = 8192


class ModelLoadError(UserError, OSError):
    """A masked language model or its tokenizer cannot be loaded (not found, not safetensors, no mask token)."""


class WordSplitError(UserError, ValueError):
    """The words of a sentence cannot be told from a slow tokenizer's pieces (:func:`slow_word_spans`)."""


class SentenceTooLongError(UserError, ValueError):
    """A sentence has more tokens than the model has positions."""


class MaskSlotError(UserError, ValueError):
    """A prompt to fill does not hold the model's mask token exactly once."""


@dataclass(frozen=True)
class Fill:
    """One filler of a masked slot: the vocabulary entry as text (``word``, stripped of its leading space) and its
    probability (softmax over the whole vocabulary at the slot)."""

    word: str
    prob: float


@dataclass
class SentencePLL:
    """The PLL of one sentence: ``tokens`` (the tokenizer's pieces, specials left out), ``scores`` (log P of each
    piece), ``spans`` (start, end) in characters of the *word* each piece belongs to, to select a phrase's pieces."""

    tokens: list[str]
    scores: list[float]
    spans: list[tuple[int, int]]

    @property
    def total(self) -> float:
        return float(sum(self.scores))

    def span_scores(self, start: int, end: int) -> list[float]:
        """Scores of the pieces whose word overlaps the characters [start, end) of the sentence."""
        return [score for score, (s, e) in zip(self.scores, self.spans) if s < end and e > start]


def safetensors_source(name_or_path: str) -> str:
    """What to pass to ``from_pretrained``: a local folder (which must hold ``.safetensors`` weights: pickled
    checkpoints can run code when loaded and are refused, naming them) or the hub name as given."""
    if not name_or_path.strip():
        raise ModelLoadError("no model given: name a model on the hub or a local folder")
    folder = Path(name_or_path).expanduser()
    if folder.is_dir() and not any(folder.glob("*.safetensors")):
        pickled = sorted(path.name for path in folder.glob("*.bin")) + sorted(path.name for path in
                                                                              folder.glob("*.pt*"))
        raise ModelLoadError(f"{folder} has no .safetensors weights"
                             + (f" (only {', '.join(pickled)}: pickled checkpoints can run code when loaded and "
                                "are refused; convert them with safetensors first)" if pickled else ""))
    return str(folder) if folder.is_dir() else name_or_path


def model_id_of(model: Any, source: str) -> str:
    """The loaded model's name with the hub commit it came from, when the hub reported one (a folder: its path)."""
    commit = getattr(model.config, "_commit_hash", None)
    return f"{source}@{commit[:12]}" if commit and not Path(source).is_dir() else source


def set_threads(threads: int | None) -> None:
    """Set torch's CPU threads (None: torch's choice); see ``MaskedLM.load``."""
    import torch

    if threads is not None:
        torch.set_num_threads(threads)


def device_of(name: str) -> str:
    import torch

    if name not in ("cpu", "cuda") and not name.startswith("cuda:"):
        raise ModelLoadError(f"device must be cpu or cuda (or cuda:N), not {name!r}")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise ModelLoadError(f"device {name} asked for, but torch sees no CUDA GPU here; use --device cpu")
    return name


def load_pretrained(auto_model: Any, name_or_path: str, *, what: str, meaning: str, device: str, threads: int | None,
                    log: Callable[[str], None], **tokenizer_options: Any) -> tuple[Any, Any, str]:
    """(model, tokenizer, model id) of ``name_or_path`` (hub name or local folder) loaded with the transformers
    class ``auto_model``, safetensors only; a load that fails is a :class:`ModelLoadError` naming ``what`` was
    asked for, and weights the checkpoint lacks are a warning that the model's ``meaning`` means nothing."""
    from transformers import AutoTokenizer
    from transformers.utils import logging as transformers_logging

    source = safetensors_source(name_or_path)
    device_of(device)
    set_threads(threads)
    transformers_logging.disable_progress_bar()  # its bars would interleave with the probe's own
    try:
        tokenizer = AutoTokenizer.from_pretrained(source, **tokenizer_options)
        model, info = auto_model.from_pretrained(source, use_safetensors=True, output_loading_info=True)
    except (OSError, ValueError, KeyError) as error:
        raise ModelLoadError(f"cannot load {what} {name_or_path!r} (safetensors weights and a tokenizer are needed): "
                             f"{error}") from None
    missing = info.get("missing_keys") or []
    if missing:
        log(f"warning: {name_or_path}: {len(missing)} weight(s) not in the checkpoint were initialised at random "
            f"({', '.join(sorted(missing)[:3])}...): its {meaning} mean nothing")
    return model, tokenizer, model_id_of(model, source)


def slow_word_spans(tokenizer: Any, sentence: str, pieces: list[int]) -> list[tuple[int, int]] | None:
    """The characters [start, end) of the word each of ``pieces`` (the ids of ``sentence`` without special tokens)
    belongs to, for a tokenizer without ``word_ids()`` (a slow, Python one); None when no split fits.

    The words are those of a fast tokenizer's pre-tokenizer, tried finest first: BERT's (whitespace and every
    punctuation mark; WordPiece vocabularies), then whitespace alone (SentencePiece vocabularies, whose pieces of a
    word do not stand alone). A split fits when tokenizing its words one by one gives exactly ``pieces``, so the
    pieces of each word are known, not guessed."""
    from tokenizers import pre_tokenizers

    for splitter in (pre_tokenizers.BertPreTokenizer(), pre_tokenizers.WhitespaceSplit()):
        spans: list[tuple[int, int]] = []
        ids: list[int] = []
        for _, (start, end) in splitter.pre_tokenize_str(sentence):
            word = tokenizer(sentence[start:end], add_special_tokens=False)["input_ids"]
            ids += word
            spans += [(start, end)] * len(word)
        if ids == pieces:
            return spans
    return None


class MaskedLM:
    """A masked language model with its tokenizer (fast or slow), loaded by hub name or local folder, safetensors
    only.

    ``model_id`` names what was loaded (the name or path and, when the hub reported it, the commit).
    """

    def __init__(self, model: Any, tokenizer: Any, model_id: str, device: str = "cpu") -> None:
        if tokenizer.mask_token_id is None:
            raise ModelLoadError(f"{model_id}: the tokenizer has no mask token: not a masked language model")
        self.model = model.to(device_of(device)).eval()
        self.tokenizer = tokenizer
        self.model_id = model_id
        self.device = device
        self.max_length = self._max_length()
        self._targets: torch.Tensor | None = None
        head = model.get_output_embeddings()
        if head is not None:  # the vocabulary projection then sees only each copy's target (module docstring)
            head.register_forward_pre_hook(self._keep_targets)

    @classmethod
    def load(cls, name_or_path: str, device: str = "cpu", log: Callable[[str], None] = to_stderr,
             threads: int | None = None) -> MaskedLM:
        """Load ``name_or_path`` (hub name or local folder) with ``AutoModelForMaskedLM``, safetensors only.

        ``threads``: CPU threads of torch (default: torch's choice). On a machine whose cores other processes also
        use, 1 thread was 13 times faster than 2 for the tiny test models (docs/probe.md)."""
        from transformers import AutoModelForMaskedLM

        return cls(*load_pretrained(AutoModelForMaskedLM, name_or_path, what="masked language model",
                                    meaning="scores", device=device, threads=threads, log=log, use_fast=True), device)

    def random_copy(self, seed: int) -> MaskedLM:
        """The same architecture and tokenizer with weights drawn afresh (``from_config``, torch seeded with
        ``seed``): a model that learnt nothing, for the null check of a probe (docs/probe.md)."""
        import torch
        from transformers import AutoModelForMaskedLM

        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            model = AutoModelForMaskedLM.from_config(self.model.config)
        return MaskedLM(model, self.tokenizer, f"{self.model_id} (random weights, seed {seed})", self.device)

    def _max_length(self) -> int:
        limit = getattr(self.tokenizer, "model_max_length", None)
        positions = getattr(self.model.config, "max_position_embeddings", None)
        # RoBERTa-style models start positions after the padding index, so they hold 2 fewer tokens.
        if positions is not None and getattr(self.model.config, "model_type", "") in ("roberta", "xlm-roberta",
                                                                                       "camembert", "longformer"):
            positions -= 2
        candidates = [value for value in (limit, positions) if isinstance(value, int) and 0 < value < 1_000_000]
        return min(candidates) if candidates else 512

    def _keep_targets(self, module: Any, args: tuple[Any, ...]) -> tuple[Any, ...] | None:
        import torch

        hidden = args[0]
        if self._targets is None or hidden.dim() != 3:
            return None
        rows = torch.arange(hidden.shape[0], device=hidden.device)
        return (hidden[rows, self._targets].unsqueeze(1), *args[1:])

    # ------------------------------------------------------------------------------------------------ scoring

    def encode(self, sentences: Sequence[str]) -> list[_Encoded]:
        """Token ids, word ids, scored positions and word character spans of each sentence."""
        encodings = self.tokenizer(list(sentences), add_special_tokens=True, return_special_tokens_mask=True)
        out = []
        for index, sentence in enumerate(sentences):
            ids = encodings["input_ids"][index]
            if len(ids) > self.max_length:
                raise SentenceTooLongError(f"sentence {index + 1} has {len(ids)} tokens, more than the "
                                           f"{self.max_length} the model takes: {sentence[:80]!r}...")
            special = encodings["special_tokens_mask"][index]
            positions = [t for t in range(len(ids)) if not special[t]]
            if self.tokenizer.is_fast:
                word_ids = encodings.word_ids(index)
                spans = []
                for t in positions:
                    word = word_ids[t]
                    chars = encodings.word_to_chars(index, word) if word is not None else None
                    spans.append((chars.start, chars.end) if chars is not None else (0, 0))
            else:
                word_ids, spans = self._slow_words(index, sentence, ids, positions)
            out.append(_Encoded(ids, word_ids, positions, spans))
        return out

    def _slow_words(self, index: int, sentence: str, ids: list[int], positions: list[int]
                    ) -> tuple[list[int | None], list[tuple[int, int]]]:
        """Word ids (numbered by word, None at special tokens) and word spans of a slow tokenizer's sentence."""
        spans = slow_word_spans(self.tokenizer, sentence, [ids[t] for t in positions])
        if spans is None:
            raise WordSplitError(f"{self.model_id}: the slow tokenizer's pieces of sentence {index + 1} do not "
                                 f"split into words as a fast tokenizer's would, so the words of "
                                 f"{sentence[:80]!r} are unknown; use a model with a fast tokenizer")
        numbers = {span: number for number, span in enumerate(dict.fromkeys(spans))}
        word_ids: list[int | None] = [None] * len(ids)
        for t, span in zip(positions, spans):
            word_ids[t] = numbers[span]
        return word_ids, spans

    def score(self, sentences: Sequence[str], metric: str = "within_word_l2r", max_tokens: int = MAX_TOKENS,
              progress: bool = False) -> list[SentencePLL]:
        """The PLL of each sentence, in order. Forward passes hold at most ``max_tokens`` tokens (a sentence longer
        than that runs one copy per pass)."""
        import torch
        from tqdm.auto import tqdm

        if metric not in METRICS:
            raise ValueError(f"metric must be one of {', '.join(METRICS)}, not {metric!r}")
        encoded = self.encode(sentences)
        copies = [(len(enc.ids), index, k) for index, enc in enumerate(encoded) for k in range(len(enc.positions))]
        copies.sort()  # similar lengths share a pass: little padding
        scores = [[0.0] * len(enc.positions) for enc in encoded]
        with torch.inference_mode(), tqdm(total=len(copies), desc="PLL", unit="copy", disable=not progress,
                                          file=sys.stderr) as bar:
            for batch in _batches(copies, max_tokens):
                values = self._forward(batch, encoded, metric)
                for (_, index, k), value in zip(batch, values):
                    scores[index][k] = value
                bar.update(len(batch))
        return [SentencePLL(self.tokenizer.convert_ids_to_tokens([enc.ids[t] for t in enc.positions]), row,
                            enc.spans) for enc, row in zip(encoded, scores)]

    def span_log_probs(self, sentences: Sequence[str], spans: Sequence[tuple[int, int]],
                       max_tokens: int = MAX_TOKENS) -> list[SentencePLL]:
        """Per sentence, the pieces of the words inside its character span ``(start, end)``, each scored with
        itself and every later piece of the span masked, the earlier ones visible: the scores' sum
        (:attr:`SentencePLL.total`) is the log-probability of the whole span given the rest of the sentence (left to
        right), a phrase of several words masked as one unit, as Kurita et al. (2019) mask a target of several
        pieces. The within-word PLL differs on such a phrase: it scores "bipolar" with "affective disorder"
        visible, which gives the name away whatever the rest of the sentence says. Only the span's pieces are
        scored (``tokens``, ``scores`` and ``spans`` hold those alone)."""
        encoded = self.encode(sentences)
        inside = [[k for k, (a, b) in enumerate(enc.spans) if b > a and a >= start and b <= end]
                  for enc, (start, end) in zip(encoded, spans)]
        positions = [[enc.positions[k] for k in chosen] for enc, chosen in zip(encoded, inside)]
        copies = sorted((len(encoded[index].ids), index, k) for index, pieces in enumerate(positions)
                        for k in range(len(pieces)))
        scores = [[0.0] * len(pieces) for pieces in positions]
        for batch in _batches(copies, max_tokens):
            sequences = []
            for _, index, k in batch:
                ids = list(encoded[index].ids)
                for position in positions[index][k:]:
                    ids[position] = self.tokenizer.mask_token_id
                sequences.append(ids)
            targets = [positions[index][k] for _, index, k in batch]
            values = self._log_probs(sequences, targets, [encoded[index].ids[t] for (_, index, _), t in
                                                          zip(batch, targets)])
            for (_, index, k), value in zip(batch, values):
                scores[index][k] = value
        return [SentencePLL(self.tokenizer.convert_ids_to_tokens([enc.ids[t] for t in pieces]), row,
                            [enc.spans[k] for k in chosen])
                for enc, pieces, chosen, row in zip(encoded, positions, inside, scores)]

    @property
    def mask(self) -> str:
        """The tokenizer's mask token as text (``[MASK]``, ``<mask>``), to write into prompts."""
        return str(self.tokenizer.mask_token)

    def fill(self, prompts: Sequence[str], top_k: int, max_tokens: int = MAX_TOKENS) -> list[list[Fill]]:
        """The ``top_k`` most probable fillers of the one mask token of each prompt (as Hugging Face's fill-mask
        pipeline gives them: softmax over the vocabulary, each token decoded and stripped), best first. Prompts run
        in passes of at most ``max_tokens`` tokens."""
        import torch

        encodings = self.tokenizer(list(prompts), add_special_tokens=True)["input_ids"]
        slots = []
        for index, ids in enumerate(encodings):
            found = [t for t, token in enumerate(ids) if token == self.tokenizer.mask_token_id]
            if len(found) != 1:
                raise MaskSlotError(f"prompt {index + 1} holds the mask token {self.mask} {len(found)} times, not "
                                    f"once: {prompts[index][:80]!r}")
            if len(ids) > self.max_length:
                raise SentenceTooLongError(f"prompt {index + 1} has {len(ids)} tokens, more than the "
                                           f"{self.max_length} the model takes: {prompts[index][:80]!r}...")
            slots.append(found[0])
        order = sorted(range(len(prompts)), key=lambda i: len(encodings[i]))
        out: list[list[Fill]] = [[] for _ in prompts]
        k = min(top_k, len(self.tokenizer))
        with torch.inference_mode():
            for batch in _batches([(len(encodings[i]), i, 0) for i in order], max_tokens):
                rows = [index for _, index, _ in batch]
                logits = self._logits([encodings[i] for i in rows], [slots[i] for i in rows])
                probs, ids = torch.softmax(logits.float(), dim=-1).topk(k, dim=-1)
                for index, row_probs, row_ids in zip(rows, probs.tolist(), ids.tolist()):
                    out[index] = [Fill(self.tokenizer.decode([token]).strip(), prob)
                                  for token, prob in zip(row_ids, row_probs)]
        return out

    def _logits(self, sequences: list[list[int]], targets: list[int]) -> torch.Tensor:
        """The vocabulary logits at ``targets[i]`` of each token sequence (padded into one pass), shape (n, V)."""
        import torch

        length = max(len(ids) for ids in sequences)
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        ids = torch.full((len(sequences), length), pad, dtype=torch.long)
        attention = torch.zeros((len(sequences), length), dtype=torch.long)
        for row, sequence in enumerate(sequences):
            ids[row, :len(sequence)] = torch.tensor(sequence)
            attention[row, :len(sequence)] = 1
        inputs = {"input_ids": ids, "attention_mask": attention}
        if "token_type_ids" in self.tokenizer.model_input_names:
            inputs["token_type_ids"] = torch.zeros_like(ids)
        inputs = {name: tensor.to(self.device) for name, tensor in inputs.items()}
        target_tensor = torch.tensor(targets, dtype=torch.long)
        self._targets = target_tensor.to(self.device)
        try:
            logits = self.model(**inputs).logits
        finally:
            self._targets = None
        if logits.shape[1] == 1:  # the hook kept the target rows only
            return logits[:, 0]
        # a head the hook did not reach: every position was projected
        return logits[torch.arange(len(sequences), device=logits.device), target_tensor.to(logits.device)]

    def _log_probs(self, sequences: list[list[int]], targets: list[int], originals: list[int]) -> list[float]:
        """log P(``originals[i]`` at ``targets[i]`` of ``sequences[i]``), in one pass."""
        import torch

        with torch.inference_mode():
            log_probs = torch.log_softmax(self._logits(sequences, targets).float(), dim=-1)
        return log_probs.gather(1, torch.tensor(originals, device=log_probs.device)[:, None])[:, 0].tolist()

    def _forward(self, batch: list[tuple[int, int, int]], encoded: list[_Encoded], metric: str) -> list[float]:
        sequences, targets, originals = [], [], []
        for _, index, k in batch:
            enc = encoded[index]
            target = enc.positions[k]
            ids = list(enc.ids)
            for position in enc.masked(target, metric):
                ids[position] = self.tokenizer.mask_token_id
            sequences.append(ids)
            targets.append(target)
            originals.append(enc.ids[target])
        return self._log_probs(sequences, targets, originals)


class ModelOnDemand:
    """A masked language model loaded on first call, then the same one (a rerun whose chunks are all saved never
    loads it); the log says what is loaded where. Every probe's way to its model."""

    def __init__(self, name_or_path: str, device: str = "cpu", threads: int | None = None,
                 log: Callable[[str], None] = to_stderr) -> None:
        self.name_or_path, self.device, self.threads, self.log = name_or_path, device, threads, log
        self.model: MaskedLM | None = None

    def __call__(self) -> MaskedLM:
        if self.model is None:
            self.log(f"loading {self.name_or_path} on {self.device}")
            self.model = MaskedLM.load(self.name_or_path, self.device, self.log, self.threads)
        return self.model


@dataclass
class _Encoded:
    ids: list[int]
    word_ids: list[int | None]
    positions: list[int]
    spans: list[tuple[int, int]]

    def masked(self, target: int, metric: str) -> list[int]:
        """Positions masked to score ``target``: itself, and with word-l2r every later piece of its word."""
        word = self.word_ids[target]
        if metric == "original" or word is None:
            return [target]
        return [target] + [t for t in self.positions if t > target and self.word_ids[t] == word]


def _batches(copies: list[tuple[int, int, int]], max_tokens: int) -> Iterator[list[tuple[int, int, int]]]:
    """Consecutive runs of ``copies`` (sorted by length) whose rows x longest length stays within ``max_tokens``."""
    batch: list[tuple[int, int, int]] = []
    for copy in copies:
        if batch and (len(batch) + 1) * max(copy[0], batch[-1][0]) > max_tokens:
            yield batch
            batch = []
        batch.append(copy)
    if batch:
        yield batch
