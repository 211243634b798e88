"""Small results tables for analysis tests: one row per cell, factors named and referenced."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd


def results_rows(
    values: Mapping[tuple[str, ...], float],
    factors: Sequence[tuple[str, str]] = (("A", "a0"), ("B", "b0")),
    *,
    experiment: str = "E",
    model: str = "m",
    family: str = "sv",
    **extra: str,
) -> list[dict]:
    """``values``: levels (one per factor) -> EER; ``factors``: (name, reference) per slot."""
    rows = []
    for levels, v in values.items():
        row = {"experiment": experiment, "dataset": "d", "model": model, "family": family, **extra}
        row["cell"] = ",".join(f"{name}={lv}" for (name, _), lv in zip(factors, levels, strict=True))
        for slot, (name, ref), lv in zip("abc", factors, levels, strict=False):
            row.update({f"factor_{slot}": name, f"level_{slot}": lv, f"ref_{slot}": ref})
        row["eer"] = v
        rows.append(row)
    return rows


def frame_of(values: Mapping[tuple[str, ...], float], **kwargs) -> pd.DataFrame:
    return pd.DataFrame(results_rows(values, **kwargs))
