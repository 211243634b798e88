"""D̄ (Proposition 2) and the worst-case floor (Corollary 1) against direct computations on
constructed embedding sets whose group displacement is known."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from scipy.linalg import sqrtm

from interbias.analysis import geometry as geo
from interbias.analysis.geometry.disparity import disparity_statistics, floor_t
from interbias.utils.seeding import derive_rng


def _grid(n_groups: int = 2, d: int = 6, shift: float = 1.5, whiten: bool = True) -> geo.EmbeddingGrid:
    """A balanced 5 texts × 8 voices × 3 styles grid; voices in ``n_groups`` accent groups whose
    means differ along a fixed direction; optionally pre-whitened so that ``Σ_T = I`` exactly."""
    rng = derive_rng("test-disparity", n_groups, d)
    texts, voices, styles = rng.normal(size=(5, d)), rng.normal(size=(8, d)), rng.normal(size=(3, d))
    direction = rng.normal(size=d)
    rows, x = [], []
    for t in range(5):
        for v in range(8):
            for s in range(3):
                rows.append((t, v, s))
                x.append(
                    texts[t] + voices[v] + styles[s] + shift * (v % n_groups) * direction + 0.2 * rng.normal(size=d)
                )
    x = np.asarray(x)
    if whiten:
        x = x - x.mean(axis=0)
        x = x @ np.linalg.inv(np.real(sqrtm(x.T @ x / len(x))))
    t, v, s = (np.asarray(c) for c in zip(*rows, strict=True))
    return geo.EmbeddingGrid.build(x, t, v, s, {"accent": [f"g{i % n_groups}" for i in v]})


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)


def test_pre_whitened_grid_has_identity_total_covariance() -> None:
    x = _grid().x
    np.testing.assert_allclose(x.T @ x / len(x), np.eye(x.shape[1]), atol=1e-9)


@pytest.mark.parametrize("cos", [0.95, 0.6, 0.2])
def test_rank_one_disparity_and_floor_match_the_constructed_geometry(cos: float) -> None:
    grid = _grid()
    g = grid.groups["accent"]
    delta = (grid.x[g == "g0"].mean(axis=0) - grid.x[g == "g1"].mean(axis=0)) / math.sqrt(1 + geo.TAU_REL)
    b = _unit(delta)  # the voice direction holds the whole displacement
    perp = _unit(np.eye(len(b))[0] - b[0] * b)
    a = cos * b + math.sqrt(1 - cos**2) * perp  # sem direction at leakage ℓ = cos
    bases = {"voice": b[:, None], "sem": a[:, None], "expr": perp[:, None]}
    leak = {("sem", "voice"): (cos**2, cos), ("expr", "voice"): (0.0, 0.0)}
    out = disparity_statistics(grid, bases, leak, ["accent"], rho=0.9)
    size = float(np.linalg.norm(delta))
    assert out[("delta", "accent", "voice")] == pytest.approx(size, rel=1e-9)
    assert out[("Dbar", "accent", "sem")] == pytest.approx(cos * size, rel=1e-9)
    assert out[("Dbar_model", "accent", "sem")] == pytest.approx(cos * size, rel=1e-9)
    assert out[("Dbar", "accent", "expr")] == pytest.approx(0.0, abs=1e-9)
    # Corollary 1 by brute force: the smallest |wᵀΔ| over unit w in the (a, b) plane with wᵀa ≥ ρ
    angles = np.linspace(0, 2 * np.pi, 200_001)
    w = np.outer(np.cos(angles), a) + np.outer(np.sin(angles), _unit(b - cos * a))
    feasible = w @ a >= 0.9
    brute = float(np.min(np.abs(w[feasible] @ delta)))
    active = 0.9**2 + cos**2 > 1
    assert (out[("active_margin", "accent", "sem")] > 0) == active
    assert out[("floor", "accent", "sem")] == pytest.approx(brute if active else 0.0, abs=1e-4 * size)
    assert (floor_t(0.9, cos) > 0) == active


def test_audit_dbar_matches_monte_carlo_probes_over_three_groups() -> None:
    grid = _grid(n_groups=3, d=8, whiten=False)
    m = 2
    result = geo.audit(grid, attributes=["accent"], m=m, n_perm=5, jackknife=False, seed=1)
    # independent path: whitening by a matrix square root, probes drawn uniformly from U_sem
    x = grid.x - grid.x.mean(axis=0)
    total = x.T @ x / len(x)
    tau = geo.TAU_REL * np.trace(total) / len(total)
    white = np.linalg.inv(np.real(sqrtm(total + tau * np.eye(len(total)))))
    bases = geo.axis_subspaces(grid.x, {a: grid.labels(a) for a in geo.AXES}, m)
    g = grid.groups["accent"]
    means = {k: grid.x[g == k].mean(axis=0) @ white for k in ("g0", "g1", "g2")}
    pairs = [means["g0"] - means["g1"], means["g0"] - means["g2"], means["g1"] - means["g2"]]
    rng = derive_rng("test-disparity-probes")
    coef = rng.normal(size=(40_000, m))
    probes = (coef / np.linalg.norm(coef, axis=1, keepdims=True)) @ bases["sem"].T
    mc = math.sqrt(np.mean([(probes @ p) ** 2 for p in pairs]))
    assert result.values[("Dbar", "accent", "sem")] == pytest.approx(mc, rel=0.02)
    delta = math.sqrt(np.mean([np.sum((p @ bases["voice"]) ** 2) for p in pairs]))
    lam = result.values[("Lambda", "sem", "voice")]
    assert result.values[("delta", "accent", "voice")] == pytest.approx(delta, rel=1e-9)
    assert result.values[("Dbar_model", "accent", "sem")] == pytest.approx(delta * math.sqrt(lam / m), rel=1e-9)


def test_disparity_rows_in_geometry_csv_and_summary() -> None:
    grid = _grid(whiten=False)
    result = geo.audit(grid, attributes=["accent"], n_perm=5, seed=2)
    frame = geo.to_frame(result, {"encoder": "toy"})
    rows = frame[frame["metric"] == "floor"]
    assert set(rows["axis"]) == {"sem", "expr"} and set(rows["axis_b"]) == {"voice"}
    assert rows["ci_half_width"].notna().all()
    margin = frame[(frame["metric"] == "active_margin") & (frame["axis"] == "sem")].iloc[0]
    ell = result.values[("ell", "sem", "voice")]
    assert margin["value"] == pytest.approx(0.81 + ell**2 - 1)
    assert ("inactive" in margin["note"]) == (margin["value"] <= 0)
    summary = geo.summary(frame).iloc[0]
    assert summary["Dbar"] == pytest.approx(result.values[("Dbar", "accent", "sem")])


def test_report_section_shows_the_disparity_table(tmp_path: Path) -> None:
    grid = _grid(whiten=False)
    result = geo.audit(grid, attributes=["accent"], n_perm=3, jackknife=False, seed=2)
    frame = geo.to_frame(result, {"encoder": "toy"})
    frame.to_csv(tmp_path / "geometry.csv", index=False)
    section = geo.report_section(tmp_path)
    assert section is not None
    rows = [ln for ln in section.markdown.splitlines() if ln.startswith("| toy |") and "| accent |" in ln]
    assert [r.split(" | ")[4] for r in rows] == ["sem", "expr"]
    dbar = result.values[("Dbar", "accent", "sem")]
    assert f" {dbar:.3f} " in rows[0] and ("inactive" in rows[0]) == (
        result.values[("active_margin", "accent", "sem")] <= 0
    )
