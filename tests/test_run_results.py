"""results.py: the one normal shape of a results table (normalise_results)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from interbias.run.results import NORMALISED, TEXT_KEYS, normalise_results


def test_missing_text_becomes_empty_whatever_the_text_dtype() -> None:
    for dtype in (object, "string", "str"):
        frame = pd.DataFrame({"model": ["a", "b"], "overlap_warning": ["x", None], "eer": [0.1, np.nan]})
        frame = frame.astype({"model": dtype, "overlap_warning": dtype})
        out = normalise_results(frame)
        assert out["overlap_warning"].tolist() == ["x", ""], dtype
        assert np.isnan(out["eer"].iloc[1])  # numbers keep their NaN
        assert all(out[c].tolist() == ["", ""] for c in TEXT_KEYS if c not in frame.columns)
        assert out.attrs[NORMALISED] and frame["overlap_warning"].isna().iloc[1]  # a copy
