"""Seed lexicon, templates and their realisation into labelled sentences; CV folds and accuracy."""

from __future__ import annotations

import numpy as np
import pytest

from corpus_audit.scm.evaluate import accuracy_by_test, adjective_folds, correct_predictions
from corpus_audit.common.errors import LexiconError
from corpus_audit.scm.lexicon import SeedAdjective, load_seed_lexicon
from corpus_audit.scm.recipes import RECIPES, training_adjectives, training_sentences
from corpus_audit.scm.inflect import Forms
from corpus_audit.scm.templates import (Subject, Template, TemplateError, TemplateSet, load_template_set,
                                        read_subjects, read_templates, realise)


def test_bundled_seed_lexicon_has_the_235_adjectives():
    lexicon = load_seed_lexicon("en")
    assert len(lexicon) == 235
    counts = {(d, p): sum(1 for a in lexicon if (a.dimension, a.polarity) == (d, p))
              for d in ("warmth", "competence") for p in (1, -1)}
    assert counts == {("warmth", 1): 63, ("warmth", -1): 68, ("competence", 1): 53, ("competence", -1): 51}


def test_training_only_and_generalisation_lexicons_never_overlap_the_seed():
    seed = {a.word for a in load_seed_lexicon("en")}
    from corpus_audit.common.resources import data_file

    extended = {a.word for a in load_seed_lexicon(data_file("lexicons", "en", "scm_extended.csv"))}
    held_out = {a.word for a in load_seed_lexicon(data_file("lexicons", "en", "scm_generalisation.csv"))}
    assert not extended & seed and not held_out & seed and not held_out & extended


@pytest.mark.parametrize(
    "reader, error, content, message",
    [
        (load_seed_lexicon, LexiconError, "word,dimension,polarity\nkind,warmth,high\nodd,niceness,high\n",
         r"bad.csv, line 3: dimension 'niceness'"),
        (load_seed_lexicon, LexiconError, "word,dimension\nkind,warmth\n", "missing column"),
        (read_templates, TemplateError, "template,negate\nThey are {a}.,\nThey are {adjective}.,\n", r"bad.csv, line 3"),
        (read_templates, TemplateError, "template,negate\nThey are {a}.,b\n", "negate"),
        (read_templates, TemplateError, "template,negate,agree\n{subject} son {a}.,,px\n", r"bad.csv, line 2: agree"),
        (read_templates, TemplateError, "template,negate,agree\nSon {a}.,,p\n", r"line 2: a template without"),
        (read_subjects, TemplateError, "subject,gender,number\nellos,m,p\nellas,x,p\n", r"bad.csv, line 3: gender"),
    ],
)
def test_data_file_errors_name_file_and_line(tmp_path, reader, error, content, message):
    bad = tmp_path / "bad.csv"
    bad.write_text(content)
    with pytest.raises(error, match=message):
        reader(bad)


def test_realise_labels_single_negated_and_pair_sentences():
    kind = SeedAdjective("kind", "warmth", 1)
    lazy = SeedAdjective("lazy", "competence", -1)
    templates = TemplateSet(
        [Template("{subject} are {a}."), Template("{subject} are never {a}.", frozenset("a")),
         Template("{subject} are {a} but not {b}.", frozenset("b"))],
        [Subject("they")],
    )
    data = realise(templates, [kind, lazy], pairs_per_template=5, seed=1)
    by_sentence = dict(zip(data.sentences, map(tuple, data.targets)))
    assert by_sentence["They are kind."] == (1, 0)
    assert by_sentence["They are lazy."] == (0, -1)
    assert by_sentence["They are never kind."] == (-1, 0)  # negation flips the label
    assert by_sentence["They are never lazy."] == (0, 1)
    pair = [s for s in data.sentences if "but not" in s]
    assert len(pair) == 1  # only one (warmth, competence) pair exists
    expected = (1, 1) if pair[0] == "They are kind but not lazy." else (-1, -1)  # "lazy but not kind"
    assert by_sentence[pair[0]] == expected


def test_folds_partition_and_hold_out_adjectives():
    lexicon = load_seed_lexicon("en")
    folds = adjective_folds(lexicon, 5, seed=3)
    words = [a.word for fold in folds for a in fold]
    assert sorted(words) == sorted(a.word for a in lexicon)
    assert max(map(len, folds)) - min(map(len, folds)) <= 1
    recipe = RECIPES["default"]
    held_out = {a.word for a in folds[0]}
    train = training_sentences(recipe, "en", [a for a in lexicon if a.word not in held_out], exclude=frozenset(held_out))
    used = {word for words in train.words for word in words}
    assert not used & held_out
    assert len(training_adjectives(recipe, "en", lexicon)) > len(lexicon)  # the extended lexicon is added


def test_accuracy_rules_hand_computed():
    targets = np.array([(1, 0), (0, -1), (1, -1), (-1, 1)], dtype=float)
    scores = np.array([(0.2, -0.9), (0.5, -0.1), (0.3, 0.4), (-0.1, 0.2)])
    np.testing.assert_array_equal(correct_predictions(scores, targets), [True, True, False, True])

    class Data:
        pass

    data = Data()
    data.targets, data.test = targets, ["basic", "basic", "composition", "composition"]
    assert accuracy_by_test(scores, data) == {"basic": 100.0, "composition": 50.0}


def test_every_bundled_template_file_loads():
    for name in ("training", "reference", "evaluation", "generalisation"):
        assert load_template_set("en", name).templates
    evaluation = load_template_set("en", "evaluation")
    assert {t.test for t in evaluation.templates} == {"basic", "negation", "composition", "syntax"}


def test_spanish_templates_agree_with_the_subject_in_gender_and_number():
    amable = SeedAdjective("amable", "warmth", 1)
    vago = SeedAdjective("vago", "competence", -1)
    forms = {"amable": Forms("amable", "amable", "amables", "amables"), "vago": Forms("vago", "vaga", "vagos", "vagas"),
             "inútil": Forms("inútil", "inútil", "inútiles", "inútiles")}
    subjects = [Subject("esas mujeres", "f", "p"), Subject("ellos", "m", "p"), Subject("esta gente", "f", "s")]
    templates = TemplateSet([Template("{subject} son {a}.", agree="p"), Template("{subject} es {a}.", agree="s"),
                             Template("Los encuentro {a}.", agree="mp"), Template("{subject} son {a} y {b}.", agree="p")],
                            subjects, lang="es")
    data = realise(templates, [amable, vago], forms=forms, pairs_per_template=1)
    plural = {s for s in data.sentences if " son " in s and " y " not in s}
    assert plural <= {"Esas mujeres son amables.", "Ellos son amables.", "Esas mujeres son vagas.", "Ellos son vagos."}
    assert len(plural) == 2 and "Esta gente es vaga." in data.sentences and "Esta gente es amable." in data.sentences
    assert "Los encuentro vagos." in data.sentences
    # "y" becomes "e" before an /i/ sound, not before "hie"/"ia"
    data = realise(TemplateSet([Template("Son {a} y {b}.", agree="mp")], subjects, lang="es"),
                   [amable, SeedAdjective("inútil", "competence", -1)], forms=forms)
    assert data.sentences in (["Son amables e inútiles."], ["Son inútiles y amables."])


def test_bundled_spanish_templates_load_and_every_template_finds_a_subject():
    for name in ("training", "reference", "evaluation"):
        template_set = load_template_set("es", name)
        assert template_set.lang == "es" and all(t.agree for t in template_set.templates)
        assert all(s.gender and s.number for s in template_set.subjects)
    training = load_template_set("es", "training")
    syntax = {t.text for t in load_template_set("es", "evaluation").templates if t.test == "syntax"}
    assert not syntax & {t.text for t in training.templates}  # syntactic variants are never trained on
    assert {(s.gender, s.number) for s in training.subjects} == {("m", "p"), ("f", "p"), ("f", "s"), ("m", "s")}
