"""Draw the pool of real sentences to label for the signed stigma score (issue 28; guideline: docs/labelling.md).

Reads the shared corpora (a development-time input, never read by the product), splits each document into
sentences with corpus_audit's segmenter, keeps the sentences that mention an illness under a broad pattern set
(the diagnosis names of ``lexicons/LANG/illnesses.csv`` plus the extended mention forms of
``data/labelled/pool_terms.csv``: generic terms, person nouns, adjectives, slang and slurs, treatment words),
drops near-duplicates, and draws a fixed-seed sample per corpus that oversamples the social-text corpora and the
slang/person/generic forms (where the stigmatising sentences are). Every sentence's ``split`` comes from its
source document, so all sentences of a document land in the same split; CodiEsp EN and ES share document ids
(one is the translation of the other), so a case gets the same split in both languages.

Writes ``data/labelled/pool_LANG.csv`` and, with ``--sheets DIR``, the label sheets ``pool_LANG_NN.csv``
(uid, sentence, matched_term only) that labellers fill in.

    PYTHONPATH=$PWD python scripts/sample_labelling_pool.py --corpora /work/shared/corpora \
        --sheets /work/notes/labelling
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from corpus_audit.corpus.segment import Segmenter

ROOT = Path(__file__).resolve().parents[1]
SEED = 2811
SPLITS = (("train", 0.6), ("dev", 0.2), ("heldout", 0.2))
CHUNK_ROWS = 250
DOUBLE_CHUNKS = 2  # the first chunks of each language are labelled twice, independently
MIN_WORDS, MAX_WORDS = 4, 80
# The short-fragment supplement (--short): its word range and sentences per corpus.
SHORT_WORDS = (1, 5)
SHORT_QUOTAS = {"en": {"reddit_mh_27subs_en": 220, "civil_comments_toxic_spans_en": 40, "mlma_tweets_en": 40}}
# The second real sample (--more): sentences per corpus, and rows per label sheet.
MORE_QUOTAS = {"en": {"civil_comments_toxic_spans_en": 400, "mlma_tweets_en": 150, "reddit_mh_27subs_en": 250}}
MORE_CHUNK_ROWS = 200
# The samples mined with the shipped score (--scored ROUND): where the score errs, per corpus (the sentences it
# scores highest, the sentences it is least sure of: nearest 0.5), of 1 to 80 words. English: from Reddit (mostly
# support forums, where an audit reads) the highest, its false alarms and the rare stigma there; from the two
# social-text corpora the least sure. Spanish (from round 1 on the pools that exist: no short or second sample):
# both from the two social-text corpora, where its stigma and its false alarms both are.
SCORED_QUOTAS = {"en": {"reddit_mh_27subs_en": (400, 0), "civil_comments_toxic_spans_en": (0, 50),
                        "mlma_tweets_en": (0, 50)},
                 "es": {"textdetox_es": (150, 100), "gold_standard_toxicity_es": (50, 50)}}
SCORED_WORDS = (1, MAX_WORDS)
# The sample of judgements about people (--judged): the class the labelled real text lacks (in English train, 147
# judgements that do not stigmatise against 872 that do), so the score learns "judgement about people" as
# "stigmatising" and ranks supportive documents high. From Reddit (support forums, where supportive judgements
# are): the sentences the gate reads most strongly as judgements about people (its judgement strength).
JUDGED_QUOTAS = {"en": {"reddit_mh_27subs_en": 300}}
JUDGED_CHUNK_ROWS = 150

# The deconfounding sample (--deconfound, issue 41): real labels not confounded with their corpus. Today nearly
# every real stigmatising sentence comes from the social-text corpora and most non-stigmatising ones from Reddit, so
# a score can tell the registers apart instead of stance. From the social-text corpora it draws the sentences likely
# NOT to stigmatise, from the forum and clinical ones those likely to, by the cues of data/labelled/deconf_cues.csv
# around the mention, ranked by the shipped score (the social ones least stigmatising first, then social sentences
# with no cue and no insult at a person that the score puts below 0.5, by the same order; the others most
# stigmatising first). Sentences of 1 to 80 words from every document (held-out ones too) in no bundled demo
# corpus. Quotas per kind (None: every candidate); the corpora hold fewer (data/labelled/README.md).
DECONF_QUOTAS = {"en": {"likely_not_stigmatising": 350, "likely_stigmatising": 350},
                 "es": {"likely_not_stigmatising": None, "likely_stigmatising": None}}
DECONF_CHUNK_ROWS = 175
# Words that may stand between a cue and the mention, per cue scope (data/labelled/deconf_cues.csv).
CUE_GAP = {"near": 7, "before": 2, "after": 1}
# The rest of the social text (--rest, issue 41): within one toxic-comment corpus both classes are insults and
# hostile text, and the held-out AUC there (0.76-0.82) is what the labels bound. Every social-text sentence with a
# mention that no sample has pooled yet: mostly those the deconfounding draw left out (an insult aimed at a person
# near the mention, or a score of 0.5 or more), the hard cases of the register. Every chunk labelled twice.
REST_CHUNK_ROWS = 120
_MENTION = "\ue000"  # marks the mention in a sentence the cues read (a private-use character: never in text)

# The four corpora of social text with insults and slurs (corpora/NOTICE.md): where stigmatising sentences are.
SOCIAL = {"civil_comments_toxic_spans_en", "mlma_tweets_en", "textdetox_es", "gold_standard_toxicity_es"}
# Sentences per language, and per corpus drawn in this order (a corpus with fewer candidates gives all it has);
# the last corpus of a language (the clinical one) fills the pool up to the language's total.
TOTALS = {"en": 2000, "es": 1400}
QUOTAS = {
    "en": {"civil_comments_toxic_spans_en": 750, "mlma_tweets_en": 330, "reddit_mh_27subs_en": 700,
           "codiesp_clinical_cases_en": None},
    "es": {"textdetox_es": 1000, "gold_standard_toxicity_es": 1000, "codiesp_clinical_cases_es": None},
}
CLINICAL = {"codiesp_clinical_cases_en", "codiesp_clinical_cases_es"}
# Draw weight of a sentence by the form of its mention: the forms where stigma is written weigh more; a mental
# illness twice a physical one. In clinical text slang words are false friends ("anormal", "deficiente"): weight 1.
FORM_WEIGHT = {"slang": 6.0, "person": 6.0, "generic": 5.0, "treatment": 3.0, "adjective": 2.0,
               "diagnosis_extra": 1.5, "diagnosis": 1.0}
MENTAL_WEIGHT = 2.0
FORM_ORDER = list(FORM_WEIGHT)  # a sentence's form is its first in this order
LICENCES = {
    "reddit_mh_27subs_en": "Apache-2.0 (construct-tracker; Reddit Mental Health Dataset, Low et al. 2020)",
    "codiesp_clinical_cases_en": "CC-BY-4.0 (CodiEsp/SPACCC, Miranda-Escalada et al. 2020)",
    "codiesp_clinical_cases_es": "CC-BY-4.0 (CodiEsp/SPACCC, Miranda-Escalada et al. 2020)",
    "civil_comments_toxic_spans_en": "CC0-1.0 (Toxic Spans, Pavlopoulos et al. 2021)",
    "mlma_tweets_en": "MIT (MLMA, Ousidhoum et al. 2019, (c) 2019 HKUST-KnowComp)",
    "textdetox_es": "MIT (TextDetox/CLANDESTINO, Microsoft); content CC-BY-4.0",
    "gold_standard_toxicity_es": "CC-BY-4.0 (gold-standard-toxicity, González-Bustamante et al.)",
}
POOL_COLUMNS = ["uid", "lang", "corpus", "doc_id", "licence", "sentence", "matched_term", "form", "illness_type",
                "split", "double_labelled", "chunk"]
# Accents folded one character to one, so match offsets in the folded text are offsets in the sentence.
_FOLD = str.maketrans("áéíóúüÁÉÍÓÚÜàèìòùÀÈÌÒÙ’", "aeiouuAEIOUUaeiouAEIOU'")
# Near-duplicates for the split by cluster (``NearDuplicateIndex``; thresholds chosen by reading the labelled
# pairs, docs/stigma_score.md "Data"): word-set Jaccard for sentences of enough distinct words, and a shared run of
# words holding enough words outside the language's most frequent.
NEAR_JACCARD, NEAR_MIN_WORDS = 0.5, 8
RUN_WORDS, RUN_RARE, FREQUENT_WORDS = 5, 3, 150
_URL = re.compile(r"https?://\S+|@\w+|#")
_NON_WORD = re.compile(r"[^a-zñ0-9]+")
# MLMA tweets hold JSON escapes as literal text ("\\u201cretard", "\\n"): decoded before matching.
_LITERAL_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})|\\n")


@dataclass(frozen=True)
class Pattern:
    form: str
    illness_type: str
    regex: re.Pattern[str]


def fold(text: str) -> str:
    return text.translate(_FOLD)


def load_patterns(lang: str) -> list[Pattern]:
    """One case-insensitive pattern per form (diagnosis names: upper-case abbreviations matched as written)."""
    lexicon = pd.read_csv(ROOT / "lexicons" / lang / "illnesses.csv", keep_default_na=False)
    # Bare "cold" is mostly temperature: only "colds", "common cold" and "a cold" as below enter the pool.
    lexicon = lexicon[lexicon["term"] != "cold"]
    patterns = []
    for illness_type, rows in lexicon.groupby("type"):
        exact = rows["case"] == "exact"
        for terms, flags in ((rows.loc[~exact, "term"], re.IGNORECASE), (rows.loc[exact, "term"], 0)):
            if len(terms):
                patterns.append(Pattern("diagnosis", illness_type, _alternation(terms, flags)))
    if lang == "en":
        # "a cold" as an illness: followed by punctuation or a word that goes on about the illness, not an adjective.
        patterns.append(Pattern("diagnosis", "physical", re.compile(
            r"\b(?:a|the|this|my|his|her) cold\b(?=\s*(?:[.,;:!?)]|$|and\b|or\b|with\b|for\b|since\b|that\b|last\b"
            r"|going\b|coming\b|again\b|in\b|on\b|so\b|but\b))", re.IGNORECASE)))
    extended = pd.read_csv(ROOT / "data" / "labelled" / "pool_terms.csv", keep_default_na=False)
    for (form, illness_type), rows in extended[extended["lang"] == lang].groupby(["form", "type"], sort=False):
        body = "|".join(f"(?:{fold(pattern)})" for pattern in rows["pattern"])
        patterns.append(Pattern(form, illness_type, re.compile(rf"\b(?:{body})\b", re.IGNORECASE)))
    return patterns


def _alternation(terms: pd.Series, flags: int) -> re.Pattern[str]:
    body = "|".join(re.escape(fold(term)) for term in sorted(terms, key=len, reverse=True))
    return re.compile(rf"(?<![\w-])(?:{body})(?![\w-])", flags)


def mentions(sentence: str, patterns: list[Pattern]) -> tuple[str, str, str] | None:
    """(matched surface forms joined by ';' in text order, the sentence's form, that form's illness type: mental
    when any of its matches is) or None without a mention."""
    folded = fold(sentence)
    spans: set[tuple[int, int]] = set()
    types: dict[str, set[str]] = {}
    for pattern in patterns:
        for match in pattern.regex.finditer(folded):
            spans.add(match.span())
            types.setdefault(pattern.form, set()).add(pattern.illness_type)
    if not spans:
        return None
    terms = list(dict.fromkeys(sentence[start:end] for start, end in sorted(spans)))
    form = next(form for form in FORM_ORDER if form in types)
    return ";".join(terms), form, "mental" if "mental" in types[form] else "physical"


def read_corpus(path: Path) -> Iterator[tuple[str, str]]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            text = _LITERAL_ESCAPE.sub(lambda m: chr(int(m[1], 16)) if m[1] else " ", record.get("text") or "")
            yield str(record["id"]), text


def candidates(corpora: Path, corpus: str, lang: str, patterns: list[Pattern],
               words: tuple[int, int] = (MIN_WORDS, MAX_WORDS)) -> pd.DataFrame:
    """Every sentence of ``corpus`` with a mention, ``words`` (4 to 80 by default) words long."""
    segmenter = Segmenter(lang)
    rows = []
    for doc_id, text in read_corpus(corpora / f"{corpus}.jsonl.gz"):
        if not any(pattern.regex.search(fold(text)) for pattern in patterns):
            continue
        for sentence in segmenter.sentences(text):
            if not words[0] <= len(sentence.split()) <= words[1]:
                continue
            found = mentions(sentence, patterns)
            if found:
                rows.append((corpus, doc_id, sentence, *found))
    return pd.DataFrame(rows, columns=["corpus", "doc_id", "sentence", "matched_term", "form", "illness_type"])


def split_of(doc_id: str) -> str:
    """train/dev/heldout from a hash of the document id alone (same id, same split, in every corpus)."""
    value = int.from_bytes(hashlib.sha256(f"{SEED}:{doc_id}".encode()).digest()[:8], "big") / 2**64
    cumulative = 0.0
    for name, share in SPLITS:
        cumulative += share
        if value < cumulative:
            return name
    return SPLITS[-1][0]


def near_key(sentence: str) -> str:
    return _NON_WORD.sub(" ", fold(_URL.sub(" ", sentence)).lower()).strip()


class NearDuplicates:
    """Greedy near-duplicate filter: a sentence is dropped when its word set overlaps an accepted one's with
    Jaccard >= ``threshold``, or their normalised texts are equal (retweets, reposts, boilerplate)."""

    def __init__(self, threshold: float = 0.8) -> None:
        self.threshold = threshold
        self.keys: set[str] = set()
        self.words: list[frozenset[str]] = []
        self.index: dict[str, list[int]] = {}

    def is_new(self, sentence: str) -> bool:
        """Whether ``sentence`` is a near-duplicate of none accepted so far."""
        key = near_key(sentence)
        if key in self.keys:
            return False
        words = frozenset(key.split())
        overlap: dict[int, int] = {}
        for word in words:
            for other in self.index.get(word, ()):
                overlap[other] = overlap.get(other, 0) + 1
        return all(shared / len(words | self.words[other]) < self.threshold for other, shared in overlap.items())

    def add(self, sentence: str) -> bool:
        if not self.is_new(sentence):
            return False
        key = near_key(sentence)
        words = frozenset(key.split())
        self.keys.add(key)
        for word in words:
            self.index.setdefault(word, []).append(len(self.words))
        self.words.append(words)
        return True

    def take(self, ordered: pd.DataFrame, wanted: int) -> pd.DataFrame:
        """The first ``wanted`` rows of ``ordered`` whose sentence is new (each one taken is remembered)."""
        taken: list[int] = []
        for row, sentence in enumerate(ordered["sentence"]):
            if len(taken) == wanted:
                break
            if self.add(sentence):
                taken.append(row)
        return ordered.iloc[taken]


def frequent_words(sentences: Iterable[str], count: int = FREQUENT_WORDS) -> frozenset[str]:
    """The ``count`` words (of ``near_key``) in most of ``sentences``, ties alphabetical: a run of words made mostly
    of them is a common phrase ("i don t know how to"), not a copy."""
    found = Counter(word for sentence in sentences for word in set(near_key(sentence).split()))
    return frozenset(word for word, _ in sorted(found.items(), key=lambda item: (-item[1], item[0]))[:count])


class NearDuplicateIndex:
    """Sentences that are near-duplicates in the sense of the split by cluster (issue 41): two sentences (words of
    ``near_key``) are linked when

    - each has at least ``NEAR_MIN_WORDS`` distinct words and their word sets overlap with Jaccard >=
      ``NEAR_JACCARD`` (the same comment reposted or lightly edited; shorter sentences reach 0.5 by chance:
      "I'm going crazy." / "I feel like I'm going crazy."),
    - or they share ``RUN_WORDS`` words in the same order within ``RUN_WORDS`` + 1 consecutive words of each (a
      templated tweet, a copied phrase, with one word inserted, dropped or changed: "the malignant narcissist and
      mentally warped / deranged sociopath") of which at least ``RUN_RARE`` are not among ``frequent`` (so "i don
      t know how to" links nothing; on the labelled data every longer shared run, 8 words, that this misses is a
      common phrase: "and i don t know what to do").

    ``matches`` answers which indexed sentences a new one is linked to; ``add`` indexes it."""

    def __init__(self, frequent: frozenset[str]) -> None:
        self.frequent = frequent
        self.sizes: list[int] = []
        self.by_word: dict[str, list[int]] = {}
        self.by_run: dict[tuple[str, ...], list[int]] = {}

    def runs(self, words: list[str]) -> set[tuple[str, ...]]:
        """The keys of the shared runs: the words of every run of ``RUN_WORDS`` and of every run one longer less
        one inner word, where enough of them are not frequent."""
        runs = {tuple(words[start:start + RUN_WORDS]) for start in range(len(words) - RUN_WORDS + 1)}
        for start in range(len(words) - RUN_WORDS):
            window = words[start:start + RUN_WORDS + 1]
            runs.update(tuple(window[:drop] + window[drop + 1:]) for drop in range(1, RUN_WORDS))
        return {run for run in runs if sum(word not in self.frequent for word in run) >= RUN_RARE}

    def matches(self, sentence: str) -> set[int]:
        words = near_key(sentence).split()
        found = {other for run in self.runs(words) for other in self.by_run.get(run, ())}
        distinct = set(words)
        if len(distinct) >= NEAR_MIN_WORDS:
            shared = Counter(other for word in distinct for other in self.by_word.get(word, ()))
            found.update(other for other, count in shared.items()
                         if count / (len(distinct) + self.sizes[other] - count) >= NEAR_JACCARD)
        return found

    def add(self, sentence: str) -> int:
        words = near_key(sentence).split()
        index = len(self.sizes)
        distinct = set(words)
        self.sizes.append(len(distinct))
        if len(distinct) >= NEAR_MIN_WORDS:  # only these take part in the Jaccard test
            for word in distinct:
                self.by_word.setdefault(word, []).append(index)
        for run in self.runs(words):
            self.by_run.setdefault(run, []).append(index)
        return index


def draw(found: pd.DataFrame, quotas: dict[str, int | None], lang: str, rng: np.random.Generator,
         seen: NearDuplicates | None = None) -> pd.DataFrame:
    """Per corpus in ``quotas`` order, up to its quota of sentences that are not near-duplicates of one already
    drawn (or already in ``seen``), with weights by form and type (Efraimidis–Spirakis weighted sampling without
    replacement)."""
    seen = seen or NearDuplicates()
    drawn: list[pd.DataFrame] = []
    for corpus, quota in quotas.items():
        pool = found[found["corpus"] == corpus]
        weights = pool["form"].map(FORM_WEIGHT).where(~((pool["form"] == "slang") & (corpus in CLINICAL)), 1.0)
        weights = (weights * np.where(pool["illness_type"] == "mental", MENTAL_WEIGHT, 1.0)).to_numpy()
        ordered = pool.iloc[np.argsort(-rng.random(len(pool)) ** (1.0 / weights), kind="stable")]
        drawn.append(seen.take(ordered, TOTALS[lang] - sum(map(len, drawn)) if quota is None else quota))
    return pd.concat(drawn, ignore_index=True)


def chunk_sizes(rows: int) -> list[int]:
    count = max(1, math.ceil(rows / CHUNK_ROWS))
    return [len(part) for part in np.array_split(np.arange(rows), count)]


def double_subset(sample: pd.DataFrame, size: int, rng: np.random.Generator) -> np.ndarray:
    """Indices of ``size`` rows to label twice: 55% from the social-text corpora (proportional to their share
    of the pool), the rest from the other corpora, each drawn at random."""
    social = sample["corpus"].isin(SOCIAL).to_numpy()
    social_rows = min(int(social.sum()), round(size * 0.55))
    parts = []
    for mask, wanted in ((social, social_rows), (~social, size - social_rows)):
        group = sample[mask]
        counts = (group["corpus"].value_counts() / len(group) * wanted).round().astype(int)
        counts.iloc[0] += wanted - counts.sum()  # rounding: the largest corpus takes the remainder
        for corpus, count in counts.items():
            members = group.index[group["corpus"] == corpus].to_numpy()
            parts.append(rng.choice(members, size=count, replace=False))
    return np.concatenate(parts)


def build(corpora: Path, lang: str) -> pd.DataFrame:
    rng = np.random.default_rng(SEED)
    patterns = load_patterns(lang)
    found = pd.concat([candidates(corpora, corpus, lang, patterns) for corpus in QUOTAS[lang]],
                      ignore_index=True)
    found = found.drop_duplicates("sentence").reset_index(drop=True)
    print(f"{lang}: candidate sentences per corpus and form\n"
          f"{pd.crosstab(found['corpus'], found['form'], margins=True).to_string()}\n")
    sample = draw(found, QUOTAS[lang], lang, rng)
    sizes = chunk_sizes(len(sample))
    doubled = double_subset(sample, sum(sizes[:DOUBLE_CHUNKS]), rng)
    sample["double_labelled"] = np.where(np.isin(np.arange(len(sample)), doubled), "yes", "no")
    # Label order: the double-labelled rows first (chunks 01..), each part shuffled so a chunk mixes corpora.
    sample["order"] = rng.random(len(sample))
    sample = sample.sort_values(["double_labelled", "order"], ascending=[False, True]).reset_index(drop=True)
    sample["uid"] = [f"{lang}-{index:05d}" for index in range(1, len(sample) + 1)]
    sample["chunk"] = np.repeat([f"pool_{lang}_{n:02d}" for n in range(1, len(sizes) + 1)], sizes)
    sample["lang"] = lang
    sample["licence"] = sample["corpus"].map(LICENCES)
    sample["split"] = sample["doc_id"].map(split_of)
    return sample[POOL_COLUMNS]


def supplement_candidates(corpora: Path, lang: str, quotas: dict, words: tuple[int, int],
                          pooled: list[pd.DataFrame], heldout: bool = False) -> tuple[pd.DataFrame, NearDuplicates]:
    """A supplement's candidates: sentences of ``words`` words from documents of the train and dev splits only
    (the held-out set stays the main pool's random sample; ``heldout``: from every document), none from the bundled
    demo corpora (so the demo check stays out of sample); and the near-duplicate filter already holding every
    ``pooled`` sentence."""
    patterns = load_patterns(lang)
    demo = {doc_id for path in (ROOT / "demo").glob(f"*_{lang}.jsonl.gz") for doc_id, _ in read_corpus(path)}
    found = pd.concat([candidates(corpora, corpus, lang, patterns, words) for corpus in quotas],
                      ignore_index=True).drop_duplicates("sentence")
    found = found[~found["doc_id"].isin(demo) & (heldout | (found["doc_id"].map(split_of) != "heldout"))]
    seen = NearDuplicates()
    for pool in pooled:
        for sentence in pool["sentence"]:
            seen.add(sentence)
    return found, seen


def number_supplement(sample: pd.DataFrame, lang: str, pooled: list[pd.DataFrame], chunk_rows: int,
                      double_chunks: int) -> pd.DataFrame:
    """uids and chunks continuing the pooled ones; the first ``double_chunks`` chunks are labelled twice."""
    everything = pd.concat(pooled, ignore_index=True)
    first = int(everything["uid"].str.split("-").str[-1].astype(int).max()) + 1
    chunk = int(everything["chunk"].str.split("_").str[-1].astype(int).max()) + 1
    count = max(1, math.ceil(len(sample) / chunk_rows))
    sizes = [len(part) for part in np.array_split(np.arange(len(sample)), count)]
    chunks = np.repeat([f"pool_{lang}_{n:02d}" for n in range(chunk, chunk + count)], sizes)
    doubled = np.repeat([index < double_chunks for index in range(count)], sizes)
    return sample.assign(uid=[f"{lang}-{index:05d}" for index in range(first, first + len(sample))],
                         lang=lang, licence=sample["corpus"].map(LICENCES), split=sample["doc_id"].map(split_of),
                         double_labelled=np.where(doubled, "yes", "no"), chunk=chunks)[POOL_COLUMNS]


def build_short(corpora: Path, lang: str, pooled: list[pd.DataFrame]) -> pd.DataFrame:
    """The short-fragment supplement: sentences of 1 to 5 words (titles, greetings, one-line verdicts, below the
    main pool's 4-word floor except 4-5), drawn at random per corpus (``supplement_candidates``). Labelled twice,
    independently, like the main pool's first chunks."""
    rng = np.random.default_rng(SEED + 1)
    found, seen = supplement_candidates(corpora, lang, SHORT_QUOTAS[lang], SHORT_WORDS, pooled)
    drawn = []
    for corpus, quota in SHORT_QUOTAS[lang].items():
        ordered = found[found["corpus"] == corpus].sample(frac=1.0, random_state=rng)
        # every new sentence of a corpus is remembered, taken or not, as when the short sample was drawn
        drawn.append(ordered[[seen.add(sentence) for sentence in ordered["sentence"]]].head(quota))
    sample = pd.concat(drawn, ignore_index=True).sample(frac=1.0, random_state=rng).reset_index(drop=True)
    return number_supplement(sample, lang, pooled, len(sample), 1)


def build_more(corpora: Path, lang: str, pooled: list[pd.DataFrame]) -> pd.DataFrame:
    """The second real sample: more sentences of the main pool's length from the social-text corpora and Reddit,
    drawn as the main pool is (weights by form and type, ``draw``) from what ``supplement_candidates`` leaves.
    One chunk is labelled twice, independently."""
    rng = np.random.default_rng(SEED + 2)
    found, seen = supplement_candidates(corpora, lang, MORE_QUOTAS[lang], (MIN_WORDS, MAX_WORDS), pooled)
    sample = draw(found, MORE_QUOTAS[lang], lang, rng, seen)
    sample = sample.sample(frac=1.0, random_state=rng).reset_index(drop=True)
    return number_supplement(sample, lang, pooled, MORE_CHUNK_ROWS, 1)


def scored_suffix(round_: int) -> str:
    """The pool file suffix of mining round ``round_`` (1: ``_scored``, 2: ``_scored2``, ...)."""
    return "_scored" if round_ == 1 else f"_scored{round_}"


def build_scored(corpora: Path, lang: str, pooled: list[pd.DataFrame], round_: int = 1) -> pd.DataFrame:
    """A sample mined with the stigma score of the shipped axes (the package as installed: the draw depends on
    them, so it is reproducible at the commit that drew it; each round mines with the heads refitted on the rounds
    before): per corpus of ``SCORED_QUOTAS``, from what ``supplement_candidates`` leaves, the highest-scored
    sentences and then those nearest 0.5 (as many as its quotas say), each not a near-duplicate of one already
    pooled or drawn.
    One chunk is labelled twice, independently."""
    from corpus_audit.api import Instrument

    found, seen = supplement_candidates(corpora, lang, SCORED_QUOTAS[lang], SCORED_WORDS, pooled)
    scores = Instrument(lang).score_sentences(found["sentence"].tolist())["stigma"].to_numpy()
    found = found.assign(stigma=scores)
    drawn = []
    for corpus, quotas in SCORED_QUOTAS[lang].items():
        pool = found[(found["corpus"] == corpus) & np.isfinite(found["stigma"])]
        for quota, order in zip(quotas, (-pool["stigma"], (pool["stigma"] - 0.5).abs())):
            drawn.append(seen.take(pool.iloc[np.argsort(order.to_numpy(), kind="stable")], quota))
    rng = np.random.default_rng(SEED + 2 + round_)
    sample = pd.concat(drawn, ignore_index=True).sample(frac=1.0, random_state=rng).reset_index(drop=True)
    return number_supplement(sample, lang, pooled, MORE_CHUNK_ROWS, 1)


def build_judged(corpora: Path, lang: str, pooled: list[pd.DataFrame]) -> pd.DataFrame:
    """A sample of the sentences the shipped gate reads most strongly as judgements about people (highest
    judgement strength first), per corpus of ``JUDGED_QUOTAS``, from what ``supplement_candidates`` leaves, each not
    a near-duplicate of one already pooled or drawn. Both chunks are labelled twice, independently."""
    from corpus_audit.api import Instrument

    found, seen = supplement_candidates(corpora, lang, JUDGED_QUOTAS[lang], SCORED_WORDS, pooled)
    strength = Instrument(lang).score_sentences(found["sentence"].tolist())["judgement_strength"].to_numpy()
    found = found.assign(judgement_strength=strength)
    drawn = [seen.take(found[found["corpus"] == corpus].sort_values("judgement_strength", ascending=False,
                                                                    kind="stable"), quota)
             for corpus, quota in JUDGED_QUOTAS[lang].items()]
    rng = np.random.default_rng(SEED + 100)
    sample = pd.concat(drawn, ignore_index=True).sample(frac=1.0, random_state=rng).reset_index(drop=True)
    return number_supplement(sample, lang, pooled, JUDGED_CHUNK_ROWS, 2)


@dataclass(frozen=True)
class Cue:
    kind: str  # stigma, clinical (forum and clinical corpora), not_stigma, person_target (social corpora)
    name: str
    regex: re.Pattern[str]


def load_cues(lang: str) -> list[Cue]:
    """The cues of ``data/labelled/deconf_cues.csv`` for ``lang``, each a pattern that must stand within its scope's
    ``CUE_GAP`` words of the mention: before it, after it, or either (``near``). Case and accents are ignored."""
    table = pd.read_csv(ROOT / "data" / "labelled" / "deconf_cues.csv", keep_default_na=False)
    cues = []
    for row in table[table["lang"] == lang].itertuples(index=False):
        body, gap = fold(row.pattern), rf"(?:\W+\w+){{0,{CUE_GAP[row.scope]}}}\W+"
        before, after = rf"\b(?:{body})\b{gap}{_MENTION}", rf"{_MENTION}{gap}(?:{body})\b"
        regex = {"before": before, "after": after, "near": f"{before}|{after}"}[row.scope]
        cues.append(Cue(row.kind, row.cue, re.compile(regex, re.IGNORECASE)))
    return cues


def marked(sentence: str, matched_term: str) -> str:
    """``sentence`` folded, its mentions (``matched_term``, ';'-joined) replaced by the mention mark."""
    text = fold(sentence).lower()
    for term in sorted({fold(term).lower() for term in matched_term.split(";") if term}, key=len, reverse=True):
        text = re.sub(rf"(?<!\w){re.escape(term)}(?!\w)", f" {_MENTION} ", text)
    return text


def cues_found(text: str, cues: list[Cue], kinds: tuple[str, ...]) -> list[str]:
    return [cue.name for cue in cues if cue.kind in kinds and cue.regex.search(text)]


def deconfound_candidates(found: pd.DataFrame, lang: str) -> pd.DataFrame:
    """The candidates of each kind with the cues they hold (``cue``, ';'-joined): ``likely_stigmatising`` (forum
    and clinical corpora: a stereotype cue near the mention, or the mention a slur or slang word outside clinical
    text; in clinical text the clinician's risk and stereotype words) and ``likely_not_stigmatising`` (social-text
    corpora, no insult aimed at a person near the mention: a cue of a use that does not stigmatise, or none)."""
    cues = load_cues(lang)
    text = [marked(sentence, terms) for sentence, terms in zip(found["sentence"], found["matched_term"])]
    social = found["corpus"].isin(SOCIAL).to_numpy()
    clinical = found["corpus"].isin(CLINICAL).to_numpy()
    kind, cue = [], []
    for row, marked_text in enumerate(text):
        if social[row]:
            targeted = cues_found(marked_text, cues, ("person_target",))
            kind.append("" if targeted else "likely_not_stigmatising")
            cue.append(";".join(cues_found(marked_text, cues, ("not_stigma",))))
        else:
            names = cues_found(marked_text, cues, ("clinical",) if clinical[row] else ("stigma",))
            if found["form"].iloc[row] == "slang" and not clinical[row]:
                names.append("slur or slang mention")
            kind.append("likely_stigmatising" if names else "")
            cue.append(";".join(names))
    return found.assign(kind=kind, cue=cue).query("kind != ''")


def take_new(ordered: pd.DataFrame, wanted: int | None, seen: NearDuplicates,
             index: NearDuplicateIndex) -> pd.DataFrame:
    """The first ``wanted`` (None: all) rows of ``ordered`` that are near-duplicates neither of an earlier one nor
    of a sentence ``seen`` or ``index`` already hold (each one taken is added to both)."""
    taken = []
    for row, sentence in enumerate(ordered["sentence"]):
        if wanted is not None and len(taken) == wanted:
            break
        if not index.matches(sentence) and seen.add(sentence):
            index.add(sentence)
            taken.append(row)
    return ordered.iloc[taken]


def build_deconfound(corpora: Path, lang: str, pooled: list[pd.DataFrame]) -> pd.DataFrame:
    """The deconfounding sample (``DECONF_QUOTAS``): per kind of ``deconfound_candidates``, the social sentences
    with a cue least stigmatising first by the shipped score, then those without one that it scores below 0.5 in
    the same order; the forum and clinical ones most stigmatising first. None is a near-duplicate of a pooled sentence (``NearDuplicates``
    and ``NearDuplicateIndex``) or of another drawn. Every chunk is labelled twice, independently."""
    from corpus_audit.api import Instrument

    found, seen = supplement_candidates(corpora, lang, QUOTAS[lang], SCORED_WORDS, pooled, heldout=True)
    labelled = pd.concat(pooled, ignore_index=True)["sentence"]
    index = NearDuplicateIndex(frequent_words(labelled))
    for sentence in labelled:
        index.add(sentence)
    found = deconfound_candidates(found[[seen.is_new(sentence) and not index.matches(sentence)
                                         for sentence in found["sentence"]]], lang)
    print(f"{lang}: deconfounding candidates (no near-duplicate of a labelled sentence) per corpus and cue (a "
          f"sentence counts under each of its cues)\n"
          f"{cue_counts(found).to_string()}\n")
    found = found.assign(stigma=Instrument(lang).score_sentences(found["sentence"].tolist())["stigma"].to_numpy())
    social = found[(found["kind"] == "likely_not_stigmatising") & ((found["cue"] != "") | (found["stigma"] < 0.5))]
    social = social.iloc[np.lexsort((social["stigma"].to_numpy(), (social["cue"] == "").to_numpy()))]
    forum = found[found["kind"] == "likely_stigmatising"].sort_values("stigma", ascending=False, kind="stable")
    quotas = DECONF_QUOTAS[lang]
    drawn = [take_new(social, quotas["likely_not_stigmatising"], seen, index),
             take_new(forum, quotas["likely_stigmatising"], seen, index)]
    rng = np.random.default_rng(SEED + 200)
    sample = pd.concat(drawn, ignore_index=True).sample(frac=1.0, random_state=rng).reset_index(drop=True)
    sample["cue"] = sample["cue"].replace("", "none (stigma score below 0.5)")
    numbered = number_supplement(sample, lang, pooled, DECONF_CHUNK_ROWS, len(sample))
    return numbered.assign(kind=sample["kind"].to_numpy(), cue=sample["cue"].to_numpy(),
                           stigma=sample["stigma"].round(4).to_numpy())


def build_rest(corpora: Path, lang: str, pooled: list[pd.DataFrame]) -> pd.DataFrame:
    """The rest of the social text: every sentence of 1 to 80 words with a mention from the social-text corpora's
    documents (held-out ones too) in no bundled demo corpus, none a near-duplicate of a pooled sentence or of
    another drawn, in random order. Every chunk is labelled twice, independently."""
    social = {corpus: None for corpus in QUOTAS[lang] if corpus in SOCIAL}
    found, seen = supplement_candidates(corpora, lang, social, SCORED_WORDS, pooled, heldout=True)
    index = NearDuplicateIndex(frequent_words(pd.concat(pooled, ignore_index=True)["sentence"]))
    for pool in pooled:
        for sentence in pool["sentence"]:
            index.add(sentence)
    rng = np.random.default_rng(SEED + 300)
    sample = take_new(found.sample(frac=1.0, random_state=rng), None, seen, index).reset_index(drop=True)
    return number_supplement(sample, lang, pooled, REST_CHUNK_ROWS, len(sample))


def cue_counts(found: pd.DataFrame) -> pd.DataFrame:
    """Candidates per corpus (columns) and cue (rows), a sentence counted under each of its cues, with the number of
    sentences per corpus."""
    cues = found.assign(cue=found["cue"].replace("", "none").str.split(";")).explode("cue")
    counts = pd.crosstab([cues["kind"], cues["cue"]], cues["corpus"])
    counts.loc[("all", "sentences"), :] = found["corpus"].value_counts()
    return counts.fillna(0).astype(int)


def labelled_pool(lang: str) -> pd.DataFrame:
    """The real rows of the shipped labelled file: every sentence pooled so far (the pool files of the earlier
    rounds are folded into it)."""
    table = pd.read_csv(ROOT / "templates" / lang / "stigma_labelled.csv", dtype=str, keep_default_na=False)
    return table[table["source"] == "real"]


def summarise(pool: pd.DataFrame) -> str:
    lines = [pd.crosstab([pool["corpus"]], pool["split"], margins=True).to_string(),
             pd.crosstab(pool["corpus"], pool["form"], margins=True).to_string(),
             pd.crosstab(pool["chunk"], [pool["double_labelled"], pool["corpus"].isin(SOCIAL)]).to_string()]
    return "\n\n".join(lines)


def read_pools(folder: Path, lang: str, *suffixes: str) -> list[pd.DataFrame]:
    """The pools ``pool_LANG<suffix>.csv`` already drawn in ``folder``."""
    return [pd.read_csv(folder / f"pool_{lang}{suffix}.csv", dtype=str, keep_default_na=False) for suffix in suffixes]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpora", type=Path, required=True, help="folder of the shared *.jsonl.gz corpora")
    parser.add_argument("--out", type=Path, default=ROOT / "data" / "labelled")
    parser.add_argument("--sheets", type=Path, help="also write the label sheets pool_LANG_NN.csv here")
    parser.add_argument("--lang", choices=sorted(QUOTAS), action="append")
    supplements = parser.add_mutually_exclusive_group()
    supplements.add_argument("--short", action="store_true", help="draw the short-fragment supplement "
                             "pool_LANG_short.csv (needs pool_LANG.csv in --out)")
    supplements.add_argument("--more", action="store_true", help="draw the second real sample pool_LANG_more.csv "
                             "(needs pool_LANG.csv and pool_LANG_short.csv in --out)")
    supplements.add_argument("--scored", type=int, metavar="ROUND", help="draw mining round ROUND (1, 2, ...) with "
                             "the shipped stigma score: pool_LANG_scored.csv, then pool_LANG_scored2.csv, ... (reads "
                             "the pools drawn before it in --out)")
    supplements.add_argument("--judged", action="store_true", help="draw the sample of judgements about people "
                             "pool_LANG_judged.csv (reads the pooled sentences from "
                             "templates/LANG/stigma_labelled.csv)")
    supplements.add_argument("--deconfound", action="store_true", help="draw the deconfounding sample "
                             "pool_LANG_deconf.csv: social-text sentences likely not to stigmatise, forum and "
                             "clinical ones likely to (reads the pooled sentences from templates/LANG/"
                             "stigma_labelled.csv and the cues from data/labelled/deconf_cues.csv)")
    supplements.add_argument("--rest", action="store_true", help="draw the rest of the social text "
                             "pool_LANG_rest.csv: every social-text sentence with a mention no sample holds yet "
                             "(reads the pooled sentences from templates/LANG/stigma_labelled.csv)")
    args = parser.parse_args()
    for lang in args.lang or sorted(QUOTAS):
        args.out.mkdir(parents=True, exist_ok=True)

        if args.short:
            pool = build_short(args.corpora, lang, read_pools(args.out, lang, ""))
            pool.to_csv(args.out / f"pool_{lang}_short.csv", index=False)
        elif args.more:
            pool = build_more(args.corpora, lang, read_pools(args.out, lang, "", "_short"))
            pool.to_csv(args.out / f"pool_{lang}_more.csv", index=False)
        elif args.judged:
            if lang not in JUDGED_QUOTAS:
                print(f"{lang}: no sample of judgements to draw (JUDGED_QUOTAS)")
                continue
            pool = build_judged(args.corpora, lang, [labelled_pool(lang)])
            pool.to_csv(args.out / f"pool_{lang}_judged.csv", index=False)
        elif args.deconfound:
            pool = build_deconfound(args.corpora, lang, [labelled_pool(lang)])
            pool.to_csv(args.out / f"pool_{lang}_deconf.csv", index=False)
        elif args.rest:
            pool = build_rest(args.corpora, lang, [labelled_pool(lang)])
            pool.to_csv(args.out / f"pool_{lang}_rest.csv", index=False)
        elif args.scored:
            earlier = [scored_suffix(round_) for round_ in range(1, args.scored)]
            drawn = [suffix for suffix in ("", "_short", "_more", *earlier)
                     if (args.out / f"pool_{lang}{suffix}.csv").is_file()]
            pool = build_scored(args.corpora, lang, read_pools(args.out, lang, *drawn), args.scored)
            pool.to_csv(args.out / f"pool_{lang}{scored_suffix(args.scored)}.csv", index=False)
        else:
            pool = build(args.corpora, lang)
            pool.to_csv(args.out / f"pool_{lang}.csv", index=False)
        print(f"{lang}: {len(pool)} sentences\n{summarise(pool)}\n")
        if args.sheets:
            args.sheets.mkdir(parents=True, exist_ok=True)
            for chunk, rows in pool.groupby("chunk"):
                rows[["uid", "sentence", "matched_term"]].to_csv(args.sheets / f"{chunk}.csv", index=False)


if __name__ == "__main__":
    main()
