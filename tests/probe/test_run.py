"""The probe contract and its one runner: stages skipped when up to date, resumed after a failure, the report
skipped only when nothing before it ran; every registered probe fulfils the contract."""

from __future__ import annotations

import dataclasses
import inspect

import pandas as pd
import pytest

from corpus_audit.cli import main
from corpus_audit.probe.folder import ProbeFolder, ProbeOutputError, ProbeSummary
from corpus_audit.probe.probes import PROBES, probe_class
from corpus_audit.probe.run import Probe, ProbeRun, run_probe


@dataclasses.dataclass
class CountOptions:
    model: str
    lang: str = "en"
    words: int = 3
    device: str = "cpu"  # where it runs: not recorded


class CountProbe(Probe[CountOptions]):
    """A probe with one table stage and a report, counting how often each stage's work ran."""

    options_type = CountOptions
    name = "aq27"  # rendered with a registered probe's page
    title = "Counting probe"
    figures: dict[str, str] = {}  # noqa: RUF012
    work_done: list[str] = []  # noqa: RUF012
    fail = False

    def stages(self, run: ProbeRun) -> ProbeSummary:
        def count() -> pd.DataFrame:
            self.work_done.append("count")
            if self.fail:
                raise RuntimeError("interrupted")
            return pd.DataFrame({"word": [f"w{i}" for i in range(self.options.words)]})

        table = run.table_stage("count", {"words": self.options.words}, run.folder.scores, count)

        def make() -> ProbeSummary:
            self.work_done.append("report")
            return ProbeSummary("aq27", "m", "en", self.recorded_options(), {"words": len(table)})

        return run.report({"words": self.options.words}, [], make)


def _run(tmp_path, words, messages):
    return run_probe(CountProbe(CountOptions("m", words=words)), tmp_path / "out", log=messages.append)


def test_the_runner_skips_what_is_up_to_date_and_reruns_what_changed(tmp_path, monkeypatch):
    monkeypatch.setattr(CountProbe, "work_done", [])
    monkeypatch.setattr("corpus_audit.probe.report.render_report", lambda folder, summary, probe: "page")
    first, second, third = [], [], []
    summary = _run(tmp_path, 3, first)
    assert summary.results == {"words": 3} and set(summary.seconds) == {"count", "report"}
    assert summary.options == {"model": "m", "lang": "en", "words": 3}  # device is where it ran, not what
    assert _run(tmp_path, 3, second).results == {"words": 3}
    assert "count: up to date, skipped" in second and "report: up to date, skipped" in second
    _run(tmp_path, 4, third)
    assert not any("skipped" in message for message in third)
    assert CountProbe.work_done == ["count", "report", "count", "report"]
    assert len(pd.read_parquet(ProbeFolder(tmp_path / "out").scores)) == 4


def test_a_failed_stage_is_not_marked_done(tmp_path, monkeypatch):
    monkeypatch.setattr(CountProbe, "work_done", [])
    monkeypatch.setattr("corpus_audit.probe.report.render_report", lambda folder, summary, probe: "page")
    monkeypatch.setattr(CountProbe, "fail", True)
    with pytest.raises(RuntimeError):
        _run(tmp_path, 2, [])
    assert not ProbeFolder(tmp_path / "out").summary.exists()
    monkeypatch.setattr(CountProbe, "fail", False)
    messages = []
    _run(tmp_path, 2, messages)  # the same inputs: the stage runs again, nothing is skipped
    assert not any("skipped" in message for message in messages)
    assert CountProbe.work_done == ["count", "count", "report"]


@pytest.mark.parametrize("name", sorted(PROBES))
def test_every_probe_fulfils_the_contract(name):
    probe = PROBES[name]
    assert probe.name == name and probe.title and dataclasses.is_dataclass(probe.options_type)
    for method in ("stages", "section"):
        assert getattr(probe, method) is not getattr(Probe, method), f"{name} does not implement {method}"
    assert {"model", "lang"} <= {field.name for field in dataclasses.fields(probe.options_type)}
    assert name in main.commands["probe"].commands  # one command per probe, by its name
    assert "progress" not in inspect.signature(probe.options_type).parameters  # the CLI keeps its own


def test_an_unknown_probe_in_a_summary_is_named(tmp_path):
    with pytest.raises(ProbeOutputError, match="probe 'bogus' is none of aq27"):
        probe_class("bogus", tmp_path / "summary.json")
