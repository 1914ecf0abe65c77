"""The probe contract and its one runner.

A probe is one :class:`Probe` object: its name and title, its options (a dataclass whose ``__post_init__`` refuses
options that do not go together, with :class:`~corpus_audit.probe.folder.ProbeOptionsError`), its figures, its
stages (:meth:`Probe.stages`: prompts put to a model, saved and checkpointed, then its analysis, tables, figures
and summary in the report stage, :meth:`ProbeRun.report`) and its section of ``report.html``
(:meth:`Probe.section`). :func:`run_probe` runs any of them
the same way: the output folder locked, stale temporaries removed, every stage skipped when its inputs and outputs
are unchanged ("NAME: up to date, skipped") or run and checkpointed, then the report stage, skipped when no stage
ran and its own inputs and outputs are unchanged. The registry of probes by name is
:mod:`corpus_audit.probe.probes`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from corpus_audit.common.atomic import atomic_path, check_output_location, folder_lock, remove_temporaries
from corpus_audit.common.checkpoints import Checkpoints
from corpus_audit.common.log import to_stderr
from corpus_audit.common.version import __version__
from corpus_audit.probe.folder import FIGURE_FORMATS, RUN_OPTIONS, ProbeFolder, ProbeSummary

if TYPE_CHECKING:
    import pandas as pd

Options = TypeVar("Options")
Result = TypeVar("Result")


@dataclass
class ProbeRun:
    """One run of ``probe`` in its folder: the checkpoints, the log, the seconds per stage, and whether a stage ran
    (a report made from a stage's new outputs is never skipped)."""

    probe: Probe[Any]
    folder: ProbeFolder
    checkpoints: Checkpoints
    log: Callable[[str], None]
    progress: bool = False
    seconds: dict[str, float] = field(default_factory=dict)
    ran: bool = False

    def stage(self, name: str, inputs: dict[str, Any], outputs: Sequence[Path], work: Callable[[], Result],
              load: Callable[[], Result | None]) -> Result:
        """The result of stage ``name``: ``load()`` of its saved ``outputs`` when they and ``inputs`` are unchanged
        (None from ``load``: what was saved does not suffice), else ``work()``, which writes ``outputs``
        atomically; the stage is then checkpointed and timed."""
        reason = self.checkpoints.fresh(name, inputs, *outputs)
        if reason is None:
            loaded = load()
            if loaded is not None:
                self.log(f"{name}: up to date, skipped")
                return loaded
            reason = "its saved results are incomplete"
        self.log(f"{name}: {reason}")
        started = time.perf_counter()
        result = work()
        self.checkpoints.mark(name, inputs, *outputs)
        self.seconds[name] = time.perf_counter() - started
        self.ran = True
        return result

    def table_stage(self, name: str, inputs: dict[str, Any], output: Path, work: Callable[[], pd.DataFrame]
                    ) -> pd.DataFrame:
        """:meth:`stage` of a stage whose one output is the Parquet table that ``work`` returns."""
        import pandas as pd

        def make() -> pd.DataFrame:
            table = work()
            with atomic_path(output) as tmp:
                table.to_parquet(tmp, index=False)
            return table

        return self.stage(name, inputs, [output], make, lambda: pd.read_parquet(output))

    def report(self, inputs: dict[str, Any], outputs: Sequence[Path], make: Callable[[], ProbeSummary]
               ) -> ProbeSummary:
        """The report stage: skipped (its page rewritten if missing) when no stage ran in this run and its inputs
        and ``outputs`` are unchanged; else the link made from the previous results is removed, ``make()`` writes
        the tables and figures and returns the summary, which is written with the seconds per stage, and the
        page."""
        from corpus_audit.probe.report import ensure_report, write_report

        inputs = {**inputs, "version": __version__}
        outputs = [self.folder.summary, *outputs]
        if not self.ran:
            reason = self.checkpoints.fresh("report", inputs, *outputs)
            if reason is None:
                self.log("report: up to date, skipped")
                return ensure_report(self.folder, type(self.probe))
            self.log(f"report: {reason}")
        started = time.perf_counter()
        self.folder.remove_link(self.log)
        summary = make()
        self.seconds["report"] = time.perf_counter() - started
        summary.seconds = dict(self.seconds)
        self.folder.write_summary(summary)
        write_report(self.folder, type(self.probe))
        self.checkpoints.mark("report", inputs, *outputs)
        return summary


class Probe(Generic[Options]):
    """The contract of a probe (module docstring). Subclasses set the class attributes and implement
    :meth:`stages` and :meth:`section`."""

    #: The name in ``summary.json`` (``probe``) and on the command line (``corpus-audit probe NAME``).
    name: ClassVar[str]
    #: The options' dataclass (its ``__post_init__`` raises ProbeOptionsError for options that do not go together).
    options_type: ClassVar[type]
    #: The report's title.
    title: ClassVar[str]
    #: Figures (stem -> caption), in report order; each is written as every one of FIGURE_FORMATS.
    figures: ClassVar[dict[str, str]] = {}
    #: How the per-illness measure (``illnesses.csv``'s ``mean_score``) goes with stigma: +1 when it rises with
    #: stigma, None when it has no stigma direction. ``link`` expects a colder corpus to go with a higher measure
    #: (a negative warmth correlation) only when it is +1.
    stigma_direction: ClassVar[int | None] = None

    def __init__(self, options: Options) -> None:
        self.options = options

    def figure_files(self, folder: ProbeFolder) -> list[Path]:
        return [folder.figure(stem, fmt) for stem in self.figures for fmt in FIGURE_FORMATS]

    def recorded_options(self, **extra: Any) -> dict[str, Any]:
        """The options for ``summary.json``: what was computed, not where it ran (``RUN_OPTIONS``)."""
        recorded = {name: value for name, value in asdict(self.options).items()  # type: ignore[call-overload]
                    if name not in RUN_OPTIONS}
        return {**recorded, **extra}

    def summary(self, model_id: str, results: dict[str, Any], **extra_options: Any) -> ProbeSummary:
        """The summary of this probe's run (seconds filled in by :meth:`ProbeRun.report`)."""
        return ProbeSummary(self.name, model_id, self.options.lang,  # type: ignore[attr-defined]
                            self.recorded_options(**extra_options), results, __version__)

    def prepare(self) -> None:
        """Read and check what the probe needs before the folder is locked (questionnaires); nothing by default."""

    def stages(self, run: ProbeRun) -> ProbeSummary:
        """Run the probe's stages with ``run.stage`` and end with ``run.report``; return the summary."""
        raise NotImplementedError

    @classmethod
    def header(cls, summary: ProbeSummary) -> str:
        """The top of ``report.html``: title and options."""
        from corpus_audit.probe.sections import header

        return header(summary, cls.title)

    @classmethod
    def section(cls, summary: ProbeSummary) -> str:
        """The HTML of the probe's results in ``report.html``; its figures follow, then the link's section."""
        raise NotImplementedError

    @classmethod
    def closing_section(cls, summary: ProbeSummary) -> str:
        """HTML after the link's section (long tables); none by default."""
        return ""


def run_probe(probe: Probe[Any], outdir: str | Path, log: Callable[[str], None] = to_stderr,
              progress: bool = False) -> ProbeSummary:
    """Run (or resume) ``probe`` into ``outdir``; return its summary."""
    folder = ProbeFolder(check_output_location(outdir))
    probe.prepare()
    with folder_lock(folder.path):
        remove_temporaries(folder.path)
        return probe.stages(ProbeRun(probe, folder, Checkpoints(folder.checkpoints, log), log, progress))
