"""Draw the mixed demo corpus (issue 41, item 4): a support forum, news-site comments, tweets and clinical case
reports in one file, as a pretraining corpus mixes registers, none of its documents in the labelled data.

Reads the shared corpora (a development-time input, never read by the product) and ``templates/LANG/
stigma_labelled.csv``. From each corpus it draws, with a fixed seed, documents that no labelled sentence comes
from: a share of those with an illness mention (``MENTION_QUOTAS``; the lexicon's extended terms) and the rest
(``OTHER_QUOTAS``) from those without, so that the demo keeps each register's own mix of topics. Reddit is drawn per
subreddit. Each record keeps its fields and gains ``source`` (the corpus). Later labelling rounds leave these
documents out (``scripts/sample_labelling_pool.py`` skips every document of ``demo/*_LANG.jsonl.gz``).

    PYTHONPATH=$PWD python scripts/build_demo.py --corpora ../shared/corpora --lang en
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path

import numpy as np
import pandas as pd

from corpus_audit.corpus.matcher import IllnessMatcher, default_lexicon_path

ROOT = Path(__file__).resolve().parents[1]
SEED = 4101
#: Documents with an illness mention drawn per corpus (None: half of those not labelled; a number: at most that
#: many), and documents without one.
MENTION_QUOTAS = {"en": {"reddit_mh_27subs_en": 540, "civil_comments_toxic_spans_en": None,
                         "mlma_tweets_en": None, "codiesp_clinical_cases_en": 150},
                  "es": {"textdetox_es": None, "gold_standard_toxicity_es": None,
                         "codiesp_clinical_cases_es": 300}}
OTHER_QUOTAS = {"en": {"reddit_mh_27subs_en": 270, "civil_comments_toxic_spans_en": 700, "mlma_tweets_en": 500,
                       "codiesp_clinical_cases_en": 50},
                "es": {"textdetox_es": 700, "gold_standard_toxicity_es": 300, "codiesp_clinical_cases_es": 50}}
#: Corpora where every unlabelled document with a mention goes into the demo (too few to halve).
ALL_MENTIONS = {"civil_comments_toxic_spans_en", "textdetox_es", "gold_standard_toxicity_es"}


def draw(corpus: Path, lang: str, labelled: set[str], matcher: IllnessMatcher,
         rng: np.random.Generator) -> list[dict]:
    """The demo's documents of one corpus, in the corpus's order."""
    name = corpus.name.removesuffix(".jsonl.gz")
    records = [json.loads(line) for line in gzip.open(corpus, "rt", encoding="utf-8")]
    free = [record for record in records if record["id"] not in labelled]
    with_mention = [record for record in free if matcher.find(record["text"])]
    mentioned = {record["id"] for record in with_mention}
    without = [record for record in free if record["id"] not in mentioned]
    quota = MENTION_QUOTAS[lang][name]
    n_mention = len(with_mention) if name in ALL_MENTIONS else (
        len(with_mention) // 2 if quota is None else min(quota, len(with_mention)))
    chosen = [*_sample(with_mention, n_mention, rng), *_sample(without, OTHER_QUOTAS[lang][name], rng)]
    keep = {record["id"] for record in chosen}
    return [{**record, "source": name} for record in records if record["id"] in keep]


def _sample(records: list[dict], n: int, rng: np.random.Generator) -> list[dict]:
    """``n`` of ``records`` at random; Reddit posts spread evenly over their subreddits."""
    if n >= len(records):
        return records
    if records and "subreddit" in records[0]:
        frame = pd.DataFrame({"subreddit": [record["subreddit"] for record in records]})
        frame["rank"] = frame.sample(frac=1.0, random_state=int(rng.integers(2**31))).groupby("subreddit").cumcount()
        order = frame.sort_values(["rank", "subreddit"], kind="stable").index[:n]
        return [records[i] for i in sorted(order)]
    return [records[i] for i in sorted(rng.choice(len(records), n, replace=False))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpora", type=Path, required=True)
    parser.add_argument("--lang", choices=sorted(MENTION_QUOTAS), required=True)
    parser.add_argument("-o", "--output", type=Path)
    args = parser.parse_args()
    table = pd.read_csv(ROOT / "templates" / args.lang / "stigma_labelled.csv", dtype=str, keep_default_na=False)
    labelled = set(table.loc[table["source"] == "real", "doc_id"])
    matcher = IllnessMatcher.from_csv(default_lexicon_path(args.lang), "extended")
    rng = np.random.default_rng(SEED)
    documents = [record for name in MENTION_QUOTAS[args.lang]
                 for record in draw(args.corpora / f"{name}.jsonl.gz", args.lang, labelled, matcher, rng)]
    output = args.output or ROOT / "demo" / f"mixed_sample_{args.lang}.jsonl.gz"
    with open(output, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9, mtime=0) as handle:
        handle.writelines((json.dumps(record, ensure_ascii=False) + "\n").encode() for record in documents)
    counts = pd.Series([record["source"] for record in documents]).value_counts()
    print(f"{output}: {len(documents)} documents\n{counts.to_string()}")


if __name__ == "__main__":
    main()
