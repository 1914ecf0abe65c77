"""The probe folder contract: its typed summary round-trips and a folder that is not a probe's is refused."""

from __future__ import annotations

import pytest

from corpus_audit.probe.folder import ProbeFolder, ProbeOutputError, ProbeSummary


def test_summary_round_trips(tmp_path):
    folder = ProbeFolder(tmp_path)
    summary = ProbeSummary("aq27", "hf:roberta-base@abc", "en", options={"metric": "within_word_l2r"},
                           results={"wilcoxon_p": 0.001}, package_version="0.1.0", seconds={"score": 1.5})
    folder.write_summary(summary)
    assert folder.read_summary() == summary
    assert {folder.scores.name, folder.report.name} == {"scores.parquet", "report.html"}


@pytest.mark.parametrize("content, reason", [(None, "missing"), ("{", "not valid JSON"), ("[]", "not a JSON object"),
                                             ('{"probe": "aq27", "lang": "en"}', "lacks model_id")])
def test_a_folder_that_is_not_a_probes_is_refused(tmp_path, content, reason):
    folder = ProbeFolder(tmp_path)
    if content is not None:
        folder.summary.write_text(content, encoding="utf-8")
    with pytest.raises(ProbeOutputError, match=reason) as info:
        folder.read_summary()
    assert info.value.path == folder.summary
