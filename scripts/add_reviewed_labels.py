"""For maintainers: add the sentences reviewers labelled in Label Studio to the package's own labelled data of the
stigma heads (``templates/<lang>/stigma_labelled.csv``), with their source recorded (corpus, licence, reviewer,
export), then retrain the shipped heads (docs/api.md, "Review in Label Studio"). A user who wants a score fitted to
their own corpus runs ``corpus-audit axes refit`` instead, which changes nothing of the package.

    python scripts/add_reviewed_labels.py export.json --lang en --corpus reddit_mh_27subs_en \\
        --licence "Apache-2.0 (construct-tracker; Reddit Mental Health Dataset, Low et al. 2020)"
    python scripts/build_stigma_labelled.py --refresh   # the split by near-duplicate cluster
    corpus-audit axes train --lang en

Only real sentences from corpora whose licence allows it belong there: ``--licence`` is required and recorded.
Sentences already labelled, disagreeing reviewers and answers the guideline does not allow are left out, counted.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from corpus_audit.audit.label_studio import labelled_rows, read_review
from corpus_audit.common.atomic import atomic_path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("export", type=Path, help="a Label Studio export (JSON or JSON-MIN)")
    parser.add_argument("--lang", required=True, choices=("en", "es"))
    parser.add_argument("--corpus", required=True, help="the corpus the sentences come from (recorded)")
    parser.add_argument("--licence", required=True, help="the corpus's licence and attribution (recorded)")
    parser.add_argument("--labelled", type=Path, default=None,
                        help="the labelled data to extend (default: templates/<lang>/stigma_labelled.csv)")
    args = parser.parse_args()
    path = args.labelled or ROOT / "templates" / args.lang / "stigma_labelled.csv"
    labelled = pd.read_csv(path, dtype=str, keep_default_na=False)
    rows, skipped = labelled_rows(read_review(args.export), args.lang, args.corpus, args.licence, labelled)
    with atomic_path(path) as tmp:
        pd.concat([labelled, rows], ignore_index=True).to_csv(tmp, index=False)
    print(f"added {len(rows)} reviewed sentence(s) to {path}"
          + "".join(f"\n  left out {count}: {reason}" for reason, count in skipped.items()))


if __name__ == "__main__":
    main()
