"""The AQ-27 questionnaires: the bundled data, the filled prompts (spans, agreement, capitals, period) and the
messages for malformed files."""

from __future__ import annotations

import shutil

import pytest
import tiny_mlm

from corpus_audit.probe.questionnaires.aq27_items import in_vocabulary, load_questionnaire, prompts
from corpus_audit.probe.questionnaires.files import QuestionnaireError, bundled_folder
from corpus_audit.stigma.aq27 import DIMENSION_ITEMS


@pytest.mark.parametrize("lang", ["en", "es"])
def test_bundled_questionnaires_give_every_prompt(lang):
    questionnaire = load_questionnaire(lang)
    assert len(questionnaire.items) == 27
    kinds = [phrase.kind for phrase in questionnaire.noun_phrases]
    assert (kinds.count("name"), kinds.count("gendered"), kinds.count("neutral")) == (18, 2, 14)
    assert [phrase.sex for phrase in questionnaire.noun_phrases if phrase.kind == "name"].count("female") == 9
    types = [illness.type for illness in questionnaire.illnesses]
    assert (types.count("mental"), types.count("physical")) == (22, 22)
    table = prompts(questionnaire)
    assert len(table) == 27 * 34 * 44
    spans = [sentence[start:end] for sentence, start, end in table[["sentence", "illness_start", "illness_end"]]
             .itertuples(index=False)]
    phrases = {illness.name: illness.phrase for illness in questionnaire.illnesses}
    assert spans == [phrases[name] for name in table["illness"]]
    assert not table["sentence"].str.contains(r"\[noun phrase\]|<mask>|[{}|]").any()
    assert table["sentence"].str[0].str.isupper().all() and table["sentence"].str.endswith(".").all()
    assert table.groupby("dimension")["item"].unique().map(sorted).to_dict() == {
        dimension: list(items) for dimension, items in DIMENSION_ITEMS.items()}


def test_english_prompts_read_as_the_seed_paper_writes_them():
    table = prompts(load_questionnaire("en"))
    first = table[(table["item"] == 1) & (table["noun_phrase"] == "a woman") & (table["illness"] == "cold")]
    assert first["sentence"].tolist() == ["I would feel aggravated by a woman who has a cold."]
    third = table[(table["item"] == 3) & (table["noun_phrase"] == "a man") & (table["illness"] == "schizophrenia")]
    assert third["sentence"].tolist() == ["A man who has schizophrenia would terrify me."]


def test_spanish_adjectives_agree_with_the_noun_phrase():
    table = prompts(load_questionnaire("es"))
    item13 = table[(table["item"] == 13) & (table["illness"] == "depression")].set_index("noun_phrase")["sentence"]
    assert item13["una persona"] == "Creo que una persona con depresión es peligrosa."
    assert item13["un individuo"] == "Creo que un individuo con depresión es peligroso."
    assert item13["María"].endswith("es peligrosa.") and item13["Antonio"].endswith("es peligroso.")
    item15 = table[(table["item"] == 15) & (table["illness"] == "cold")].set_index("noun_phrase")["sentence"]
    assert "fuera internada en" in item15["una mujer"] and "fuera internado en" in item15["un hombre"]


def test_without_a_period_the_full_stop_is_dropped():
    table = prompts(load_questionnaire("en"), period=False)
    assert not table["sentence"].str.endswith(".").any()
    assert table["sentence"].iloc[0] == "I would feel aggravated by James, who has Alzheimer's"


@pytest.mark.parametrize("carriers", [False, True])
def test_a_name_takes_the_relative_clause_between_commas(carriers):
    """Seed paper, Table 3: after a name "[noun phrase] who has <mask>" becomes the non-defining "[noun phrase],
    who has <mask>" (closed by a comma where the sentence goes on); other noun phrases keep the defining clause."""
    questionnaire = load_questionnaire("en")
    table = prompts(questionnaire, carriers=carriers)
    names, others = table[table["np_kind"] == "name"], table[table["np_kind"] != "name"]
    with_clause = {item.number for item in (questionnaire.carriers if carriers else questionnaire.items)
                   if "[noun phrase] who has <mask>" in item.text}
    assert with_clause and names["sentence"].str.contains(", who has ").eq(names["item"].isin(with_clause)).all()
    assert not others["sentence"].str.contains(", who has ").any()
    assert others["sentence"].str.contains(" who has ").any()
    spans = [sentence[start:end] for sentence, start, end in table[["sentence", "illness_start", "illness_end"]]
             .itertuples(index=False)]
    assert spans == [sentence for sentence in table["illness"].map(
        {illness.name: illness.phrase for illness in questionnaire.illnesses})]
    if not carriers:
        row = table[(table["item"] == 3) & (table["noun_phrase"] == "Mary") & (table["illness"] == "schizophrenia")]
        assert row["sentence"].tolist() == ["Mary, who has schizophrenia, would terrify me."]
        row = table[(table["item"] == 1) & (table["noun_phrase"] == "Mary") & (table["illness"] == "schizophrenia")]
        assert row["sentence"].tolist() == ["I would feel aggravated by Mary, who has schizophrenia."]
        row = table[(table["item"] == 3) & (table["noun_phrase"] == "someone") & (table["illness"] == "schizophrenia")]
        assert row["sentence"].tolist() == ["Someone who has schizophrenia would terrify me."]


def test_a_spanish_name_takes_que_tiene_between_commas():
    questionnaire = load_questionnaire("es")
    items, carriers = prompts(questionnaire), prompts(questionnaire, carriers=True)
    item1 = items[(items["item"] == 1) & (items["illness"] == "depression")].set_index("noun_phrase")["sentence"]
    assert item1["María"] == "Me sentiría agraviado por María, que tiene depresión."
    assert item1["una persona"] == "Me sentiría agraviado por una persona que tiene depresión."
    carrier3 = carriers[(carriers["item"] == 3) & (carriers["illness"] == "depression")].set_index(
        "noun_phrase")["sentence"]
    assert carrier3["Antonio"] == "Antonio, que tiene depresión, vive aquí."
    assert not items.loc[items["np_kind"] != "name", "sentence"].str.contains(", que tiene").any()


def test_in_vocabulary_keeps_single_token_illnesses():
    questionnaire = load_questionnaire("en")
    kept = {illness.name for illness in in_vocabulary(questionnaire.illnesses, tiny_mlm.tokenizer("bert"), "en")}
    assert {"schizophrenia", "cold", "depression"} <= kept  # "a cold": the article does not count
    assert not {"bronchitis", "bipolar affective disorder", "panic disorder"} & kept


@pytest.fixture()
def copy_en(tmp_path):
    folder = tmp_path / "q"
    shutil.copytree(bundled_folder("en"), folder)
    return folder


def _edit(path, old, new):
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


@pytest.mark.parametrize("file, old, new, message", [
    ("aq27.csv", "1,Anger,no", "1,Fear,no", r"aq27.csv:2: item 1 belongs to Anger in the AQ-27, not 'Fear'"),
    ("aq27.csv", "7,Avoidance,yes", "7,Avoidance,no", r"aq27.csv:8: reverse_scored of a Avoidance item is yes"),
    ("aq27.csv", "who has <mask>.", "who has it.", r"aq27.csv:2: the text must hold <mask>"),
    ("aq27.csv", '26,Avoidance,yes,"If I were a landlord', '7,Avoidance,yes,"If I were a landlord',
     r"needs items 1 to 27 once each"),
    ("noun_phrases.csv", "James,name", "James,nickname", r"noun_phrases.csv:2: kind must be one of"),
    ("illnesses.csv", "schizophrenia,schizophrenia", "schizo,schizophrenia", r"'schizo' is not an illness of the"),
])
def test_malformed_files_are_named_with_their_line(copy_en, file, old, new, message):
    _edit(copy_en / file, old, new)
    with pytest.raises(QuestionnaireError, match=message):
        load_questionnaire("en", copy_en)


def test_agreement_needs_the_noun_phrases_gender(tmp_path):
    folder = tmp_path / "q"
    shutil.copytree(bundled_folder("es"), folder)
    _edit(folder / "noun_phrases.csv", "Antonio,name,male,m", "Antonio,name,male,")
    with pytest.raises(QuestionnaireError, match=r"noun_phrases.csv:2: items agree with the noun phrase"):
        load_questionnaire("es", folder)


def test_a_missing_file_or_group_is_refused(copy_en):
    (copy_en / "illnesses.csv").write_text("illness,phrase\nschizophrenia,schizophrenia\n", encoding="utf-8")
    with pytest.raises(QuestionnaireError, match="no physical illness: nothing to compare"):
        load_questionnaire("en", copy_en)
    (copy_en / "aq27.csv").unlink()
    with pytest.raises(QuestionnaireError, match="aq27.csv: missing"):
        load_questionnaire("en", copy_en)
