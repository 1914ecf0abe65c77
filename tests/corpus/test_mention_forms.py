"""Mention forms (issue 27): the ``form`` column, the ``paper`` and ``extended`` term sets, the shared require rules,
the written recall and non-referential sets, the per-form counts and the masking of the new forms."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from corpus_audit.common.errors import LexiconError
from corpus_audit.corpus.filter import CorpusSpec
from corpus_audit.corpus.matcher import (
    FORMS,
    IllnessMatcher,
    default_lexicon_path,
    load_lexicon,
)
from corpus_audit.corpus.prefilter import line_prefilter, prefilter_available
from corpus_audit.corpus.select import MentionMasker
from corpus_audit.engines import filter_corpus

DATA = Path(__file__).resolve().parents[1] / "data"
SAMPLES = {"reddit_sample_en": "en", "codiesp_sample_en": "en", "codiesp_sample_es": "es"}


@pytest.fixture(scope="module")
def extended() -> dict[str, IllnessMatcher]:
    return {lang: IllnessMatcher.for_language(lang) for lang in ("en", "es")}


@pytest.mark.parametrize("lang", ["en", "es"])
def test_every_row_has_a_form_and_paper_is_the_diagnosis_rows(lang: str) -> None:
    rows = pd.read_csv(default_lexicon_path(lang), keep_default_na=False)
    assert set(rows["form"]) == set(FORMS)
    paper = load_lexicon(default_lexicon_path(lang), "paper")
    assert [entry.term for entry in paper] == rows.loc[rows["form"] == "diagnosis", "term"].tolist()
    assert len(paper) == {"en": 155, "es": 205}[lang]  # the seed paper's list as shipped before the new forms
    assert {entry.form for entry in load_lexicon(default_lexicon_path(lang))} == set(FORMS)


@pytest.mark.parametrize("sample", sorted(SAMPLES))
def test_paper_terms_keep_the_same_sentences_as_before(sample: str, tmp_path: Path) -> None:
    """``--terms paper`` on a bundled sample keeps exactly the rows the lexicon kept before the new forms (the file
    was written by the base commit 384281e), with the same terms, offsets, illnesses and types."""
    output = tmp_path / "out.parquet"
    summary = filter_corpus(CorpusSpec((str(DATA / f"corpus_{sample}.jsonl.gz"),)), output, SAMPLES[sample],
                            workers=1, terms="paper")
    kept = pd.read_parquet(output)
    got = pd.DataFrame({"doc_id": kept["doc_id"], "sentence_index": kept["sentence_index"],
                        "terms": kept["terms"].map(";".join),
                        "term_offsets": kept["term_offsets"].map(lambda spans: ";".join(f"{a}-{b}" for a, b in spans)),
                        "illnesses": kept["illnesses"].map(";".join), "illness_type": kept["illness_type"]})
    expected = pd.read_csv(DATA / "paper_terms_expected.csv", keep_default_na=False, dtype={"sentence_index": "int32"})
    expected = expected[expected["sample"] == sample].drop(columns="sample").reset_index(drop=True)
    pd.testing.assert_frame_equal(got.reset_index(drop=True), expected, check_dtype=False)
    assert set(kept["forms"].explode()) == {"diagnosis"}
    assert summary.to_dict()["terms"] == "paper"


def test_extended_terms_add_forms_and_count_them(tmp_path: Path) -> None:
    output = tmp_path / "out.parquet"
    summary = filter_corpus(CorpusSpec((str(DATA / "corpus_reddit_sample_en.jsonl.gz"),)), output, "en", workers=1)
    kept = pd.read_parquet(output)
    counted = json.loads((tmp_path / "out.summary.json").read_text())
    assert counted["terms"] == "extended"
    assert all(len(forms) == len(terms) for forms, terms in zip(kept["forms"], kept["terms"]))
    by_form = kept["forms"].explode().value_counts().to_dict()
    assert {form: sum(types.values()) for form, types in counted["mentions_by_form"].items()} == by_form
    assert set(by_form) - {"diagnosis"}, "the new forms find mentions in the Reddit sample"
    assert sum(by_form.values()) == sum(summary.mentions_by_illness.values())
    paper = pd.read_csv(DATA / "paper_terms_expected.csv")
    assert len(kept) > (paper["sample"] == "reddit_sample_en").sum()


@pytest.mark.parametrize("lang", ["en", "es"])
def test_written_recall_set_is_kept_with_its_form(lang: str, extended: dict[str, IllnessMatcher]) -> None:
    """Every sentence we wrote for a form (stigmatising and supportive) is kept, the term with its form and type."""
    rows = pd.read_csv(DATA / f"mention_recall_{lang}.csv", keep_default_na=False)
    assert len(rows) >= 150 and set(rows["form"]) == set(FORMS)
    assert set(rows["stance"]) == {"stigmatising", "supportive"}
    missed = []
    for row in rows.itertuples():
        found = [(m.form, m.type, m.illness) for m in extended[lang].find(row.sentence)
                 if m.surface.lower() == row.term.lower()]
        if (row.form, row.type, row.illness) not in found:
            missed.append((row.sentence, row.term, found))
    assert not missed


@pytest.mark.parametrize("lang", ["en", "es"])
def test_non_referential_uses_are_not_kept(lang: str, extended: dict[str, IllnessMatcher]) -> None:
    sentences = pd.read_csv(DATA / f"mention_nonreferential_{lang}.csv")["sentence"]
    assert len(sentences) >= 30
    kept = {sentence: [m.surface for m in extended[lang].find(sentence)] for sentence in sentences}
    assert {sentence: terms for sentence, terms in kept.items() if terms} == {}


def test_new_forms_are_masked_and_paper_masks_diagnoses_only() -> None:
    text = "My neighbour is a psycho and he has depression."
    assert MentionMasker("en")(text).count(MentionMasker("en").mask) == 2
    assert MentionMasker("en", terms="paper")(text).count(MentionMasker("en").mask) == 1
    assert "loco" not in MentionMasker("es")("Ese loco vive en un manicomio.").lower()


@pytest.mark.skipif(not prefilter_available(), reason="Hyperscan or orjson not installed")
def test_line_prefilter_lets_new_forms_through(extended: dict[str, IllnessMatcher]) -> None:
    prefilter = line_prefilter(extended["en"], "text")
    assert prefilter.keeps(b'{"text": "what a nutjob he is"}')
    assert prefilter.keeps(b'{"text": "the mentally ill"}')
    assert not prefilter.keeps(b'{"text": "a quiet afternoon"}')
    assert not line_prefilter(IllnessMatcher.for_language("en", "paper"), "text").keeps(b'{"text": "what a nutjob"}')


def test_form_and_require_rules_are_read_and_checked(tmp_path: Path) -> None:
    lexicon = tmp_path / "lex.csv"
    (tmp_path / "context_rules.csv").write_text(
        "rule,exclude_context,require_context,note\nof_people,,\\bis\\s+@@,said of someone\n"
        "no_good,@@\\s+good,,intensifier\n", encoding="utf-8")
    lexicon.write_text("term,illness,type,form,rules\nflu,flu,physical,,\nwild,x,mental,slang,of_people;no_good\n",
                       encoding="utf-8")
    matcher = IllnessMatcher.from_csv(lexicon)
    assert [m.form for m in matcher.find("he is wild and has flu")] == ["slang", "diagnosis"]
    assert [m.surface for m in matcher.find("a wild party, he is wild good")] == []
    assert [e.term for e in load_lexicon(lexicon, "paper")] == ["flu"]
    lexicon.write_text("term,illness,type,form\nflu,flu,physical,rumour\n", encoding="utf-8")
    with pytest.raises(LexiconError, match=r"lex\.csv:2: form must be one of"):
        load_lexicon(lexicon)
    with pytest.raises(LexiconError, match="term set must be one of"):
        load_lexicon(lexicon, "all")


def test_audit_refilters_when_the_term_set_changes(tmp_path: Path) -> None:
    from corpus_audit.audit.pipeline import AuditOptions, _filter_depends

    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"text": "x"}\n', encoding="utf-8")

    def depends(terms: str) -> dict:
        return _filter_depends(SimpleNamespace(spec=CorpusSpec((str(corpus),)), options=AuditOptions("en", terms=terms)))

    assert depends("paper")["terms"] != depends("extended")["terms"]
    assert {k: v for k, v in depends("paper").items() if k != "terms"} == \
        {k: v for k, v in depends("extended").items() if k != "terms"}


@pytest.mark.parametrize("lang", ["en", "es"])
def test_precision_sample_is_complete_and_its_mentions_stay_found(lang: str, extended: dict[str, IllnessMatcher]) -> None:
    """The hand-checked sample (docs/mention_forms.md): every row labelled with its source and licence, the latest
    round (the reported one) at least 300 sentences, and every mention labelled correct since round 2 (the rounds drawn
    after round 1's rules) still found with its form."""
    rows = pd.read_csv(DATA / f"mention_precision_{lang}.csv", keep_default_na=False)
    assert set(rows["verdict"]) == {"yes", "no"} and rows["licence"].str.len().gt(0).all()
    assert all(term.lower() in sentence.lower() for term, sentence in zip(rows["term"], rows["sentence"]))
    assert set(rows["form"]) == set(FORMS) - {"diagnosis"}
    reported = rows[rows["round"] == rows["round"].max()]
    assert len(reported) >= 300
    since_round_2 = rows[(rows["round"] >= 2) & (rows["verdict"] == "yes")]
    lost = [(row.term, row.sentence) for row in since_round_2.itertuples()
            if (row.term, row.form) not in {(m.surface, m.form) for m in extended[lang].find(row.sentence)}]
    assert not lost


def test_rules_added_after_spanish_round_3_drop_only_its_errors(extended: dict[str, IllnessMatcher]) -> None:
    """Round 3's Spanish errors that a rule now drops ('de carácter continuo y sordo', 'glucosa con insulina' for a
    hyperkalaemia, methadone in a screen for 'drogas de abuso'); the other five are still found (docs/mention_forms.md)."""
    rows = pd.read_csv(DATA / "mention_precision_es.csv", keep_default_na=False)
    errors = rows[(rows["round"] == 3) & (rows["verdict"] == "no")]
    still_found = sorted(row.term for row in errors.itertuples()
                         if (row.term, row.form) in {(m.surface, m.form) for m in extended["es"].find(row.sentence)})
    assert len(errors) == 8
    assert still_found == ["LOCO", "ciegos", "enfermedad cronica", "metadona", "subnormal"]


def test_rules_added_after_english_round_3_drop_only_its_errors(extended: dict[str, IllnessMatcher]) -> None:
    """Round 3's English errors that the rules added after it drop (slang said of an idea, 'like a retard' as a
    manner, talk about the word, methadone in a toxicology screen); the other 14 (ten machine-translation errors of
    CodiEsp EN among them) are still found (docs/mention_forms.md)."""
    rows = pd.read_csv(DATA / "mention_precision_en.csv", keep_default_na=False)
    errors = rows[(rows["round"] == 3) & (rows["verdict"] == "no")]
    dropped = sorted(row.term for row in errors.itertuples()
                     if (row.term, row.form) not in {(m.surface, m.form) for m in extended["en"].find(row.sentence)})
    assert len(errors) == 20
    assert dropped == ["autistic", "lunatic", "methadone", "retard", "retard", "wacko"]


def test_rule_added_after_english_round_4_drops_only_the_alcoholic_solution(
        extended: dict[str, IllnessMatcher]) -> None:
    """Of round 4's 19 English errors, only 'an alcoholic solution' is dropped by the rule added after it; the 18
    others (machine translation, figurative 'blind', alcohol-caused diseases...) are still found."""
    rows = pd.read_csv(DATA / "mention_precision_en.csv", keep_default_na=False)
    errors = rows[(rows["round"] == 4) & (rows["verdict"] == "no")]
    dropped = [row.sentence for row in errors.itertuples()
               if (row.term, row.form) not in {(m.surface, m.form) for m in extended["en"].find(row.sentence)}]
    assert len(errors) == 19
    assert len(dropped) == 1 and "alcoholic solution" in dropped[0]
