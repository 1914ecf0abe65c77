"""How much does masking the illness mention change the mental-physical gap? (issue 4, --mask-terms)

Audits each corpus twice, with and without --mask-terms, and prints the mental - physical difference in
mean warmth and mean competence (with 95% bootstrap CIs) for both runs.

    python scripts/mask_terms_gap.py OUTROOT CORPUS.jsonl.gz [CORPUS.jsonl.gz ...]
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def main() -> None:
    outroot, corpora = Path(sys.argv[1]), sys.argv[2:]
    print(f"{'corpus':<36}{'masked':>7}{'n mental':>9}{'n phys':>7}  warmth gap [CI]            competence gap [CI]")
    for corpus in corpora:
        for masked in (False, True):
            outdir = outroot / (Path(corpus).name.split(".")[0] + ("-masked" if masked else ""))
            command = ["corpus-audit", "audit", corpus, "--lang", "en", "-o", str(outdir)]
            subprocess.run(command + ["--mask-terms" if masked else "--no-mask-terms"], check=True, capture_output=True)
            analysis = json.loads((outdir / "summary.json").read_text())["analysis"]
            cells = []
            for score in ("warmth", "competence"):
                c = analysis["comparisons"][score]
                low, high = c["mean_difference_ci"]
                cells.append(f"{c['mean_difference']:+.3f} [{low:+.3f}, {high:+.3f}]")
            n = analysis["comparisons"]["warmth"]
            print(f"{Path(corpus).name:<36}{str(masked):>7}{n['n_a']:>9}{n['n_b']:>7}  {cells[0]:<27}{cells[1]}")


if __name__ == "__main__":
    main()
