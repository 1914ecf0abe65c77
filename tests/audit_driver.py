"""Run the corpus-audit CLI in a child process, with controls on its score stage for the tests.

Controls, as JSON in the environment variable AUDIT_DRIVER:
- ``chunk``: sentences per saved score chunk (small, so that a small corpus makes several chunks);
- ``kill_after``: SIGKILL this process when it is about to score that chunk (0: before the first one), so
  that a test interrupts the audit at a known point without any hook in the product;
- ``pause``: ``{"reached": FILE, "go": FILE}``: before scoring the first chunk, create FILE ``reached`` and
  wait until FILE ``go`` exists (two audits are then known to run at the same time).

    AUDIT_DRIVER='{"chunk": 16, "kill_after": 2}' python tests/audit_driver.py audit CORPUS ...
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

PAUSE_LIMIT_SECONDS = 300


def main() -> None:
    from corpus_audit.audit.score_parts import ScoreParts
    from corpus_audit.score import scorer as scoring
    from corpus_audit.cli import main as cli

    controls = json.loads(os.environ.get("AUDIT_DRIVER", "{}"))
    ScoreParts.chunk = controls.get("chunk", ScoreParts.chunk)
    score_texts = scoring.score_texts
    calls = 0

    def controlled(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        if controls.get("kill_after") == calls:
            os.kill(os.getpid(), signal.SIGKILL)
        pause = controls.get("pause")
        if pause and calls == 0:
            Path(pause["reached"]).touch()
            deadline = time.monotonic() + PAUSE_LIMIT_SECONDS
            while not Path(pause["go"]).exists():
                if time.monotonic() > deadline:
                    sys.exit("audit_driver: no go file after the pause limit")
                time.sleep(0.05)
        calls += 1
        return score_texts(*args, **kwargs)

    scoring.score_texts = controlled  # LocalScorer looks it up in its module when it scores
    cli(sys.argv[1:])


if __name__ == "__main__":
    main()
