"""The stigma head reads each sentence's mention forms (the mask erases whether a mention was a slur or a
diagnosis): an audit and ``score --mask`` give it the forms their matcher found, sentence by sentence."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from click.testing import CliRunner

from corpus_audit.cli import main
from corpus_audit.corpus.matcher import FORMS
from corpus_audit.scm.axes import SCMAxes
from corpus_audit.scm.columns import OUTPUT_COLUMNS, STIGMA_COLUMN
from corpus_audit.score.scorer import ModelSpec

SAMPLE = str(Path(__file__).parents[1] / "data" / "corpus_reddit_sample_en.jsonl.gz")
# Written for this test: one masked text, two mention forms (the axes: the forms_axes fixture, tests/conftest.py).
SLANG, PERSON = "Those lunatics are everywhere tonight.", "Those schizophrenics are everywhere tonight."


def test_score_gives_the_stigma_head_the_forms_of_the_masked_mentions(tmp_path, tiny_st_model, forms_axes):
    source = tmp_path / "in.txt"
    source.write_text(f"{SLANG}\n{PERSON}\n", encoding="utf-8")
    out = tmp_path / "out.csv"
    result = CliRunner().invoke(main, ["score", str(source), "-o", str(out), "--model", tiny_st_model,
                                       "--axes", forms_axes])
    assert result.exit_code == 0, result.output
    scored = pd.read_csv(out)
    # the same masked words, so the same point; the slur's form makes the stigma score
    np.testing.assert_allclose(scored.loc[0, ["warmth", "competence"]], scored.loc[1, ["warmth", "competence"]])
    assert scored.loc[0, STIGMA_COLUMN] > 0.5 > scored.loc[1, STIGMA_COLUMN]


def test_an_audit_scores_each_sentence_with_its_forms(tmp_path, tiny_st_model, forms_axes):
    from corpus_audit.corpus.select import mask_mentions
    from corpus_audit.languages import LANGUAGES

    result = CliRunner().invoke(main, ["audit", SAMPLE, "--lang", "en", "-o", str(tmp_path / "out"), "--model",
                                       tiny_st_model, "--axes", forms_axes, "--workers", "1"])
    assert result.exit_code == 0, result.output
    sentences = pd.read_parquet(tmp_path / "out" / "sentences.parquet")
    embedder, axes = ModelSpec("en", tiny_st_model, axes_path=forms_axes).load()
    filtered = pd.read_parquet(tmp_path / "out" / "filtered.parquet").drop_duplicates("sentence").set_index(
        "sentence")
    texts = [" ".join(mask_mentions(s, filtered.loc[s, "term_offsets"], LANGUAGES["en"].mask).split())
             for s in sentences["sentence"]]
    forms = [tuple(f) for f in sentences["forms"]]
    expected = axes.measure(embedder.encode(texts), texts, forms)[:, OUTPUT_COLUMNS.index(STIGMA_COLUMN)]
    np.testing.assert_allclose(sentences[STIGMA_COLUMN].to_numpy(), expected, atol=1e-5)
    slang = np.array(["slang" in f for f in forms])
    assert slang.any() and (~slang).any()
    assert sentences.loc[slang, STIGMA_COLUMN].min() > sentences.loc[~slang, STIGMA_COLUMN].max()
    assert SCMAxes.load(forms_axes).stigma_forms_ == FORMS
