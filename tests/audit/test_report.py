"""The HTML report and the plot/report commands, on a small synthetic audit folder (no embedding model)."""

from __future__ import annotations

import json
import os
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
    assert "not measured — run corpus-audit axes evaluate" in text


def test_validity_is_shipped_for_the_default_model():
    record = measured_validity("sentence-transformers:all-MiniLM-L6-v2@2c705a5e3279", "en", "default")
    assert record is not None
    assert set(record["cross_validation_mean"]) == {"basic", "negation", "composition", "syntax"}
    assert measured_validity("test-model", "en", "default") is None
    # the default backend runs the same weights through onnxruntime: the same record, with the stigma score's
    onnx = measured_validity("onnxruntime-fp32:all-MiniLM-L6-v2@2c705a5e3279", "en", "default")
    assert onnx == record and onnx["stigma"]["n"] > 0
    assert measured_validity("onnxruntime-fp32:all-MiniLM-L6-v2@000000000000", "en", "default") is None


def test_the_validity_section_shows_the_stigma_score_or_says_it_is_unmeasured():
    from corpus_audit.audit.report import _stigma_validity

    record = measured_validity("sentence-transformers:all-MiniLM-L6-v2@2c705a5e3279", "en", "default")
    shown = _stigma_validity(record["stigma"])
    assert f"{record['stigma']['auc']:.3f}" in shown and "held-out real sentences" in shown
    assert "precision of the top 20" in shown and "within the corpus" in shown
    assert "not measured on held-out real sentences" in _stigma_validity(None)


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
