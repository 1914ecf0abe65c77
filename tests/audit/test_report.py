"""The HTML report and the plot/report commands, on a small synthetic audit folder (no embedding model)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from corpus_audit.audit.analysis import analyse
from corpus_audit.audit.figures import analyse_and_write_figures
from corpus_audit.audit.folder import FIGURES, AuditFolder
from corpus_audit.stigma.bias_map import load_bias_map
from corpus_audit.stigma.quadrants import quadrant_of
from corpus_audit.cli import main
from corpus_audit.audit.report import measured_validity, quadrant_examples, write_report

SCRIPT = "<script>alert('x')</script>"
CHROMIUM = Path("/usr/bin/chromium")
CHECK_SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "check_report.py"


def _sentences() -> pd.DataFrame:
    """40 mental and 8 physical sentences (physical < MIN_GROUP_SIZE: the report must warn), one with markup."""
    rng = np.random.default_rng(0)
    rows = []
    for i in range(48):
        illness, kind = (("depression", "mental") if i % 2 else ("anxiety", "mental")) if i < 40 else ("asthma", "physical")
        rows.append({"doc_id": f"doc-{i}", "sentence_index": 0, "sentence": f"Sentence {i} about {illness}.",
                     "terms": [illness], "illnesses": [illness], "illness_type": kind})
    rows[0]["sentence"] = f"My anxiety {SCRIPT} is bad & worse."
    frame = pd.DataFrame(rows)
    scores = rng.uniform(-0.95, 0.95, size=(len(frame), 2)).astype("float32")
    scores[0] = (0.5, 0.5)  # the centre of warm-competent: the marked-up sentence is always shown as typical
    frame["warmth"], frame["competence"] = scores[:, 0], scores[:, 1]
    frame["quadrant"] = quadrant_of(frame["warmth"].to_numpy(), frame["competence"].to_numpy())
    return frame


@pytest.fixture(scope="module")
def audit_dir(tmp_path_factory) -> Path:
    """An audit folder as ``run_audit`` leaves it: sentences.parquet, summary.json and the figures."""
    outdir = tmp_path_factory.mktemp("audit")
    sentences = _sentences()
    sentences.to_parquet(outdir / "sentences.parquet", index=False)
    result = analyse(sentences, seed=0)
    summary = {
        "corpus": {"inputs": ["corpus.jsonl"], "hf_dataset": None},
        "options": {"lang": "en", "model": None, "axes_path": None, "seed": 0},
        "package_version": "test",
        "filter": {"documents_read": 100, "documents_matched": 48, "sentences_kept": 50,
                   "sentences_by_type": {"mental": 41, "physical": 9, "both": 0}},
        "score": {"model_id": "test-model", "duplicates_removed": 2, "sentences_scored": 48},
        "analysis": result.to_dict(),
    }
    (outdir / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    result.bias_map.to_csv(outdir / "aq27.csv", index=False)
    analyse_and_write_figures(sentences, lambda: result, AuditFolder(outdir))
    write_report(AuditFolder(outdir))
    return outdir


@pytest.fixture()
def audit_copy(audit_dir, tmp_path) -> Path:
    """A private copy for tests that rewrite files."""
    return Path(shutil.copytree(audit_dir, tmp_path / "audit"))


def test_report_is_self_contained_and_complete(audit_dir):
    text = (audit_dir / "report.html").read_text(encoding="utf-8")
    assert 'src="http' not in text and 'href="http' not in text and "<link" not in text
    assert text.count('src="data:image/png;base64,') == len(FIGURES)
    for stem in FIGURES:
        assert f'id="fig-{stem}"' in text
    for dimension in load_bias_map():
        assert f"<td>{dimension.dimension}</td>" in text
    assert "Mann–Whitney p" in text and "energy statistic" in text and "Holm p" in text
    assert "duplicate sentences removed" in text


def test_report_escapes_sentences(audit_dir):
    text = (audit_dir / "report.html").read_text(encoding="utf-8")
    assert "<script" not in text
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in text
    assert "is bad &amp; worse." in text


def test_report_shows_warnings_and_unmeasured_validity(audit_dir):
    text = (audit_dir / "report.html").read_text(encoding="utf-8")
    assert 'class="warnings"' in text
    assert "physical: only 8 sentences" in text
    # 8 physical sentences: their shares and differences say "too few", not an interval that looks certain
    assert "too few (n = 8)" in text
    assert "No validity was measured for this model (test-model, en, recipe ?)" in text
    assert "corpus-audit axes evaluate --lang en --model M" in text


#: The default English embedder: MiniLM with its shipped stance branch (corpus_audit/axes/en-stance-minilm.safetensors).
DEFAULT_WEIGHTS = "all-MiniLM-L6-v2+stance-en@3098004e5b9c"


def test_validity_is_shipped_for_the_default_model():
    record = measured_validity(f"sentence-transformers:{DEFAULT_WEIGHTS}", "en", "default")
    assert record is not None
    assert set(record["cross_validation_mean"]) == {"basic", "negation", "composition", "syntax"}
    assert measured_validity("test-model", "en", "default") is None
    # the default backend runs the same weights through onnxruntime: the same record, with the stigma score's
    onnx = measured_validity(f"onnxruntime-fp32:{DEFAULT_WEIGHTS}", "en", "default")
    assert onnx == record and onnx["stigma"]["n"] > 0
    assert measured_validity("onnxruntime-fp32:all-MiniLM-L6-v2+stance-en@000000000000", "en", "default") is None
    # the frozen embedding without the branch is another embedding: the record does not hold for it
    assert measured_validity("onnxruntime-fp32:all-MiniLM-L6-v2@2c705a5e3279", "en", "default") is None


def test_the_validity_section_shows_the_stigma_score_or_says_it_is_unmeasured():
    from corpus_audit.audit.report import _stigma_validity

    record = measured_validity(f"sentence-transformers:{DEFAULT_WEIGHTS}", "en", "default")
    shown = _stigma_validity(record["stigma"])
    assert f"{record['stigma']['auc']:.3f}" in shown and "held-out real sentences" in shown
    assert "precision of the top 20" in shown and "within the corpus" in shown
    gate = record["stigma"]["gate"]  # the gate on the same held-out sentences, shown beside the stigma score
    assert f"judgements about people ({gate['n_judgements']})" in shown and f"{gate['judgement_auc']:.3f}" in shown
    assert "not measured on held-out real sentences" in _stigma_validity(None)


def test_validity_is_found_for_every_shipped_model_on_every_backend_with_its_embeddings():
    from corpus_audit.common.resources import SHIPPED_AXES_DIR
    from corpus_audit.embed.base import SAME_EMBEDDINGS_BACKENDS
    from corpus_audit.scm.store import read_metadata

    shipped = sorted(SHIPPED_AXES_DIR.glob("*.npz"))
    assert shipped
    for path in shipped:
        metadata = read_metadata(path)
        backend, _, weights = metadata["embedder_id"].partition(":")
        backends = SAME_EMBEDDINGS_BACKENDS if backend in SAME_EMBEDDINGS_BACKENDS else {backend}
        for other in backends:
            record = measured_validity(f"{other}:{weights}", metadata["lang"], metadata["recipe"]["name"])
            assert record is not None, (path.name, other)
    assert measured_validity("onnxruntime-fp32:all-MiniLM-L6-v2@000000000000", "en", "default") is None


def test_report_of_the_default_onnx_backend_shows_the_validity(audit_copy):
    summary = json.loads((audit_copy / "summary.json").read_text())
    summary["score"]["model_id"] = f"onnxruntime-fp32:{DEFAULT_WEIGHTS}"  # what `audit` records by default
    (audit_copy / "summary.json").write_text(json.dumps(summary))
    result = CliRunner().invoke(main, ["report", str(audit_copy)])
    assert result.exit_code == 0, result.output
    text = (audit_copy / "report.html").read_text(encoding="utf-8")
    assert "Measured functional accuracy of these axes" in text and "No validity was measured" not in text


def test_report_of_an_int8_run_shows_the_stigma_measures_taken_in_int8(audit_copy):
    from corpus_audit.audit.report import _precision_note, _run_precision

    summary = json.loads((audit_copy / "summary.json").read_text())
    summary["score"]["model_id"] = f"onnxruntime-int8:{DEFAULT_WEIGHTS}"  # what `audit --backend onnx-int8` records
    (audit_copy / "summary.json").write_text(json.dumps(summary))
    result = CliRunner().invoke(main, ["report", str(audit_copy)])
    assert result.exit_code == 0, result.output
    text = (audit_copy / "report.html").read_text(encoding="utf-8")
    record = measured_validity(f"onnxruntime-fp32:{DEFAULT_WEIGHTS}", "en", "default")
    int8 = record["int8"]
    assert "This audit ran the encoder with int8 weights" in text and "Measured functional accuracy" in text
    low, high = int8["stigma"]["auc_ci95"]
    assert f"{int8['stigma']['auc']:.3f} ({low:.3f}–{high:.3f})" in text
    assert f"{int8['agreement']['mean_abs_difference']['stigma']:.3f} on average" in text
    # an fp32 run shows the fp32 measures and no note; an int8 run of axes never measured in int8 says so
    assert _run_precision(f"onnxruntime-fp32:{DEFAULT_WEIGHTS}", record) is record
    assert _precision_note(f"onnxruntime-fp32:{DEFAULT_WEIGHTS}", record) == ""
    unmeasured = {key: value for key, value in record.items() if key != "int8"}
    assert _run_precision(f"onnxruntime-int8:{DEFAULT_WEIGHTS}", unmeasured) == {}
    assert "never measured" in _precision_note(f"onnxruntime-int8:{DEFAULT_WEIGHTS}", unmeasured)


def test_every_shipped_model_run_on_onnxruntime_has_its_int8_measures():
    from corpus_audit.common.resources import SHIPPED_AXES_DIR
    from corpus_audit.embed.base import quantises

    for path in sorted(SHIPPED_AXES_DIR.glob("*.validity.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        if not record["embedder_id"].startswith("onnxruntime-fp32:"):
            assert "int8" not in record, path.name
            continue
        int8 = record["int8"]
        assert quantises(record["embedder_id"], int8["embedder_id"]), path.name
        assert int8["stigma"]["n"] == record["stigma"]["n"] == int8["agreement"]["n"]
        assert abs(int8["stigma"]["auc"] - record["stigma"]["auc"]) < 0.02, path.name


def test_quadrant_examples_are_central_then_extreme():
    sentences = _sentences()
    central, extreme = quadrant_examples(sentences, "mental", "warm-competent")
    assert len(central) == 3 and len(extreme) == 3
    assert set(central.index).isdisjoint(extreme.index)
    assert (central["warmth"] >= 0).all() and (central["competence"] >= 0).all()
    distance = np.hypot(central["warmth"] - 0.5, central["competence"] - 0.5)
    assert list(distance) == sorted(distance)
    norms = np.hypot(extreme["warmth"], extreme["competence"])
    assert list(norms) == sorted(norms, reverse=True)


def _age(path: Path) -> int:
    """Set ``path``'s mtime an hour back, so that any rewrite shows; return the old mtime."""
    old = path.stat().st_mtime_ns - 3600 * 10**9
    os.utime(path, ns=(old, old))
    return old


def test_report_command_rebuilds_report_and_missing_figures(audit_copy):
    old = _age(audit_copy / "report.html")
    (audit_copy / "aq27.png").unlink()
    result = CliRunner().invoke(main, ["report", str(audit_copy)])
    assert result.exit_code == 0, result.output
    assert (audit_copy / "report.html").stat().st_mtime_ns != old
    assert (audit_copy / "aq27.png").is_file()


def test_plot_command_rebuilds_figures(audit_copy):
    old = {stem: _age(audit_copy / f"{stem}.png") for stem in FIGURES}
    result = CliRunner().invoke(main, ["plot", str(audit_copy)])
    assert result.exit_code == 0, result.output
    assert all((audit_copy / f"{stem}.png").stat().st_mtime_ns != old[stem] for stem in FIGURES)
    assert not any((audit_copy / f"{stem}.svg").exists() for stem in FIGURES)
    result = CliRunner().invoke(main, ["plot", str(audit_copy), "--svg"])
    assert result.exit_code == 0, result.output
    assert all("<svg" in (audit_copy / f"{stem}.svg").read_text() for stem in FIGURES)


@pytest.mark.parametrize("command", ["report", "plot"])
def test_commands_fail_clearly_without_an_audit(command, tmp_path):
    result = CliRunner().invoke(main, [command, str(tmp_path)])
    assert result.exit_code != 0
    assert "run corpus-audit audit first" in result.output
    assert not (tmp_path / "report.html").exists()


@pytest.mark.skipif(not CHROMIUM.is_file(), reason="needs Debian chromium at /usr/bin/chromium")
def test_report_renders_in_chromium_without_console_errors(audit_copy):
    completed = subprocess.run([sys.executable, str(CHECK_SCRIPT), str(audit_copy)], capture_output=True,
                               text=True, timeout=180, check=False)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "console errors: none" in completed.stdout
    assert (audit_copy / "report_screenshot.png").stat().st_size > 0


def test_report_counts_mentions_per_form_and_names_the_term_set(audit_copy):
    text = (audit_copy / "report.html").read_text(encoding="utf-8")
    assert "Term set: <b>paper</b>" in text  # an audit from before the term sets used the paper's terms
    summary = json.loads((audit_copy / "summary.json").read_text(encoding="utf-8"))
    summary["filter"].update(terms="extended", mentions_by_form={"diagnosis": {"mental": 30, "physical": 9},
                                                                 "slang": {"mental": 11, "physical": 0}})
    (audit_copy / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    write_report(AuditFolder(audit_copy))
    text = (audit_copy / "report.html").read_text(encoding="utf-8")
    assert "Term set: <b>extended</b>" in text
    assert '<td>slang</td><td class="num">11</td><td class="num">0</td><td class="num">22.0%</td>' in text


@pytest.mark.skipif(not CHROMIUM.is_file(), reason="needs Debian chromium at /usr/bin/chromium")
def test_documents_table_fits_the_page_width(audit_copy, tmp_path):
    """Long document ids, keep-field values and unbroken words (URLs) wrap inside their cells: rendered 1280 px wide,
    the page scrolls no wider than the window."""
    long_url = "https://example.org/" + "y" * 150
    documents = pd.DataFrame([{"rank": rank, "doc_id": f"doc-{rank}-" + "0123456789abcdef" * 4,
                               "permalink": "https://www.reddit.com/r/x/comments/" + "z" * 60,
                               "stigma_score": 0.9, "top_sentence": f"see {long_url} about depression",
                               "top_sentence_index": 0, "top_category": "judgement", "top_dimension": "Blame",
                               "n_sentences": 2, "n_scored": 2, "n_mental": 2, "n_physical": 0, "n_judgements": 1,
                               "illnesses": "depression"} for rank in range(1, 6)])
    documents.to_parquet(audit_copy / "documents.parquet", index=False)
    write_report(AuditFolder(audit_copy))
    probe = ("<script>document.body.setAttribute('data-width', document.documentElement.scrollWidth + 'x' + "
             "window.innerWidth)</script></body>")
    page = tmp_path / "probe.html"
    page.write_text((audit_copy / "report.html").read_text(encoding="utf-8").replace("</body>", probe))
    dom = subprocess.run([str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                          f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1280,800", "--dump-dom",
                          page.as_uri()], capture_output=True, text=True, timeout=120, check=False).stdout
    scroll, window = map(int, re.search(r'data-width="(\d+)x(\d+)"', dom).groups())
    # the URL is all there, with zero-width spaces where it may wrap (common/html.py, soft_wrap)
    assert long_url in dom.replace("\u200b", "").replace("&#8203;", "") and long_url not in dom
    assert scroll <= window
