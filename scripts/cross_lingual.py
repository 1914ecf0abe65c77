"""Cross-lingual consistency of two audits of a parallel corpus (e.g. CodiEsp in Spanish and in English).

Per document (documents with illness sentences in both audits): the mean warmth and mean competence of its
scored sentences in each language, and their Pearson and Spearman correlations, for all sentences and per
illness type. Then the mental - physical differences of each audit side by side, and the AQ-27 BIAS-map
differences per dimension.

    python scripts/cross_lingual.py OUTDIR_ES OUTDIR_EN [--json FILE]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd
from scipy import stats

SCORES = ("warmth", "competence")


def document_means(outdir: Path, illness_type: str | None) -> pd.DataFrame:
    frame = pd.read_parquet(outdir / "sentences.parquet")
    if illness_type is not None:
        frame = frame[frame["illness_type"] == illness_type]
    return frame.groupby("doc_id")[list(SCORES)].mean()


def correlations(a: Path, b: Path) -> dict[str, dict[str, float]]:
    result = {}
    for illness_type in (None, "mental", "physical"):
        joined = document_means(a, illness_type).join(document_means(b, illness_type), lsuffix="_a", rsuffix="_b",
                                                      how="inner")
        entry = {"documents": len(joined)}
        for score in SCORES:
            x, y = joined[f"{score}_a"], joined[f"{score}_b"]
            entry[f"{score}_pearson"] = float(stats.pearsonr(x, y).statistic) if len(joined) > 2 else float("nan")
            entry[f"{score}_spearman"] = float(stats.spearmanr(x, y).statistic) if len(joined) > 2 else float("nan")
        result[illness_type or "all"] = entry
    return result


def gaps(outdir: Path) -> dict[str, object]:
    summary = json.loads((outdir / "summary.json").read_text(encoding="utf-8"))
    analysis = summary["analysis"]
    aq27 = pd.read_csv(outdir / "aq27.csv")
    return {
        "model_id": summary["score"]["model_id"],
        "n_by_type": analysis["n_by_type"],
        **{f"{score}_mental_minus_physical": analysis["comparisons"][score]["mean_difference"] for score in SCORES},
        **{f"{score}_rank_biserial": analysis["comparisons"][score]["rank_biserial"] for score in SCORES},
        "aq27_difference": dict(zip(aq27["dimension"], aq27["difference"])),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("audit_a", type=Path)
    parser.add_argument("audit_b", type=Path)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    report = {"correlations": correlations(args.audit_a, args.audit_b),
              "a": gaps(args.audit_a), "b": gaps(args.audit_b)}
    dims = list(report["a"]["aq27_difference"])
    aq_a = [report["a"]["aq27_difference"][d] for d in dims]
    aq_b = [report["b"]["aq27_difference"][d] for d in dims]
    report["aq27_difference_pearson"] = float(stats.pearsonr(aq_a, aq_b).statistic)
    print(f"A = {args.audit_a} ({report['a']['model_id']}), B = {args.audit_b} ({report['b']['model_id']})")
    print(f"{'documents':<10}{'n':>6}{'warmth r':>10}{'rho':>7}{'competence r':>14}{'rho':>7}")
    for name, entry in report["correlations"].items():
        print(f"{name:<10}{entry['documents']:>6}{entry['warmth_pearson']:>10.2f}{entry['warmth_spearman']:>7.2f}"
              f"{entry['competence_pearson']:>14.2f}{entry['competence_spearman']:>7.2f}")
    for score in SCORES:
        print(f"{score} mental - physical: A {report['a'][f'{score}_mental_minus_physical']:+.3f} "
              f"(r_rb {report['a'][f'{score}_rank_biserial']:+.2f}), "
              f"B {report['b'][f'{score}_mental_minus_physical']:+.3f} (r_rb {report['b'][f'{score}_rank_biserial']:+.2f})")
    print("AQ-27 mental - physical share: " + ", ".join(f"{d} {a:+.2f}/{b:+.2f}" for d, a, b in zip(dims, aq_a, aq_b)))
    print(f"AQ-27 differences, Pearson r between A and B over the nine dimensions: {report['aq27_difference_pearson']:.2f}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
