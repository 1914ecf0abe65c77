"""Cross-lingual consistency of audits of a parallel corpus (e.g. CodiEsp in Spanish and in English): the
command line of :mod:`corpus_audit.audit.cross_lingual`, where the analysis and its description live.

    python scripts/cross_lingual.py OUTDIR_A OUTDIR_B [OUTDIR_B2 ...] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from corpus_audit.audit.cross_lingual import compare, format_report
from corpus_audit.common.jsonable import jsonable


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("audit_a", type=Path)
    parser.add_argument("audits_b", type=Path, nargs="+")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    report = compare(args.audit_a, args.audits_b)
    print(format_report(report))
    if args.json:
        args.json.write_text(json.dumps(jsonable(report), indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
