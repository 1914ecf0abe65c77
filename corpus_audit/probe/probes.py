"""Every probe by name (``summary.json``'s ``probe``): the one place that knows them all, for the report and the
command line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from corpus_audit.probe.folder import ProbeOutputError
from corpus_audit.probe.questionnaires.aq27 import AQ27Probe
from corpus_audit.probe.questionnaires.contextual import ContextualProbe
from corpus_audit.probe.questionnaires.gender import GenderProbe
from corpus_audit.probe.questionnaires.sentiment import SentimentProbe
from corpus_audit.probe.questionnaires.social_distance import SocialDistanceProbe
from corpus_audit.probe.run import Probe

PROBES: dict[str, type[Probe[Any]]] = {probe.name: probe for probe in (
    AQ27Probe, GenderProbe, SocialDistanceProbe, SentimentProbe, ContextualProbe)}


def probe_class(name: str, summary: Path) -> type[Probe[Any]]:
    """The probe called ``name``; :class:`ProbeOutputError` naming ``summary`` (where the name was read) if none."""
    if name not in PROBES:
        raise ProbeOutputError(summary, f"probe {name!r} is none of {', '.join(PROBES)}: made by another version?")
    return PROBES[name]
