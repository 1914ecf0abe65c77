"""The functional test suite for health stigma (templates/<lang>/stigma_suite*.csv, scripts/build_stigma_suite.py).

Every language whose templates exist is checked: the committed suite is what the build writes, every function has
cases in train, dev and test, every mention is one the language's matcher finds, the labels follow the functions and
docs/labelling.md, and no case copies (word Jaccard above 0.6) a sentence of the project's labelled data.
"""

from __future__ import annotations

import csv
import re
import shutil
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pytest
from scipy import sparse

from corpus_audit.audit.label_studio import LABELLED_DIMENSION
from corpus_audit.corpus.matcher import FORMS, IllnessMatcher, fold
from corpus_audit.stigma.judgement import CATEGORIES
from corpus_audit.stigma.quadrants import GROUPS

ROOT = Path(__file__).resolve().parents[2]
LANGS = sorted(path.parent.name for path in (ROOT / "templates").glob("*/stigma_suite_templates.csv"))
#: The labelled sentences of each language that no case may copy, and how close a copy is.
REFERENCE_FILES = ("judgements.csv", "neutral.csv", "stigma_labelled.csv")
MAX_JACCARD = 0.6
#: The least share of each illness type among the cases of each kind (the spec asks for about half).
MIN_TYPE_SHARE = 0.3


@pytest.fixture(scope="module")
def script(load_script):
    return load_script("build_stigma_suite")


@pytest.fixture(scope="module")
def functions(script):
    return script.read_functions(ROOT / "templates" / "stigma_suite_functions.csv")


def committed(lang: str) -> list[dict[str, str]]:
    with open(ROOT / "templates" / lang / "stigma_suite.csv", newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_there_is_a_suite_to_check():
    assert "en" in LANGS


@pytest.mark.parametrize("lang", LANGS)
def test_the_committed_suite_is_a_fresh_deterministic_build(script, lang):
    first = script.build_suite(ROOT, lang)
    assert script.build_suite(ROOT, lang) == first
    assert (ROOT / "templates" / lang / "stigma_suite.csv").read_text(encoding="utf-8") == script.suite_csv(first)


@pytest.mark.parametrize("lang", LANGS)
def test_every_function_has_cases_in_every_split_and_no_template_is_in_two(script, functions, lang):
    cases = committed(lang)
    splits_of_template = defaultdict(set)
    splits_of_function = defaultdict(set)
    for case in cases:
        splits_of_template[case["template_id"]].add(case["split"])
        splits_of_function[case["function"]].add(case["split"])
    assert {tid: s for tid, s in splits_of_template.items() if len(s) > 1} == {}
    assert set(splits_of_function) == set(functions)
    assert all(s == {"train", "dev", "test"} for s in splits_of_function.values()), splits_of_function
    assert [case["uid"] for case in cases] == [f"suite-{lang}-{n:05d}" for n in range(1, len(cases) + 1)]


@pytest.mark.parametrize("lang", LANGS)
def test_the_suite_reaches_its_size_targets(script, functions, lang):
    cases = committed(lang)
    per_function = Counter(case["function"] for case in cases)
    assert len(cases) >= script.MIN_CASES[lang]
    assert min(per_function[name] for name in functions) >= script.MIN_CASES_PER_FUNCTION[lang], per_function
    assert script.shortfalls(cases, functions, lang) == []


@pytest.mark.parametrize("lang", LANGS)
def test_every_mention_is_found_by_the_matcher(lang):
    matcher = IllnessMatcher.for_language(lang)
    missed = []
    for case in committed(lang):
        if not case["matched_term"]:  # obfuscated spellings only, which the matcher is not meant to find
            assert case["function"] == "obfuscated", case["uid"]
            continue
        found = {(fold(match.surface), match.illness, match.type, match.form)
                 for match in matcher.find(case["sentence"])}
        if (fold(case["matched_term"]), case["illness"], case["illness_type"], case["form"]) not in found:
            missed.append((case["uid"], case["sentence"], case["matched_term"]))
    assert missed == []


@pytest.mark.parametrize("lang", LANGS)
def test_labels_are_valid_and_agree_with_the_function(functions, lang):
    for case in committed(lang):
        function = functions[case["function"]]
        dimensions = case["dimension"].split(";") if case["dimension"] else []
        assert case["kind"] == function.kind and case["stigmatising"] == function.stigmatising, case["uid"]
        assert case["category"] in CATEGORIES and set(dimensions) <= set(LABELLED_DIMENSION.values()), case["uid"]
        assert case["illness_type"] in GROUPS and case["form"] in FORMS, case["uid"]
        if case["stigmatising"] == "yes":
            assert dimensions and case["stigma_strength"] in {"1", "2", "3"}, case["uid"]
            assert case["category"] in {"judgement", "clinical"}, case["uid"]
        else:
            assert not dimensions and case["stigma_strength"] == "0", case["uid"]
        if "other" in dimensions:
            assert case["note"], case["uid"]


@pytest.mark.parametrize("lang", LANGS)
def test_no_sentence_is_there_twice(lang):
    normalised = Counter(" ".join(fold(case["sentence"]).split()) for case in committed(lang))
    assert [sentence for sentence, count in normalised.items() if count > 1] == []


@pytest.mark.parametrize("lang", LANGS)
def test_both_illness_types_and_every_mention_form_are_covered(lang):
    cases = committed(lang)
    assert {case["form"] for case in cases} == set(FORMS)
    for kind in ("stigmatising", "hard_negative"):
        types = Counter(case["illness_type"] for case in cases if case["kind"] == kind)
        assert min(types[group] for group in GROUPS) >= MIN_TYPE_SHARE * sum(types.values()), (kind, types)


def masked_words(sentence: str, matcher: IllnessMatcher) -> frozenset[str]:
    """The sentence's words, every illness mention (and the labelled data's {illness} slot) one same word, so that
    two sentences that differ only in the illness they name count as the same."""
    text = sentence.replace("{illness}", " ILLNESSMENTION ")
    for match in reversed(matcher.find(text)):
        text = text[:match.start] + " ILLNESSMENTION " + text[match.end:]
    return frozenset(re.findall(r"\w+", text.lower()))


def jaccard(left: list[frozenset[str]], right: list[frozenset[str]]) -> np.ndarray:
    """Word Jaccard of every pair (rows: ``left``), through sparse indicator matrices."""
    vocabulary = {word: index for index, word in enumerate(sorted(set().union(*left, *right)))}

    def indicators(sets: list[frozenset[str]]) -> sparse.csr_matrix:
        rows = [row for row, words in enumerate(sets) for _ in words]
        columns = [vocabulary[word] for words in sets for word in words]
        return sparse.csr_matrix((np.ones(len(rows)), (rows, columns)), shape=(len(sets), len(vocabulary)))

    shared = (indicators(left) @ indicators(right).T).toarray()
    sizes_left = np.array([len(words) for words in left])[:, None]
    sizes_right = np.array([len(words) for words in right])[None, :]
    return shared / (sizes_left + sizes_right - shared)


def test_jaccard_against_a_hand_computed_pair():
    left = [frozenset({"a", "b", "c"}), frozenset({"x"})]
    right = [frozenset({"b", "c", "d", "e"})]
    assert jaccard(left, right).tolist() == [[2 / 5], [0.0]]


@pytest.mark.parametrize("lang", LANGS)
def test_no_case_copies_a_labelled_sentence(lang):
    matcher = IllnessMatcher.for_language(lang)
    references = []
    for name in REFERENCE_FILES:
        with open(ROOT / "templates" / lang / name, newline="", encoding="utf-8") as handle:
            references += [row["sentence"] for row in csv.DictReader(handle)]
    sentences = [case["sentence"] for case in committed(lang)]
    similarity = jaccard([masked_words(s, matcher) for s in sentences], [masked_words(s, matcher) for s in references])
    copies = [(sentences[i], references[j], round(float(similarity[i, j]), 2))
              for i, j in zip(*np.nonzero(similarity > MAX_JACCARD))]
    assert copies == []


# ---- the build on small hand-made files ---------------------------------------------------------------------

FILLERS = """slot,text,matched_term,illness,illness_type,form,gender
group,people with schizophrenia,schizophrenia,schizophrenia,mental,diagnosis,f
group,diabetics,diabetics,diabetes,physical,diagnosis,m
group,autistic people,autistic,autism,mental,adjective,f
group,wheelchair users,wheelchair users,physical disability (generic),physical,person,m
slang_adj,crazy,crazy,mental illness (generic),mental,slang,
slur_person,a psycho,psycho,mental illness (generic),mental,slang,
obfuscated_group,r3tards,,intellectual disability,mental,slang,
"""
HEADER = "template_id,function,template,category,stigmatising,dimension,stigma_strength,note,slots_allowed\n"
GOOD = [f"xx-aq27_fear-0{n},aq27_fear,{text},judgement,yes,fear,2,," for n, text in enumerate(
    ("{group} scare me.", "I keep away from {group} at night.", "{group} give me the creeps.",
     "Honestly {group} frighten me."), start=1)]


def small_root(tmp_path: Path, extra: list[str], fillers: str = FILLERS) -> Path:
    (tmp_path / "templates" / "xx").mkdir(parents=True)
    shutil.copy(ROOT / "templates" / "stigma_suite_functions.csv", tmp_path / "templates")
    (tmp_path / "lexicons" / "xx").mkdir(parents=True)
    shutil.copy(ROOT / "lexicons" / "en" / "illnesses.csv", tmp_path / "lexicons" / "xx")
    shutil.copy(ROOT / "lexicons" / "en" / "context_rules.csv", tmp_path / "lexicons" / "xx")
    (tmp_path / "templates" / "xx" / "stigma_suite_fillers.csv").write_text(fillers, encoding="utf-8")
    (tmp_path / "templates" / "xx" / "stigma_suite_templates.csv").write_text(
        HEADER + "\n".join(GOOD + extra) + "\n", encoding="utf-8")
    return tmp_path


def test_a_small_suite_is_built_with_mixed_fillers_and_all_splits(script, tmp_path):
    cases = script.build_suite(small_root(tmp_path, []), "xx")
    assert len(cases) == 16 and {case["split"] for case in cases} == {"train", "dev", "test"}
    for template_id in {case["template_id"] for case in cases}:
        rows = [case for case in cases if case["template_id"] == template_id]
        assert Counter(case["illness_type"] for case in rows) == {"mental": 2, "physical": 2}
        assert len({case["sentence"] for case in rows}) == 4
    assert cases[0]["sentence"][0].isupper() and cases[0]["uid"] == "suite-xx-00001"


@pytest.mark.parametrize("row, problem", [
    ("xx-nonsense-01,nonsense,{group} scare me too.,judgement,yes,fear,2,,", "unknown function 'nonsense'"),
    ("xx-aq27_fear-05,aq27_fear,{patients} scare me too.,judgement,yes,fear,2,,", "at most one slot"),
    ("xx-aq27_fear-05,aq27_fear,{group} scare me too.,judgement,yes,fear,0,,", "stigma_strength of 1, 2 or 3"),
    ("xx-aq27_fear-05,aq27_fear,{group} scare me too.,judgement,no,,0,,", "but function aq27_fear is 'yes'"),
    ("xx-negated_stigma-01,negated_stigma,{group} are not scary.,judgement,no,fear,0,,", "leaves dimension empty"),
    ("xx-aq27_fear-05,aq27_fear,{group} scare me too.,analogy,yes,fear,2,,", "is a judgement"),
    ("xx-aq27_fear-05,aq27_fear,{group} scare me too.,judgement,yes,other,2,,", "needs a note"),
    ("xx-negated_stigma-01,negated_stigma,{slur_person} is not scary.,judgement,no,,0,,", "guideline H5"),
    ("xx-aq27_fear-05,aq27_fear,The {slang_adj} traffic scares me.,judgement,yes,fear,2,,", "does not find 'crazy'"),
    ("xx-aq27_fear-05,aq27_fear,{group} scare me.,judgement,yes,fear,2,,", "duplicate sentence"),
    ("xx-aq27_fear-05,aq27_fear,Traffic scares me.,judgement,yes,fear,2,,", "names no illness"),
    ("xx-aq27_fear-05,aq27_fear,{group} scare me too.,judgement,yes,fear,2,,treatment", "no filler of slot 'group'"),
    ("xx-aq27_fear-05,aq27_fear,They scare m{g:e/y}.,judgement,yes,fear,2,,", "without a slot"),
])
def test_the_build_refuses_a_bad_template_naming_file_and_line(script, tmp_path, row, problem):
    root = small_root(tmp_path, [row])
    with pytest.raises(script.SuiteError) as error:
        script.build_suite(root, "xx")
    assert problem in str(error.value)
    assert f"{root / 'templates' / 'xx' / 'stigma_suite_templates.csv'}:6" in str(error.value)


@pytest.mark.parametrize("line, problem", [
    ("group,people with schizophrenia,schizophrenia,schizophrenia,mental,generic,", "not ('schizophrenia'"),
    ("group,people with gout,gout,gout,physical,diagnosis,", "is not a term of"),
    ("group,psych0s,,mental illness (generic),mental,slang,", "matched_term is empty"),
    ("patients,the sick,sick,illness,mental,generic,", "slot 'patients' is not one of"),
    ("group,diabetics,diabetics,diabetes,physical,diagnosis,x", "gender must be empty, m or f"),
])
def test_the_build_refuses_a_bad_filler_naming_file_and_line(script, tmp_path, line, problem):
    root = small_root(tmp_path, [], FILLERS + line + "\n")
    with pytest.raises(script.SuiteError) as error:
        script.build_suite(root, "xx")
    assert problem in str(error.value)
    assert f"{root / 'templates' / 'xx' / 'stigma_suite_fillers.csv'}:9" in str(error.value)


def test_agreement_markers_follow_the_fillers_gender(script, tmp_path):
    root = small_root(tmp_path, ["xx-negated_stigma-0{n},negated_stigma,{{group}} are not peligros{{g:os/as}} {n}.,"
                                 "judgement,no,,0,," .format(n=n) for n in range(1, 5)])
    cases = [case for case in script.build_suite(root, "xx") if case["function"] == "negated_stigma"]
    gender = {"schizophrenia": "f", "diabetics": "m", "autistic": "f", "wheelchair users": "m"}
    assert len(cases) == 16
    for case in cases:
        assert ("peligrosos" if gender[case["matched_term"]] == "m" else "peligrosas") in case["sentence"]


def test_agreement_needs_a_gender_on_every_filler(script, tmp_path):
    fillers = FILLERS.replace("people with schizophrenia,schizophrenia,schizophrenia,mental,diagnosis,f",
                              "people with schizophrenia,schizophrenia,schizophrenia,mental,diagnosis,")
    root = small_root(tmp_path, ["xx-aq27_fear-05,aq27_fear,{group} son peligros{g:os/as}.,judgement,yes,fear,2,,"],
                      fillers)
    with pytest.raises(script.SuiteError, match=r"line\(s\) 2 of the fillers file have no gender"):
        script.build_suite(root, "xx")


def test_a_slot_that_opens_a_sentence_is_capitalised(script, tmp_path):
    root = small_root(tmp_path, ["xx-aq27_fear-05,aq27_fear,Honestly. {group} scare me.,judgement,yes,fear,2,,"])
    sentences = [case["sentence"] for case in script.build_suite(root, "xx") if case["template_id"].endswith("05")]
    assert sentences and all(re.fullmatch(r"Honestly\. [A-Z].* scare me\.", sentence) for sentence in sentences)


def test_a_pinned_template_keeps_its_split_and_leaves_every_other_case_as_it_was(script, tmp_path):
    before = script.build_suite(small_root(tmp_path / "before", []), "xx")
    header = HEADER.rstrip("\n") + ",split\n"
    pinned = ["xx-aq27_fear-05,aq27_fear,I cross the street when I see {group}.,judgement,yes,fear,2,,,train",
              "xx-aq27_fear-06,aq27_fear,{group} make my skin crawl.,judgement,yes,fear,2,,,dev"]
    root = small_root(tmp_path / "after", [])
    templates = root / "templates" / "xx" / "stigma_suite_templates.csv"
    rows = templates.read_text(encoding="utf-8").splitlines()[1:]
    templates.write_text(header + "\n".join([row + "," for row in rows] + pinned) + "\n", encoding="utf-8")
    after = script.build_suite(root, "xx")
    assert after[:len(before)] == before
    added = after[len(before):]
    assert [case["template_id"] for case in added] == ["xx-aq27_fear-05"] * 4 + ["xx-aq27_fear-06"] * 4
    assert [case["split"] for case in added] == ["train"] * 4 + ["dev"] * 4
    assert added[0]["uid"] == f"suite-xx-{len(before) + 1:05d}"


def test_a_template_pinned_to_an_unknown_split_is_refused(script, tmp_path):
    root = small_root(tmp_path, [])
    templates = root / "templates" / "xx" / "stigma_suite_templates.csv"
    rows = templates.read_text(encoding="utf-8").splitlines()
    templates.write_text("\n".join([rows[0] + ",split"] + [row + "," for row in rows[1:]]
                                   + ["xx-aq27_fear-05,aq27_fear,{group} unsettle me.,judgement,yes,fear,2,,,holdout"])
                         + "\n", encoding="utf-8")
    with pytest.raises(script.SuiteError, match=r"templates\.csv:6 .*split must be empty or one of test, train, dev"):
        script.build_suite(root, "xx")


@pytest.mark.parametrize("count", range(4, 31))
def test_templates_are_split_about_half_test_a_third_train_and_dev_at_least_one(script, count):
    ids = [f"t{n}" for n in range(count)]
    splits = Counter(script.split_templates("aq27_fear", ids).values())
    assert sum(splits.values()) == count and min(splits[s] for s in ("train", "dev", "test")) >= 1
    assert abs(splits["test"] - count / 2) <= 1 and abs(splits["train"] - 0.35 * count) <= 1.5
    assert script.split_templates("aq27_fear", list(reversed(ids))) == script.split_templates("aq27_fear", ids)


def test_the_command_writes_the_suite_and_writes_nothing_on_a_problem(script, tmp_path, capsys):
    root = small_root(tmp_path, [])
    assert script.main(["--lang", "xx", "--root", str(root)]) == 0
    written = (root / "templates" / "xx" / "stigma_suite.csv").read_text(encoding="utf-8")
    assert written == script.suite_csv(script.build_suite(root, "xx"))
    assert "fewer than" in capsys.readouterr().err  # a 16-case suite is short of every target, and says so
    templates = root / "templates" / "xx" / "stigma_suite_templates.csv"
    templates.write_text(templates.read_text(encoding="utf-8").replace(",fear,2,,", ",fear,0,,"), encoding="utf-8")
    assert script.main(["--lang", "xx", "--root", str(root)]) == 1
    assert (root / "templates" / "xx" / "stigma_suite.csv").read_text(encoding="utf-8") == written
    assert "stigma_strength of 1, 2 or 3" in capsys.readouterr().err


#: The least Cohen's kappa between the suite's labels and a second reader's, on one case per template.
MIN_KAPPA = {"stigmatising": 0.9, "category": 0.9}


@pytest.mark.parametrize("lang", LANGS)
def test_a_second_reader_labelled_one_case_per_template_the_same_way(lang):
    """data/labelled/suite_check_<lang>.csv: one case of every template labelled by docs/labelling.md by a reader
    who saw neither the functions nor the suite's labels; agreement with the suite's labels (Cohen's kappa)."""
    from corpus_audit.stigma.stats.reliability import agreement

    path = ROOT / "data" / "labelled" / f"suite_check_{lang}.csv"
    with path.open(encoding="utf-8", newline="") as handle:
        checked = {row["uid"]: row for row in csv.DictReader(handle)}
    with (ROOT / "templates" / lang / "stigma_suite.csv").open(encoding="utf-8", newline="") as handle:
        suite = {row["uid"]: row for row in csv.DictReader(handle)}
    assert set(checked) <= set(suite), path
    templates = {suite[uid]["template_id"] for uid in checked}
    assert len(templates) == len(checked) == len({row["template_id"] for row in suite.values()})
    for field, least in MIN_KAPPA.items():
        result = agreement([suite[uid][field] for uid in checked], [row[field] for row in checked.values()])
        assert result["kappa"] is not None and result["kappa"] >= least, (lang, field, result)
