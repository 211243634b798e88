"""The synthesis noise floor of the geometry audit (``geometry --noise-floor``).

For every replicate cell (:mod:`interbias.corpora.replicates`) the noise row is
``(z_replicate − z_original) / √2``: the rendering noise of one utterance (the √2 makes its
covariance that of one rendering), labelled with its cell's text, voice, style and groups. The
audit's statistics on these rows at the audit's ``m`` — ``F_noise`` per axis, ``Lambda_noise`` and
``ell_noise`` per axis pair, ``Dbar_noise`` per attribute (sem probe) — are the values the
replicates alone give: what rendering noise with this grid's labels produces. An ``F`` or ``Λ``
near its noise value cannot be told from rendering noise. F is scale-invariant: on pure noise
it is the chance level of the replicate grid's size and dimension, not the noise's loudness. ``nan`` (with a note) where the
replicate grid holds too few classes (``m`` above ``C_a − 1``) or an attribute has one group there.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from interbias.analysis.geometry.linalg import AXES, PAIRS, TAU_REL, EmbeddingGrid
from interbias.analysis.geometry.stats import statistics
from interbias.utils.errors import AnalysisError
from interbias.utils.progress import Reporter

NOTE = "rendering noise alone: (replicate − original)/√2 of {n} replicate cells, the audit's m"


def text_label(u: Any) -> str | None:
    """The sem-axis class of an utterance: ``attrs['sentence']`` when present, else its text."""
    return u.get("sentence") or u.text


def noise_grid(
    replicates: Any, originals: dict[str, np.ndarray], vectors: dict[str, np.ndarray], groups: Sequence[str]
) -> EmbeddingGrid:
    """The noise rows of the replicates whose original is in ``originals`` (vectors by id)."""
    rows = [u for u in replicates if u.get("replicate_of") in originals and u.id in vectors]
    if len(rows) < 2:
        raise AnalysisError(f"--noise-floor: {len(rows)} replicate(s) have both embeddings; need at least 2")
    x = np.stack([(vectors[u.id] - originals[u.get("replicate_of")]) / math.sqrt(2) for u in rows]).astype(np.float64)
    cols = {g: [str(u.get(g)) for u in rows] for g in groups}
    return EmbeddingGrid.build(
        x, [text_label(u) for u in rows], [u.speaker for u in rows], [u.style for u in rows], cols
    )


def collect_noise(
    vectors: dict[str, np.ndarray],
    embed: Callable[[Any], tuple[dict[str, np.ndarray], dict[str, str], int, int]],
    cache: Path,
    groups: Sequence[str],
    reporter: Reporter,
) -> EmbeddingGrid:
    """Build (or reuse) the default synthetic corpus's replicates of the utterances in ``vectors``,
    embed them with ``embed(manifest)`` (the pipeline's clean-chain embedder) and return the
    noise grid."""
    from interbias.corpora.replicates import build_replicates
    from interbias.corpora.synthetic import SyntheticSpec

    _, replicates = build_replicates(SyntheticSpec(), cache, reporter=reporter)
    replicates = replicates.filter(u.get("replicate_of") in vectors for u in replicates)
    reporter.info(f"noise floor: {len(replicates)} replicate cells")
    rep_vectors, failures, _, _ = embed(replicates)
    if failures:
        raise AnalysisError(
            f"--noise-floor: {len(failures)} replicate(s) failed; first: {next(iter(failures.values()))}"
        )
    return noise_grid(replicates, vectors, rep_vectors, groups)


def noise_frame(noise: EmbeddingGrid, m: int, base: pd.DataFrame, tau_rel: float = TAU_REL) -> pd.DataFrame:
    """geometry.csv rows ``F_noise``, ``Lambda_noise``, ``ell_noise``, ``Dbar_noise`` (columns of ``base``,
    one audit's rows, whose identity columns they copy)."""
    attrs = [a for a, col in noise.groups.items() if len(set(col)) >= 2]
    shape = noise.shape
    defined = m <= min(shape["n_texts"], shape["n_voices"], shape["n_styles"]) - 1
    values, _ = statistics(noise, attrs, m if defined else 1, tau_rel=tau_rel)
    note = NOTE.format(n=shape["n_rows"]) if defined else f"m={m} exceeds the replicate grid's classes"
    template: dict[str, Any] = dict.fromkeys(base.columns, "")
    template.update({c: base[c].iloc[0] for c in ("encoder", "encoder_fingerprint", "source", "subset", "layer")})
    template.update(
        n_rows=shape["n_rows"], n_texts=shape["n_texts"], n_voices=shape["n_voices"], n_styles=shape["n_styles"]
    )
    rows: list[dict[str, Any]] = [
        dict(template, metric="F_noise", axis=a, value=values[("F", a)], note=note) for a in AXES
    ]
    for a, b in PAIRS:
        for metric in ("Lambda", "ell"):
            value = values[(metric, a, b)] if defined else math.nan
            rows.append(dict(template, metric=f"{metric}_noise", axis=a, axis_b=b, value=value, m=m, note=note))
    for attr in attrs:
        value = values[("Dbar", attr, "sem")] if defined else math.nan
        rows.append(
            dict(template, metric="Dbar_noise", axis="sem", axis_b="voice", attribute=attr, value=value, m=m, note=note)
        )
    return pd.DataFrame(rows, columns=list(base.columns))
