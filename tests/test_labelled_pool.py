"""The labelled stigma data (templates/LANG/stigma_labelled.csv) keeps the promises issue 28 makes for it: real
sentences split by document (held-out real only), written ones by group, a double-labelled subset drawn across
corpora, no near-duplicates, a licence per row, valid labels; and the sampling and label-checking scripts do what
they say."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
TEMPLATES = ROOT / "templates"


def labelled_file(lang: str) -> pd.DataFrame:
    return pd.read_csv(TEMPLATES / lang / "stigma_labelled.csv", dtype=str, keep_default_na=False)


@pytest.fixture(scope="module")
def sampler(load_script):
    return load_script("sample_labelling_pool")


@pytest.fixture(scope="module")
def checker(load_script):
    return load_script("check_labels")


@pytest.fixture(scope="module", params=["en", "es"])
def labelled(request) -> pd.DataFrame:
    return labelled_file(request.param).assign(lang=request.param)


@pytest.fixture(scope="module")
def pool(labelled) -> pd.DataFrame:
    """The real sentences: the labelling pool as drawn."""
    return labelled[labelled["source"] == "real"]


def main_pool(pool: pd.DataFrame, sampler) -> pd.DataFrame:
    """The sentences of the main draw (chunks 01..), without the supplements (``--short``, ``--more``)."""
    return pool[chunk_numbers(pool) <= len(sampler.chunk_sizes(sampler.TOTALS[pool["lang"].iloc[0]]))]


def chunk_numbers(pool: pd.DataFrame) -> pd.Series:
    return pool["chunk"].str.rsplit("_", n=1).str[-1].astype(int)


#: The chunks of the sample of judgements about people (``--judged``), drawn after the mined rounds.
JUDGED_CHUNKS = {"en": ("pool_en_23", "pool_en_24")}
POOLS = ROOT / "data" / "labelled"


def deconfound_pool(lang: str) -> pd.DataFrame:
    """The deconfounding sample (``--deconfound``) as drawn, before and after it is labelled."""
    return drawn_pool(lang, "deconf")


def drawn_pool(lang: str, name: str) -> pd.DataFrame:
    """The pool ``pool_LANG_NAME.csv`` as drawn (empty where the language has none)."""
    path = POOLS / f"pool_{lang}_{name}.csv"
    return pd.read_csv(path, dtype=str, keep_default_na=False) if path.is_file() else pd.DataFrame(
        columns=["uid", "chunk", "sentence"])


def supplements(pool: pd.DataFrame, sampler) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The short-fragment supplement (the chunk after the main draw's), the second real sample (the chunks after
    it, as many as its quotas fill), the samples mined with the score (the chunks after those) and the sample of
    judgements (``JUDGED_CHUNKS``)."""
    lang = pool["lang"].iloc[0]
    main_chunk = len(sampler.chunk_sizes(sampler.TOTALS[lang]))
    short_chunk = main_chunk + (lang in sampler.SHORT_QUOTAS)
    more_chunk = short_chunk + math.ceil(quota_total(sampler.MORE_QUOTAS, lang) / sampler.MORE_CHUNK_ROWS)
    numbers, judged = chunk_numbers(pool), pool["chunk"].isin(JUDGED_CHUNKS.get(lang, ()))
    deconfounding = pool["chunk"].isin(set(deconfound_pool(lang)["chunk"]) | set(drawn_pool(lang, "rest")["chunk"]))
    return (pool[(numbers > main_chunk) & (numbers <= short_chunk)],
            pool[(numbers > short_chunk) & (numbers <= more_chunk)],
            pool[(numbers > more_chunk) & ~judged & ~deconfounding], pool[judged])


def quota_total(quotas: dict, lang: str) -> int:
    """The sentences ``quotas`` draw for ``lang`` (a quota per corpus, or for the mined samples a pair of them)."""
    return sum(sum(quota) if isinstance(quota, tuple) else quota for quota in quotas.get(lang, {}).values())


def assert_out_of_heldout_and_demo(supplement: pd.DataFrame, lang: str, sampler) -> None:
    # drawn from the documents the split by document put in train and dev (the split by cluster may since have
    # moved a few with a held-out near-duplicate)
    assert (supplement["doc_id"].map(sampler.split_of) != "heldout").all()
    for path in (ROOT / "demo").glob(f"*_{lang}.jsonl.gz"):
        demo = pd.read_json(path, lines=True, dtype={"id": str})
        assert not supplement["doc_id"].isin(demo["id"]).any()


def test_pool_size_and_columns(pool, sampler):
    lang = pool["lang"].iloc[0]
    assert set(sampler.POOL_COLUMNS) <= set(pool.columns)
    assert len(main_pool(pool, sampler)) == sampler.TOTALS[lang]
    assert pool["uid"].is_unique
    assert (pool["licence"] == pool["corpus"].map(sampler.LICENCES)).all()


def test_every_document_is_in_one_split(pool, sampler):
    assert (pool.groupby(["corpus", "doc_id"])["split"].nunique() == 1).all()
    documents = main_pool(pool, sampler).drop_duplicates(["corpus", "doc_id"])["split"].value_counts(normalize=True)
    assert documents["train"] == pytest.approx(0.6, abs=0.05)
    assert documents["dev"] == pytest.approx(0.2, abs=0.05)
    assert documents["heldout"] == pytest.approx(0.2, abs=0.05)


def test_split_depends_on_the_document_id_only(sampler):
    # CodiEsp EN and ES share ids: a case and its translation must never be on both sides of a split.
    assert sampler.split_of("S0004-06142005000700014-1") == sampler.split_of("S0004-06142005000700014-1")
    assert {sampler.split_of(f"doc-{i}") for i in range(50)} == {"train", "dev", "heldout"}


def test_codiesp_cases_share_their_split_across_languages():
    en, es = labelled_file("en"), labelled_file("es")
    both = en[en["corpus"] == "codiesp_clinical_cases_en"].merge(
        es[es["corpus"] == "codiesp_clinical_cases_es"], on="doc_id", suffixes=("_en", "_es"))
    assert len(both) > 0
    assert (both["split_en"] == both["split_es"]).all()


def checked_supplement(pool: pd.DataFrame, sampler, which: int, quotas: dict, words: tuple[int, int]
                       ) -> pd.DataFrame:
    """Supplement ``which`` (0: short, 1: the second sample, 2: the mined ones, 3: the judgements), checked
    against its ``quotas`` and word range, out of
    the held-out set and the demo; empty where the language has no quota."""
    supplement = supplements(pool, sampler)[which]
    lang = pool["lang"].iloc[0]
    if lang not in quotas:
        assert supplement.empty
        return supplement
    rounds = mining_rounds(supplement) if which == 2 else [supplement]
    assert all(0 < len(part) <= quota_total(quotas, lang) for part in rounds)
    assert set(supplement["corpus"]) <= set(quotas[lang])
    assert supplement["sentence"].str.split().str.len().between(*words).all()
    assert_out_of_heldout_and_demo(supplement, lang, sampler)
    return supplement


def test_the_short_supplement_keeps_its_promises(pool, sampler):
    supplement = checked_supplement(pool, sampler, 0, sampler.SHORT_QUOTAS, sampler.SHORT_WORDS)
    assert (supplement["double_labelled"] == "yes").all() and (supplement["label_1"] != "").all()


def test_the_sample_of_judgements_keeps_its_promises(pool, sampler):
    supplement = checked_supplement(pool, sampler, 3, sampler.JUDGED_QUOTAS, sampler.SCORED_WORDS)
    assert len(supplement) == quota_total(sampler.JUDGED_QUOTAS, pool["lang"].iloc[0])
    if supplement.empty:  # a language without the sample
        return
    assert supplement["chunk"].value_counts().max() <= sampler.JUDGED_CHUNK_ROWS
    assert (supplement["double_labelled"] == "yes").all()
    assert (supplement["label_1"] != "").all() and (supplement["label_2"] != "").all()


def mining_rounds(mined: pd.DataFrame) -> list[pd.DataFrame]:
    """The mined sample split into its rounds: each round's first chunk is its double-labelled one."""
    starts = (mined["double_labelled"] == "yes") & (mined["chunk"] != mined["chunk"].shift())
    return [part for _, part in mined.groupby(starts.cumsum())]


@pytest.mark.parametrize(("which", "quotas", "words"), [(1, "MORE_QUOTAS", "MIN_MAX"), (2, "SCORED_QUOTAS",
                                                                                          "SCORED_WORDS")])
def test_the_second_and_the_mined_real_samples_keep_their_promises(pool, sampler, which, quotas, words):
    words = (sampler.MIN_WORDS, sampler.MAX_WORDS) if words == "MIN_MAX" else getattr(sampler, words)
    supplement = checked_supplement(pool, sampler, which, getattr(sampler, quotas), words)
    for part in (mining_rounds(supplement) if which == 2 else [supplement]):
        doubled = part[part["double_labelled"] == "yes"]
        assert doubled["chunk"].nunique() <= 1 and (doubled["label_1"] != "").all() \
            and (doubled["label_2"] != "").all()
        assert doubled.empty == part.empty


def test_double_labelled_subset(pool, sampler):
    pool = main_pool(pool, sampler)
    doubled = pool[pool["double_labelled"] == "yes"]
    assert len(doubled) >= 450
    assert set(doubled["chunk"]) == {f"pool_{pool['lang'].iloc[0]}_{n:02d}" for n in (1, 2)}
    assert (pool.loc[pool["double_labelled"] == "no", "chunk"].isin(set(doubled["chunk"]))).sum() == 0
    assert doubled["corpus"].isin(sampler.SOCIAL).mean() >= 0.5
    assert doubled["corpus"].nunique() == pool["corpus"].nunique()


def test_no_near_duplicates(pool, sampler):
    seen = sampler.NearDuplicates()
    assert all(seen.add(sentence) for sentence in pool["sentence"])


def test_notice_names_every_corpus(pool):
    notice = (TEMPLATES / "README.md").read_text(encoding="utf-8")
    for corpus in pool["corpus"].unique():
        assert f"`{corpus}`" in notice


def test_mentions_cover_the_extended_forms(sampler):
    en, es = sampler.load_patterns("en"), sampler.load_patterns("es")
    assert sampler.mentions("The mentally ill deserve better housing.", en)[1] == "generic"
    assert sampler.mentions("Only retards believe that.", en)[:2] == ("retards", "slang")
    assert sampler.mentions("My cousin is an alcoholic.", en)[1] == "person"
    assert sampler.mentions("Those bastards lied again.", en) is None
    assert sampler.mentions("It was a cold morning in May.", en) is None
    assert sampler.mentions("I caught a cold last week.", en)[:2] == ("a cold", "diagnosis")
    # Accents are optional in social text: "psicopata" matches like "psicópata".
    assert sampler.mentions("ese psicopata anda suelto", es)[:2] == ("psicopata", "slang")
    assert sampler.mentions("Lo internaron en un manicomio.", es)[1] == "treatment"
    assert sampler.mentions("La reunión fue larga.", es) is None


def test_near_duplicates_drop_reposts(sampler):
    seen = sampler.NearDuplicates()
    assert seen.add("@user you are a total lunatic and everyone knows it")
    assert not seen.add("@other YOU are a total lunatic, and everyone knows it!")
    assert seen.add("My aunt has dementia and lives with us now.")


def test_check_labels_reports_each_problem(checker, tmp_path):
    pool = labelled_file("en")
    uids = pool.loc[pool["chunk"] == "pool_en_03", "uid"].tolist()
    labels = pd.DataFrame({"uid": uids, "category": "information", "stigmatising": "no", "dimension": "",
                           "stigma_strength": "0", "note": ""})
    good = tmp_path / "labels_pool_en_03_a.csv"
    labels.to_csv(good, index=False)
    assert checker.problems(good) == []
    labels.loc[0, ["stigmatising", "stigma_strength", "dimension"]] = ["yes", "2", ""]
    labels.loc[1, "category"] = "judgment"
    labels.loc[2, "dimension"] = "blame"
    bad = tmp_path / "labels_pool_en_03_b.csv"
    labels.iloc[:-1].to_csv(bad, index=False)
    found = "\n".join(checker.problems(bad))
    assert "1 uids of pool_en_03 have no row" in found
    assert f"line 2 ({uids[0]}): stigmatising=yes needs dimension" in found
    assert f"line 3 ({uids[1]}): category 'judgment'" in found
    assert f"line 4 ({uids[2]}): stigmatising=no must leave dimension empty" in found
    assert checker.problems(tmp_path / "labels_en_03.csv")[0].endswith("name must be labels_pool_<lang>_<NN>_<labeller>.csv")


def test_labels_are_valid(labelled, checker):
    assert set(labelled["category"]) <= checker.CATEGORIES
    assert set(labelled["stigmatising"]) == {"yes", "no"}
    stigmatising = labelled["stigmatising"] == "yes"
    dimensions = labelled["dimension"].str.split(";").explode()
    assert set(dimensions[dimensions != ""]) <= checker.DIMENSIONS  # "help" normalised to withholding_help
    assert (labelled.loc[stigmatising, "dimension"] != "").all()
    assert (labelled.loc[~stigmatising, "dimension"] == "").all()
    assert labelled.loc[stigmatising, "stigma_strength"].isin(["1", "2", "3"]).all()
    assert (labelled.loc[~stigmatising, "stigma_strength"] == "0").all()
    assert labelled["uid"].is_unique and (labelled["sentence"].str.strip() != "").all()


def test_held_out_is_real_and_written_sentences_split_by_group(labelled):
    assert set(labelled.loc[labelled["split"] == "heldout", "source"]) == {"real"}
    written = labelled[labelled["source"] == "written"]
    assert set(written["split"]) == {"train", "dev"}
    assert (written.groupby("group")["split"].nunique() == 1).all()
    assert written["licence"].str.startswith("Apache-2.0").all()
    # both classes in every split the head is fitted or measured on
    assert (labelled.groupby(["source", "split"])["stigmatising"].nunique() == 2).all()


def test_double_labelled_rows_keep_both_independent_labels(pool):
    doubled = pool[pool["double_labelled"] == "yes"]
    for column in ("label_1", "label_2"):
        parts = doubled[column].str.split("|", expand=True)
        assert parts.shape[1] == 4 and parts[1].isin(["yes", "no"]).all()
    assert (pool.loc[pool["double_labelled"] == "no", ["label_1", "label_2"]] == "").all().all()
    assert doubled["labellers"].str.endswith(";adjudicator").all()


def test_kappa_table_matches_the_labellers_disagreement(checker):
    values = checker.kappa_table(TEMPLATES / "en" / "stigma_labelled.csv")
    assert values["rows"] >= 400
    assert 0.0 < values["stigmatising"] < 1.0  # the English labellers disagreed on some rows


def test_a_later_round_is_appended_after_the_real_rows(load_script, tmp_path):
    builder = load_script("build_stigma_labelled")
    table = labelled_file("en").astype(str).head(3).assign(source=["real", "real", "written"])
    pool = pd.DataFrame({"uid": ["en-90001", "en-90002"], "lang": "en", "corpus": "reddit_mh_27subs_en",
                         "doc_id": ["d1", "d2"], "licence": "Apache-2.0", "sentence": ["One.", "Two."],
                         "matched_term": "adhd", "form": "diagnosis", "illness_type": "mental", "split": "train",
                         "double_labelled": "no", "chunk": "pool_en_99"})
    pd.DataFrame({"uid": pool["uid"], "category": ["judgement", "question"], "stigmatising": ["yes", "no"],
                  "dimension": ["blame", ""], "stigma_strength": ["2", "0"], "note": ""}) \
        .to_csv(tmp_path / "labels_pool_en_99_lx.csv", index=False)
    sheet = tmp_path / "written_en_new.csv"
    pd.DataFrame({"uid": ["w-en-x1"], "group": ["w-en-gx1"], "sentence": ["Three."], "mention": ["adhd"],
                  "form": ["diagnosis"], "illness_type": ["mental"], "category": ["judgement"],
                  "stigmatising": ["no"], "dimension": [""], "stigma_strength": ["0"], "note": [""]}) \
        .to_csv(sheet, index=False)
    appended = builder.append(table, builder.real_rows(pool, tmp_path, "en"))
    appended = builder.append(appended, builder.written_sheets([sheet]))
    assert appended["uid"].tolist() == [*table["uid"][:2], "en-90001", "en-90002", table["uid"].iloc[2], "w-en-x1"]
    assert appended.loc[2, "stigmatising"] == "yes" and appended.loc[3, "labellers"] == "lx"
    assert appended.loc[5, "source"] == "written" and appended.loc[5, "split"] in ("train", "dev")
    with pytest.raises(SystemExit, match="already labelled"):
        builder.append(appended, builder.real_rows(pool, tmp_path, "en"))


@pytest.fixture(scope="module")
def builder(load_script):
    return load_script("build_stigma_labelled")


def test_near_duplicate_clusters_never_straddle_splits(labelled, builder, sampler):
    named = builder.clusters(labelled)
    assert (labelled.loc[named.index, "split"].groupby(named).nunique() == 1).all()
    assert (named.groupby(named).size() > 1).any()  # there are clusters of several rows to check
    codiesp = labelled[labelled["corpus"].isin(sampler.CLINICAL)]
    assert len(codiesp) and (codiesp["split"] == codiesp["doc_id"].map(sampler.split_of)).all()
    assert not set(codiesp.index) & set(named.index)


def test_the_split_by_cluster_is_the_files_and_does_not_depend_on_row_order(labelled, builder):
    table = labelled.drop(columns="lang")
    again = builder.cluster_split(table)
    shuffled = builder.cluster_split(table.sample(frac=1.0, random_state=7))
    assert again["split"].tolist() == table["split"].tolist()  # the shipped file is the build's output
    assert shuffled.set_index("uid")["split"].sort_index().equals(again.set_index("uid")["split"].sort_index())


@pytest.mark.parametrize(("lang", "family"), [("en", "malignant narcissist and mentally"),
                                              ("en", "malignant narcissist, mentally deranged sociopath"),
                                              ("es", "autismo no es una enfermedad, sino")])
def test_the_near_duplicate_families_of_issue_41_sit_in_one_split(lang, family):
    table = labelled_file(lang)
    members = table[(table["source"] == "real") & table["sentence"].str.contains(family, regex=False)]
    assert members["doc_id"].nunique() >= 3 and members["split"].nunique() == 1


# Sentences written for these tests.
def test_near_duplicate_index_links_copies_and_templates_not_common_phrases(sampler):
    sentences = ["The turnip council and its grumpy mayor voted again for the parking scheme.",
                 "The turnip council and its grumpy old mayor voted once more for the scheme.",
                 "Say what you like, the spineless turnip council betrayed the valley again.",
                 "Say what you like, the gutless turnip council betrayed the valley yet again.",
                 "and I don't know what to do, honestly, my anxiety keeps waking me at night",
                 "and I don't know what to do about the neighbours and their barking dog",
                 "I'm going crazy.",
                 "I feel like I'm going crazy."]
    index = sampler.NearDuplicateIndex(sampler.frequent_words(["I don't know what to do and the a"] * 3))
    links = []
    for number, sentence in enumerate(sentences):
        links.append(index.matches(sentence))
        assert index.add(sentence) == number
    assert links[1] == {0}  # Jaccard >= 0.5, both long enough
    assert links[3] == {2}  # five words in order within six: "the spineless / gutless turnip council betrayed"
    assert links[5] == set()  # a common phrase: its words are all frequent
    assert links[7] == set()  # short sentences are not compared by Jaccard


def test_cluster_split_joins_documents_keeps_written_groups_and_codiesp_cases(builder, sampler):
    rows = pd.DataFrame({
        "uid": ["a", "b", "c", "d", "w"], "source": ["real", "real", "real", "real", "written"],
        "corpus": ["civil_comments_toxic_spans_en"] * 2 + ["reddit_mh_27subs_en", "codiesp_clinical_cases_en", ""],
        "doc_id": ["cc-9", "cc-1", "rmhd-5", "S0001-1", ""], "group": ["", "", "", "", "w-en-g1"],
        "sentence": ["The turnip council and its grumpy mayor voted again for the parking scheme.",
                     "The turnip council and its grumpy old mayor voted once more for the scheme.",
                     "The turnip council and its grumpy mayor voted again for the parking scheme, sadly.",
                     "The patient was admitted for observation.", "Written."],
        "split": ["x", "x", "x", "x", "dev"]})
    split = builder.cluster_split(rows).set_index("uid")["split"]
    # a, b and c are near-duplicates: one cluster, named by its smallest document id
    assert split["a"] == split["b"] == split["c"] == sampler.split_of("cc-1")
    assert split["d"] == sampler.split_of("S0001-1") and split["w"] == "dev"


def test_corrections_are_in_the_labelled_files_and_bad_ones_are_refused(builder, tmp_path):
    corrections = builder.read_corrections()
    assert len(corrections) >= 12
    for lang, rows in corrections.groupby("lang"):
        table = labelled_file(lang).set_index("uid")
        fields = [*builder.LABEL_FIELDS, "note"]
        assert (table.loc[rows["uid"], fields].to_numpy() == rows[fields].to_numpy()).all()
    bad = tmp_path / "corrections.csv"
    corrections.assign(stigma_strength=["2"] + ["0"] * (len(corrections) - 1)).to_csv(bad, index=False)
    with pytest.raises(SystemExit, match=r"corrections.csv: line 2 \(w-en-0178\): stigmatising=no needs stigma_strength 0"):
        builder.read_corrections(bad)
    with pytest.raises(SystemExit, match="uids not in the labelled file: en-99999"):
        builder.correct(labelled_file("en"), "en", corrections.assign(uid="en-99999").head(1))


def assert_new_and_out_of_demo(drawn: pd.DataFrame, pooled: pd.DataFrame, lang: str, sampler) -> None:
    """No ``drawn`` sentence comes from a demo document, nor is a near-duplicate of a ``pooled`` one or of another."""
    for path in (ROOT / "demo").glob(f"*_{lang}.jsonl.gz"):
        assert not drawn["doc_id"].isin(pd.read_json(path, lines=True, dtype={"id": str})["id"]).any()
    seen, index = sampler.NearDuplicates(), sampler.NearDuplicateIndex(sampler.frequent_words(pooled["sentence"]))
    for sentence in pooled["sentence"]:
        seen.add(sentence)
        index.add(sentence)
    for sentence in drawn["sentence"]:
        assert not index.matches(sentence) and seen.add(sentence), sentence
        index.add(sentence)


@pytest.mark.parametrize("lang", ["en", "es"])
def test_the_deconfounding_pool_keeps_its_promises(lang, sampler):
    drawn, labelled = deconfound_pool(lang), labelled_file(lang)
    # the labelled rows drawn before it (its own rows are appended to the file once labelled, with its sentences)
    appended = labelled[labelled["chunk"].isin(set(drawn["chunk"]))]
    assert appended.empty or appended.set_index("uid")["sentence"].equals(drawn.set_index("uid")["sentence"])
    # the rows drawn before it: neither its own nor a later pool's
    labelled = labelled[~labelled["chunk"].isin(set(drawn["chunk"]) | set(drawn_pool(lang, "rest")["chunk"]))]
    real = labelled[labelled["source"] == "real"]
    assert set(sampler.POOL_COLUMNS) | {"kind", "cue", "stigma"} <= set(drawn.columns) and len(drawn) > 0
    assert (drawn["licence"] == drawn["corpus"].map(sampler.LICENCES)).all()
    for kind, quota in sampler.DECONF_QUOTAS[lang].items():
        assert quota is None or (drawn["kind"] == kind).sum() <= quota
    social = drawn["corpus"].isin(sampler.SOCIAL)
    assert (drawn.loc[social, "kind"] == "likely_not_stigmatising").all()
    assert (drawn.loc[~social, "kind"] == "likely_stigmatising").all()
    # a social sentence has a cue of a use that does not stigmatise or a score below 0.5, and no insult at a person
    scored_only = drawn["cue"].str.startswith("none")
    assert (drawn.loc[social & scored_only, "stigma"].astype(float) < 0.5).all()
    assert not drawn.loc[~social, "cue"].str.startswith("none").any()
    cues = sampler.load_cues(lang)
    texts = [sampler.marked(sentence, terms) for sentence, terms in zip(drawn["sentence"], drawn["matched_term"])]
    assert not any(sampler.cues_found(text, cues, ("person_target",)) for text, is_social in zip(texts, social)
                   if is_social)
    # from every document out of the demo (held-out ones too), new: no labelled sentence nor a near-duplicate of
    # one, nor of each other
    assert_new_and_out_of_demo(drawn, real, lang, sampler)
    # numbered after the labelled rows and chunks, every chunk labelled twice, each a sheet of at most 175 rows
    assert not set(drawn["uid"]) & set(labelled["uid"])
    assert chunk_numbers(drawn).min() == chunk_numbers(real).max() + 1
    assert (drawn["double_labelled"] == "yes").all()
    assert drawn["chunk"].value_counts().max() <= sampler.DECONF_CHUNK_ROWS


def test_the_rest_of_the_social_text_keeps_its_promises(sampler):
    drawn, labelled = drawn_pool("en", "rest"), labelled_file("en")
    appended = labelled[labelled["chunk"].isin(set(drawn["chunk"]))]
    assert appended.set_index("uid")["sentence"].equals(drawn.set_index("uid")["sentence"])
    real = labelled[labelled["source"] == "real"]
    before = real[chunk_numbers(real) < chunk_numbers(drawn).min()]
    # social text only, from every document out of the demo (held-out ones too), none pooled before
    assert drawn["corpus"].isin(sampler.SOCIAL).all() and set(drawn["doc_id"].map(sampler.split_of)) == \
        {"train", "dev", "heldout"}
    assert_new_and_out_of_demo(drawn, before, "en", sampler)
    assert all(sampler.SCORED_WORDS[0] <= len(s.split()) <= sampler.SCORED_WORDS[1] for s in drawn["sentence"])
    # numbered after the deconfounding sample, every chunk a sheet of at most REST_CHUNK_ROWS labelled twice
    assert chunk_numbers(drawn).min() == chunk_numbers(deconfound_pool("en")).max() + 1
    assert (drawn["double_labelled"] == "yes").all() and (appended["label_2"] != "").all()
    assert drawn["chunk"].value_counts().max() <= sampler.REST_CHUNK_ROWS


def test_a_second_reader_read_every_social_sentence_labelled_once():
    """data/labelled/second_reading_en.csv: every real sentence of Civil Comments and MLMA that one labeller had
    labelled, read again blind by docs/labelling.md; where the two differed a third reader adjudicated and the
    changes are corrections. Agreement with the labels as they now stand (Cohen's kappa)."""
    from corpus_audit.stigma.stats.reliability import agreement

    second = pd.read_csv(POOLS / "second_reading_en.csv", dtype=str, keep_default_na=False)
    labelled = labelled_file("en").set_index("uid")
    once = labelled[(labelled["source"] == "real") & (labelled["double_labelled"] == "no")
                    & labelled["corpus"].isin(["civil_comments_toxic_spans_en", "mlma_tweets_en"])]
    assert set(second["uid"]) == set(once.index) and second["uid"].is_unique
    for field in ("stigmatising", "category"):
        result = agreement(once.loc[second["uid"], field].tolist(), second[field].tolist())
        assert result["kappa"] >= 0.9, (field, result)
    corrected = pd.read_csv(POOLS / "corrections.csv", dtype=str, keep_default_na=False)
    assert corrected["reason"].str.startswith("second reading").sum() > 0


# Sentences written for these tests.
@pytest.mark.parametrize(("sentence", "term", "kinds", "expected"), [
    ("honestly that is the most retarded rule ever", "retarded", ("not_stigma",), ["a thing or situation as target"]),
    ("lol I'm so retarded at chess", "retarded", ("not_stigma",), ["the writer about themselves"]),
    ("you are such a retard mate", "retard", ("person_target",), ["an insult aimed at a person"]),
    ("Bipolar folks are dangerous and you can never trust them", "Bipolar", ("stigma",),
     ["dangerousness or fear", "avoidance"]),
    ("The radio said it was dangerous to drive home through the snow that night, and a week later my bipolar "
     "flared", "bipolar", ("stigma",), []),  # the cue stands more than CUE_GAP words from the mention
    ("Se pautó tratamiento y el paciente se mostró agresivo con el personal de la esquizofrenia", "esquizofrenia",
     ("clinical",), ["palabras de riesgo o estereotipo del clínico"]),
])
def test_deconfounding_cues_read_around_the_mention(sampler, sentence, term, kinds, expected):
    lang = "es" if "paciente" in sentence else "en"
    assert sampler.cues_found(sampler.marked(sentence, term), sampler.load_cues(lang), kinds) == expected
