"""Render OUTDIR/report.html in headless Chromium, save a screenshot, and fail on console errors.

Usage: python scripts/check_report.py OUTDIR [--screenshot PATH] [--chromium PATH]

The report has no scripts and must load nothing from the network, so any console message (a script error,
a resource that failed to load, a blocked request) means it is broken: the check prints those lines and
exits 1. Needs Debian's chromium (``apt-get install -y chromium``). Exit codes: 0 ok, 1 console errors or
no screenshot, 2 missing report or browser.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
#: Chromium prints page console messages (with --enable-logging=stderr) on lines containing these markers.
CONSOLE_MARKERS = ("CONSOLE", "Uncaught")
#: Tall enough to capture most of the report in one screenshot.
WINDOW_SIZE = "1280,4000"
TIMEOUT_S = 120


def render(report: Path, screenshot: Path, chromium: str = CHROMIUM) -> list[str]:
    """Screenshot ``report`` into ``screenshot``; return the console lines of Chromium's log."""
    with tempfile.TemporaryDirectory(prefix="check-report-") as profile:
        # A fresh profile, no network side traffic (updates, sync, QUIC probing): the page is the only load.
        command = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                   "--disable-background-networking", "--disable-component-update", "--disable-sync",
                   f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0",
                   f"--screenshot={screenshot}", f"--window-size={WINDOW_SIZE}", report.resolve().as_uri()]
        completed = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    return [line for line in completed.stderr.splitlines() if any(marker in line for marker in CONSOLE_MARKERS)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("outdir", type=Path, help="Audit folder holding report.html")
    parser.add_argument("--screenshot", type=Path, default=None,
                        help="Where to save the PNG (default: OUTDIR/report_screenshot.png)")
    parser.add_argument("--chromium", default=CHROMIUM, help=f"Chromium executable (default {CHROMIUM})")
    args = parser.parse_args(argv)
    report = args.outdir / "report.html"
    if not report.is_file():
        print(f"{report} not found: run corpus-audit report {args.outdir} first", file=sys.stderr)
        return 2
    if not Path(args.chromium).is_file():
        print(f"{args.chromium} not found: apt-get install -y chromium", file=sys.stderr)
        return 2
    screenshot = (args.screenshot or args.outdir / "report_screenshot.png").resolve()
    screenshot.unlink(missing_ok=True)  # so that a stale screenshot cannot pass for a fresh one
    errors = render(report, screenshot, args.chromium)
    for line in errors:
        print(f"console: {line}", file=sys.stderr)
    if not screenshot.is_file() or screenshot.stat().st_size == 0:
        print(f"chromium wrote no screenshot to {screenshot}", file=sys.stderr)
        return 1
    print(f"screenshot: {screenshot}; console errors: {len(errors) or 'none'}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
