"""EER + minDCF + AUC: interbias against scikit-learn roc_curve + brentq and SpeechBrain.

Peers, run on the same scores:
- ``sklearn+brentq``: the SVeritas/NeMo method (the sort-and-interpolate class): one
  ``roc_curve``, EER = ``brentq(lambda x: 1 − x − interp1d(fpr, tpr)(x), 0, 1)``, minDCF as
  the minimum cost over the ROC points, AUC = ``sklearn.metrics.auc(fpr, tpr)``.
- ``speechbrain``: ``speechbrain.utils.metric_stats.EER`` and ``minDCF`` (a Python loop over
  every threshold, and a thresholds × scores matrix), only at the sizes it can handle. Its EER
  is the nearest-point kind (interbias ``eer_legacy``); its minDCF is shown normalised.

Scores: half targets N(3, 1), half non-targets N(0, 1) (EER ≈ 6.7 %), rounded to float32 (ties, as cosine
scores of float32 embeddings have). Ratio = peer median / interbias median.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import numpy as np
from _common import fmt_s, machine, median_time, set_clock, table

from interbias.metrics import verification as metrics
from interbias.utils.seeding import derive_rng

#: SpeechBrain's minDCF repeats each side's scores once per threshold (≈ 2n thresholds ×
#: n/2 scores, float32) plus a bool matrix of the same shape: about 5·n² bytes at its peak.
SB_BYTES_PER_N2 = 5


def scores(n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = derive_rng("bench-metrics", n)
    lab = np.zeros(n, dtype=bool)
    lab[: n // 2] = True
    s = np.where(lab, rng.normal(3.0, 1.0, n), rng.normal(0.0, 1.0, n)).astype(np.float32).astype(np.float64)
    return s, lab


def interbias_all(s: np.ndarray, lab: np.ndarray) -> dict[str, float]:
    m = metrics.summarize(s, lab)
    return {k: m[k] for k in ("eer", "min_dcf", "auc", "eer_legacy")}


def sklearn_all(s: np.ndarray, lab: np.ndarray, p_target: float = 0.01) -> dict[str, float]:
    from scipy.interpolate import interp1d
    from scipy.optimize import brentq
    from sklearn.metrics import auc, roc_curve

    fpr, tpr, _ = roc_curve(lab, s)
    eer = brentq(lambda x: 1.0 - x - interp1d(fpr, tpr)(x), 0.0, 1.0)
    cost = p_target * (1 - tpr) + (1 - p_target) * fpr
    return {"eer": float(eer), "min_dcf": float(cost.min() / p_target), "auc": float(auc(fpr, tpr))}


def speechbrain_all(s: np.ndarray, lab: np.ndarray, *, with_min_dcf: bool) -> dict[str, float]:
    import torch
    from speechbrain.utils.metric_stats import EER, minDCF

    pos = torch.from_numpy(s[lab].astype(np.float32))  # exact: the scores are float32 values
    neg = torch.from_numpy(s[~lab].astype(np.float32))
    out = {"eer": EER(pos, neg)[0]}
    if with_min_dcf:
        # SpeechBrain returns the unnormalised cost; divide by min(C_miss·p, C_fa·(1 − p)) = 0.01
        out["min_dcf"] = minDCF(pos, neg, p_target=0.01)[0] / 0.01
    return out


def speechbrain_unavailable() -> str:
    """Empty when SpeechBrain imports, else why not (it needs a working torchaudio)."""
    try:
        import speechbrain.utils.metric_stats  # noqa: F401
    except Exception as exc:
        return f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
    return ""


def sb_min_dcf_bytes(n: int) -> int:
    return SB_BYTES_PER_N2 * n * n


def run(
    sizes: list[int], sb_sizes: list[int], reps: int, sb_reps: int, mem_limit: int, clock: str = "wall seconds"
) -> str:
    rows: list[list[Any]] = []
    sb_missing = speechbrain_unavailable()
    for n in sorted(set(sizes) | set(sb_sizes)):
        s, lab = scores(n)
        t_ib, ib = median_time(lambda s=s, lab=lab: interbias_all(s, lab), reps)
        rows.append(
            [
                f"{n:.0e}",
                "interbias (EER+minDCF+AUC)",
                fmt_s(t_ib),
                "1.0",
                f"{ib['eer']:.6f}",
                "—",
                f"{ib['min_dcf']:.5f}",
            ]
        )
        if n in sizes:
            t_sk, sk = median_time(lambda s=s, lab=lab: sklearn_all(s, lab), reps)
            rows.append(
                [
                    "",
                    "sklearn roc_curve+brentq",
                    fmt_s(t_sk),
                    f"{t_sk / t_ib:.1f}",
                    f"{sk['eer']:.6f}",
                    f"{sk['eer'] - ib['eer']:+.1e}",
                    f"{sk['min_dcf']:.5f}",
                ]
            )
        if n in sb_sizes and sb_missing:
            rows.append(["", f"speechbrain: unavailable ({sb_missing})", "—", "—", "—", "—", "—"])
        elif n in sb_sizes:
            dcf = sb_min_dcf_bytes(n) <= mem_limit
            t_sb, sb = median_time(
                lambda s=s, lab=lab, dcf=dcf: speechbrain_all(s, lab, with_min_dcf=dcf), sb_reps, warmup=False
            )
            what = "speechbrain EER+minDCF" if dcf else "speechbrain EER only"
            note = "" if dcf else f" (minDCF not run: needs {sb_min_dcf_bytes(n) / 2**30:.0f} GiB)"
            rows.append(
                [
                    "",
                    what + note,
                    fmt_s(t_sb),
                    f"{t_sb / t_ib:.0f}" + ("" if dcf else " (EER alone)"),
                    f"{sb['eer']:.6f}",
                    f"{sb['eer'] - ib['eer']:+.1e} (legacy {sb['eer'] - ib['eer_legacy']:+.1e})",
                    f"{sb['min_dcf']:.5f}" if dcf else "—",
                ]
            )
    return table(
        f"Metrics: EER + minDCF + AUC (median of {reps}; SpeechBrain {sb_reps}; {clock})",
        ["n scores", "implementation", "time", "× interbias", "EER", "ΔEER vs interbias", "minDCF"],
        rows,
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small sizes, for a smoke test")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--clock", default="wall", help="wall, or cpu (CPU seconds, one thread)")
    args = ap.parse_args(argv)
    clock = set_clock(args.clock)
    if args.quick:
        out = run([10_000, 100_000], [2_000], reps=2, sb_reps=1, mem_limit=2**30, clock=clock)
    else:
        mem = 4 * 2**30
        out = run([1_000_000, 10_000_000], [10_000, 100_000], reps=args.reps, sb_reps=1, mem_limit=mem, clock=clock)
    print(f"machine: {machine()}\n")
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
