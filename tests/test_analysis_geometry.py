"""Geometry audit on constructed embeddings with known structure, against independent references."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import scipy.linalg
from hypothesis import given, settings
from hypothesis import strategies as st

from interbias.analysis import geometry as geo
from interbias.utils.errors import AnalysisError
from interbias.utils.seeding import derive_rng


def cross(n_text: int, n_voice: int, n_style: int, reps: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    t, v, s, _ = np.meshgrid(np.arange(n_text), np.arange(n_voice), np.arange(n_style), np.arange(reps), indexing="ij")
    return t.ravel(), v.ravel(), s.ravel()


def make_grid(
    *,
    n_text: int = 6,
    n_voice: int = 8,
    n_style: int = 5,
    d: int = 16,
    reps: int = 1,
    effects: dict[str, tuple[list[int], float]] | None = None,
    noise: float = 0.1,
    seed: str = "grid",
) -> geo.EmbeddingGrid:
    """x = Σ_a scale_a · (random class means of axis a placed in coordinates dims_a) + noise."""
    rng = derive_rng("test-geometry", seed)
    t, v, s = cross(n_text, n_voice, n_style, reps)
    x = noise * rng.normal(size=(len(t), d))
    for axis, (dims, scale) in (effects or {}).items():
        idx = {"sem": t, "voice": v, "expr": s}[axis]
        means = rng.normal(size=(idx.max() + 1, len(dims)))
        x[:, dims] += scale * means[idx]
    groups = {"gender": np.where(v % 2 == 0, "f", "m"), "accent": np.array(["a", "b"])[(v // 2) % 2]}
    return geo.EmbeddingGrid.build(x, [f"t{i}" for i in t], [f"v{i}" for i in v], [f"s{i}" for i in s], groups)


# ---- the generalised eigenproblem and F ---------------------------------------------------------


def test_generalized_eigh_matches_scipy() -> None:
    g = make_grid(effects={"sem": ([0, 1, 2], 1.0), "voice": ([1, 3], 0.5)}, seed="eig")
    sc = geo.class_scatter(g.x, g.text)
    tau = geo.ridge(sc.within)
    b = sc.within + tau * np.eye(g.x.shape[1])
    vals, vecs = geo.generalized_eigh(sc.between, b)
    ref = scipy.linalg.eigh(sc.between, b, eigvals_only=True)[::-1]
    np.testing.assert_allclose(vals, ref, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(sc.between @ vecs, b @ vecs * vals, atol=1e-9)
    np.testing.assert_allclose(vecs.T @ b @ vecs, np.eye(len(vals)), atol=1e-9)


@pytest.mark.parametrize("axis", geo.AXES)
def test_fidelity_eigenvalues_match_scipy_and_a_nonsymmetric_solver(axis: str) -> None:
    g = make_grid(effects={"sem": ([0, 1], 1.0), "voice": ([2, 3, 4], 0.7), "expr": ([4, 5], 0.4)}, seed="fid")
    labels = g.labels(axis)
    sc = geo.class_scatter(g.x, labels)
    d = g.x.shape[1]
    tau = 1e-3 * np.trace(sc.within) / d
    fid = geo.axis_fidelity(g.x, labels)
    r = min(sc.n_classes - 1, d)
    ref = scipy.linalg.eigh(sc.between, sc.within + tau * np.eye(d), eigvals_only=True)[::-1][:r]
    brute = np.sort(np.linalg.eigvals(np.linalg.solve(sc.within + tau * np.eye(d), sc.between)).real)[::-1][:r]
    assert fid.rank == r and fid.tau == pytest.approx(tau)
    np.testing.assert_allclose(fid.eigenvalues, ref, rtol=1e-7, atol=1e-10)
    np.testing.assert_allclose(fid.eigenvalues, brute, rtol=1e-6, atol=1e-9)
    assert fid.value == pytest.approx(np.mean(ref / (1 + ref)), rel=1e-9)


def test_class_scatter_matches_the_textbook_loop() -> None:
    rng = derive_rng("test-geometry", "scatter")
    x = rng.normal(size=(30, 4))
    lab = np.array(list("aaabbbbbcccccccccc") + list("dddddddddddd"))
    sc = geo.class_scatter(x, lab)
    mu = x.mean(0)
    between = np.zeros((4, 4))
    within = np.zeros((4, 4))
    for c in "abcd":
        xc = x[lab == c]
        pi = len(xc) / len(x)
        between += pi * np.outer(xc.mean(0) - mu, xc.mean(0) - mu)
        within += pi * np.cov(xc.T, bias=True)
    np.testing.assert_allclose(sc.between, between, atol=1e-12)
    np.testing.assert_allclose(sc.within, within, atol=1e-12)
    np.testing.assert_allclose(sc.total, np.cov(x.T, bias=True), atol=1e-12)
    assert sc.n_classes == 4


def test_fidelity_tends_to_mean_squared_canonical_correlation() -> None:
    """As τ → 0, F = mean ρ² of the canonical correlations of z with the one-hot labels
    (reference: Björck–Golub, SVD of Q_zᵀ Q_y)."""
    g = make_grid(n_text=5, effects={"sem": ([0, 1], 0.3)}, noise=1.0, seed="cca")
    zc = g.x - g.x.mean(0)
    classes = sorted(set(g.text))
    y = np.stack([(g.text == c).astype(float) for c in classes[1:]], axis=1)
    yc = y - y.mean(0)
    qz, qy = np.linalg.qr(zc)[0], np.linalg.qr(yc)[0]
    rho = np.linalg.svd(qz.T @ qy, compute_uv=False)
    fid = geo.axis_fidelity(g.x, g.text, tau=1e-12)
    assert fid.value == pytest.approx(float(np.mean(rho**2)), rel=1e-7)


@pytest.mark.parametrize("axis", geo.AXES)
def test_pure_axis_data_has_fidelity_one_on_its_axis_and_near_zero_elsewhere(axis: str) -> None:
    d = 12
    g = make_grid(d=d, effects={axis: (list(range(d)), 1.0)}, noise=0.01, seed=f"pure-{axis}")
    for other in geo.AXES:
        f = geo.axis_fidelity(g.x, g.labels(other)).value
        if other == axis:
            assert f > 0.99
        else:
            assert f < 0.1, (other, f)


def test_nearly_noiseless_data_takes_the_direct_within_scatter() -> None:
    """Σ_T − Σ_B leaves Σ_W ≈ 1e-17 indefinite by rounding; F recomputes Σ_W from residuals."""
    g = make_grid(d=12, effects={"sem": (list(range(12)), 1.0)}, noise=1e-9, seed="noiseless")
    sc = geo.class_scatter(g.x, g.text)
    tau = 1e-3 * np.trace(sc.within) / 12
    assert np.linalg.eigvalsh(sc.total - sc.between).min() < -tau  # the subtraction is unusable here
    fid = geo.axis_fidelity(g.x, g.text)
    ref = scipy.linalg.eigh(sc.between, sc.within + tau * np.eye(12), eigvals_only=True)[::-1][:5]
    assert fid.tau == pytest.approx(tau)
    np.testing.assert_allclose(fid.eigenvalues, ref, rtol=1e-6)
    assert fid.value == pytest.approx(1.0, abs=1e-12)


def test_fidelity_errors() -> None:
    x = np.ones((4, 2))
    with pytest.raises(AnalysisError, match="fidelity \\(axis\\) needs at least 2 classes; got 1"):
        geo.axis_fidelity(x, ["a"] * 4)
    with pytest.raises(AnalysisError, match="the scatter has zero trace"):
        geo.axis_fidelity(x, ["a", "a", "b", "b"])
    with pytest.raises(AnalysisError, match="tau must be > 0; got 0"):
        geo.axis_fidelity(x, ["a", "a", "b", "b"], tau=0.0)
    with pytest.raises(AnalysisError, match="embeddings hold 1 non-finite value"):
        geo.axis_fidelity(np.array([[0.0, 1.0], [np.nan, 1.0]]), ["a", "b"])


@settings(max_examples=40, deadline=None, derandomize=True, database=None)
@given(
    n_text=st.integers(2, 4),
    n_voice=st.integers(2, 4),
    d=st.integers(1, 6),
    scale=st.floats(1e-3, 1e3),
    seed=st.integers(0, 10_000),
)
def test_fidelity_in_unit_interval_and_invariant_to_rotation_scale_shift(
    n_text: int, n_voice: int, d: int, scale: float, seed: int
) -> None:
    rng = derive_rng("test-geometry", "property", seed)
    t, v, s = cross(n_text, n_voice, 2)
    x = rng.normal(size=(len(t), d)) + rng.normal(size=(n_text, d))[t]
    q = np.linalg.qr(rng.normal(size=(d, d)))[0]
    y = scale * x @ q + rng.normal(size=d)
    for labels in (t, v, s):
        f = geo.axis_fidelity(x, labels).value
        assert 0.0 <= f <= 1.0
        assert geo.axis_fidelity(y, labels).value == pytest.approx(f, abs=1e-7)


# ---- the decomposition ----------------------------------------------------------------------------


def test_decomposition_identity_holds_on_a_balanced_grid_with_interactions() -> None:
    rng = derive_rng("test-geometry", "decomposition")
    t, v, s = cross(4, 5, 3, reps=2)
    cell = t * 100 + v * 10 + s
    x = rng.normal(size=(len(t), 6)) + rng.normal(size=(cell.max() + 1, 6))[cell] + 3 * rng.normal(size=(4, 6))[t]
    dec = geo.grid_decomposition(x, t, v, s)
    assert dec.residual < 1e-8
    assert dec.rows_per_cell == 2
    parts = sum(dec.between.values()) + dec.interaction + dec.within
    np.testing.assert_allclose(parts, np.cov(x.T, bias=True), atol=1e-10)
    assert sum(dec.shares().values()) == pytest.approx(1.0)
    assert dec.shares()["within"] > 0 and dec.shares()["int"] > 0
    np.testing.assert_allclose(dec.between["sem"], geo.class_scatter(x, t).between)


def test_unbalanced_grid_is_refused_not_rebalanced() -> None:
    t, v, s = cross(3, 4, 2)
    x = derive_rng("test-geometry", "unbalanced").normal(size=(len(t), 3))
    with pytest.raises(geo.UnbalancedGridError) as err:
        geo.grid_decomposition(x[1:], t[1:], v[1:], s[1:])
    assert str(err.value) == (
        "unbalanced grid: 1 of 24 (text, voice, style) cells missing and rows per cell range 1..1; "
        "the decomposition check is refused (no rebalancing)"
    )
    dup = np.concatenate([np.arange(len(t)), [0]])
    with pytest.raises(geo.UnbalancedGridError, match=r"0 of 24 .* cells missing and rows per cell range 1\.\.2"):
        geo.grid_decomposition(x[dup], t[dup], v[dup], s[dup])


# ---- leakage -----------------------------------------------------------------------------------------


def test_orthogonal_axis_subspaces_give_zero_leakage_and_shared_ones_give_one() -> None:
    """Low noise: whitening scales every direction to unit variance, so with few rows per class
    the noise in class means (≈ (C − 1)/n per whitened dimension) tilts estimated subspaces."""
    kw = {"d": 10, "noise": 0.01}
    apart = make_grid(**kw, effects={"sem": ([0, 1, 2], 1.0), "voice": ([3, 4, 5], 1.0), "expr": ([6, 7, 8], 1.0)})
    bases = geo.axis_subspaces(apart.x, {a: apart.labels(a) for a in geo.AXES}, 3)
    for a, b in geo.PAIRS:
        lk = geo.leakage(bases[a], bases[b])
        assert lk.aggregate < 1e-4 and lk.peak < 0.02, (a, b, lk)
    shared = make_grid(**kw, effects={"sem": ([0, 1, 2], 1.0), "voice": ([0, 1, 2], 1.0), "expr": ([6, 7, 8], 1.0)})
    bases = geo.axis_subspaces(shared.x, {a: shared.labels(a) for a in geo.AXES}, 3)
    lk = geo.leakage(bases["sem"], bases["voice"])
    assert lk.aggregate > 0.95 and lk.peak > 0.99
    assert geo.leakage(bases["sem"], bases["expr"]).aggregate < 0.01


def test_leakage_matches_scipy_subspace_angles() -> None:
    """Reference: scipy.linalg.eigh on (Σ_B, Σ_W + τ_T I), whitening by scipy sqrtm(Σ_T + τ_T I),
    scipy.linalg.subspace_angles."""
    rng = derive_rng("test-geometry", "mix")
    g = make_grid(d=10, effects={"sem": ([0, 1, 2], 1.0), "voice": ([2, 3, 4], 1.0), "expr": ([4, 5, 6], 0.6)})
    x = g.x @ rng.normal(size=(10, 10))  # entangle the coordinates
    m = 3
    ours = geo.axis_subspaces(x, {a: g.labels(a) for a in geo.AXES}, m)
    total = np.cov(x.T, bias=True)
    tau_t = 1e-3 * np.trace(total) / 10
    half = scipy.linalg.sqrtm(total + tau_t * np.eye(10)).real
    ref = {}
    for a in geo.AXES:
        sc = geo.class_scatter(x, g.labels(a))
        vecs = scipy.linalg.eigh(sc.between, sc.within + tau_t * np.eye(10))[1][:, ::-1][:, :m]
        ref[a] = half @ vecs
    for a, b in geo.PAIRS:
        cos = np.cos(scipy.linalg.subspace_angles(ref[a], ref[b]))
        lk = geo.leakage(ours[a], ours[b])
        np.testing.assert_allclose(np.sort(lk.cosines), np.sort(cos), atol=1e-7)
        assert lk.aggregate == pytest.approx(np.mean(cos**2), abs=1e-8)
        assert lk.peak == pytest.approx(cos.max(), abs=1e-8)
        assert lk.peak**2 >= lk.aggregate
    np.testing.assert_allclose(ours["sem"].T @ ours["sem"], np.eye(m), atol=1e-10)


def test_leakage_of_random_subspaces_is_near_chance_m_over_d() -> None:
    rng = derive_rng("test-geometry", "chance")
    d, m = 40, 4
    vals = [
        geo.leakage(np.linalg.qr(rng.normal(size=(d, m)))[0], np.linalg.qr(rng.normal(size=(d, m)))[0]).aggregate
        for _ in range(300)
    ]
    assert np.mean(vals) == pytest.approx(m / d, rel=0.1)


def test_leakage_rejects_bad_m_and_shapes() -> None:
    g = make_grid(n_style=3)
    with pytest.raises(AnalysisError, match=r"leakage: m=3 must be in 1..min\(C_expr − 1, d\) = 1..2"):
        geo.axis_subspaces(g.x, {"expr": g.style}, 3)
    with pytest.raises(AnalysisError, match="leakage: bases differ in shape"):
        geo.leakage(np.eye(4)[:, :2], np.eye(4)[:, :3])


# ---- groups, permutation test, jackknife -------------------------------------------------------------


def grouped_grid(n_voice: int, seed: str, strength: tuple[float, float] = (1.5, 0.1)) -> geo.EmbeddingGrid:
    """Sem structure strong in the voices of group 'A' (even-numbered voices) and weak in 'B'."""
    rng = derive_rng("test-geometry", "grouped", seed)
    t, v, s = cross(4, n_voice, 2)
    amp = np.where(v % 2 == 0, strength[0], strength[1])
    x = rng.normal(size=(len(t), 5)) + amp[:, None] * rng.normal(size=(4, 5))[t]
    return geo.EmbeddingGrid.build(x, t, v, s, {"g": np.where(v % 2 == 0, "A", "B")})


def test_group_fidelities_are_fidelities_on_slices_and_spread_is_max_minus_min() -> None:
    g = grouped_grid(6, "slices")
    by = geo.group_fidelities(g, g.groups["g"])
    for grp in ("A", "B"):
        rows = g.groups["g"] == grp
        for a in geo.AXES:
            assert by[grp][a] == geo.axis_fidelity(g.x[rows], g.labels(a)[rows]).value
    assert by["A"]["sem"] > by["B"]["sem"] + 0.3
    assert geo.spreads(by)["sem"] == pytest.approx(by["A"]["sem"] - by["B"]["sem"])


def test_a_group_of_one_voice_has_no_voice_fidelity() -> None:
    t, v, s = cross(3, 3, 2)
    x = derive_rng("test-geometry", "lone").normal(size=(len(t), 3))
    g = geo.EmbeddingGrid.build(x, t, v, s, {"g": np.where(v == 0, "solo", "rest")})
    by = geo.group_fidelities(g, g.groups["g"])
    assert math.isnan(by["solo"]["voice"]) and not math.isnan(by["rest"]["voice"])
    assert math.isnan(geo.spreads(by)["voice"]) and not math.isnan(geo.spreads(by)["sem"])


def test_distinct_arrangements_enumerate_the_multiset() -> None:
    labels = ["A", "A", "B", "C", "C"]
    ours = list(geo.distinct_arrangements(labels))
    assert len(ours) == len(set(ours)) == geo.n_arrangements(labels) == 30
    assert set(ours) == set(itertools.permutations(labels))


def test_exact_permutation_p_matches_brute_force_over_all_permutations() -> None:
    g = grouped_grid(4, "brute")
    test = geo.permutation_test(g, "g", n_perm=100, rng=derive_rng("unused"))
    assert test.method == "exact" and test.n_perm == 6
    voices = sorted(set(g.voice))
    labels = [dict(zip(g.voice, g.groups["g"], strict=True))[v] for v in voices]
    row_voice = np.array([voices.index(v) for v in g.voice])
    hits, perms = dict.fromkeys(geo.AXES, 0), list(itertools.permutations(labels))
    for perm in perms:
        sp = geo.spreads(geo.group_fidelities(g, np.asarray(perm, dtype=object)[row_voice]))
        for a in geo.AXES:
            hits[a] += sp[a] >= test.observed[a] - 1e-12
    for a in geo.AXES:
        assert test.p_values[a] == pytest.approx(hits[a] / len(perms))


def test_a_real_group_difference_gets_the_smallest_exact_p() -> None:
    g = grouped_grid(8, "strong")
    test = geo.permutation_test(g, "g", n_perm=1000, rng=derive_rng("unused"))
    assert test.n_perm == 70
    assert test.p_values["sem"] == pytest.approx(2 / 70)  # the split and its mirror image


def test_monte_carlo_permutations_are_seeded_and_bounded() -> None:
    g = grouped_grid(8, "mc")
    runs = [geo.permutation_test(g, "g", n_perm=20, rng=derive_rng("perm", 1)) for _ in range(2)]
    assert runs[0] == runs[1]
    assert runs[0].method == "monte-carlo" and runs[0].n_perm == 20
    assert all(1 / 21 <= p <= 1 for p in runs[0].p_values.values())
    hits = runs[0].p_values["sem"] * 21 - 1  # p = (1 + hits) / (n + 1)
    assert hits == pytest.approx(round(hits)) and round(hits) <= 2  # only the split and its mirror reach Γ_obs


def test_jackknife_of_a_mean_gives_the_textbook_standard_error() -> None:
    """Delete-one jackknife variance of a sample mean is s²/k exactly."""
    rng = derive_rng("test-geometry", "jk")
    a, b = rng.normal(size=7), rng.normal(size=11)
    by_a = [{("s",): float(np.delete(a, i).mean())} for i in range(7)]
    by_b = [{("s",): float(np.delete(b, i).mean())} for i in range(11)]
    hw, n = geo.jackknife_half_widths(by_a, by_b, [("s",)])[("s",)]
    assert n == 18
    assert hw == pytest.approx(1.959963984540054 * math.sqrt(a.var(ddof=1) / 7 + b.var(ddof=1) / 11))
    by_b[3] = {("s",): math.nan}
    hw, n = geo.jackknife_half_widths(by_a, by_b, [("s",)])[("s",)]
    assert math.isnan(hw) and n == 17


def test_grid_rejects_groups_that_vary_within_a_voice() -> None:
    t, v, s = cross(2, 2, 2)
    with pytest.raises(AnalysisError) as err:
        geo.EmbeddingGrid.build(np.zeros((8, 2)), t, v, s, {"gender": ["f", "m"] * 4})
    assert str(err.value) == (
        "group column 'gender' must be constant within each voice; 2 voice(s) have several values, first: '0'"
    )
    with pytest.raises(AnalysisError, match="column 'style' needs at least 2 distinct values"):
        geo.EmbeddingGrid.build(np.zeros((8, 2)), t, v, [0] * 8)


# ---- the audit ------------------------------------------------------------------------------------


def test_audit_rows_are_complete_deterministic_and_refuse_unbalanced_decomposition() -> None:
    g = make_grid(n_text=4, n_voice=6, n_style=3, d=8, effects={"sem": ([0, 1], 1.0), "voice": ([2, 3], 1.0)})
    res = geo.audit(g, n_perm=10, seed=7)
    frame = geo.to_frame(res, {"encoder": "toy", "source": "constructed", "subset": "full"})
    again = geo.to_frame(geo.audit(g, n_perm=10, seed=7), {"encoder": "toy", "source": "constructed", "subset": "full"})
    assert frame.equals(again)
    assert list(frame.columns) == list(geo.COLUMNS)
    counts = frame["metric"].value_counts().to_dict()
    # F: 3; Λ, ℓ: 3 pairs; F_group: 2 attributes × 2 groups × 3 axes; Γ: 2 × 3; residual; 5 shares;
    # disparities: δ per attribute, D̄, D̄_model, floor, active margin per attribute × probe axis (sem, expr)
    assert counts == {
        "delta": 2,
        "Dbar": 4,
        "Dbar_model": 4,
        "floor": 4,
        "active_margin": 4,
        "F": 3,
        "Lambda": 3,
        "ell": 3,
        "F_group": 12,
        "Gamma": 6,
        "decomposition_residual": 1,
        "variance_share": 5,
    }
    res_row = frame[frame["metric"] == "decomposition_residual"].iloc[0]
    assert res_row["value"] < 1e-8 and res_row["note"] == "balanced: 1 row(s) per (text, voice, style) cell"
    assert (frame["seed"] == 7).all() and res.m == 2
    lam = frame[frame["metric"] == "Lambda"]
    assert (lam["chance"] == 2 / 8).all()
    assert (frame.loc[frame["metric"] == "F", "n_resamples"] == 4 + 6).all()
    # accent 'b' holds 2 voices: leaving one out leaves no voice axis in the slice, so the
    # jackknife of Γ_voice|accent is undefined and says so (nan; 8 of 10 replicates finite)
    hw = frame[frame["metric"].isin(["F", "Lambda", "Gamma"])].set_index(["metric", "attribute", "axis"])
    assert hw["ci_half_width"].isna().to_dict() == {k: k == ("Gamma", "accent", "voice") for k in hw.index}
    assert hw.loc[("Gamma", "accent", "voice"), "n_resamples"] == 8
    ell = frame[frame["metric"] == "ell"]["value"].to_numpy()
    assert (ell**2 >= lam["value"].to_numpy()).all()

    keep = np.ones(len(g.x), dtype=bool)
    keep[5] = False
    frame = geo.to_frame(geo.audit(g.subset(keep), n_perm=5, jackknife=False, seed=7), {"encoder": "toy"})
    row = frame[frame["metric"] == "decomposition_residual"].iloc[0]
    assert math.isnan(row["value"]) and row["note"].startswith("unbalanced grid: 1 of 72")
    assert "variance_share" not in set(frame["metric"])


def test_audit_rejects_unknown_attributes_and_too_large_m() -> None:
    g = make_grid(n_text=4, n_voice=4, n_style=3, d=6)
    with pytest.raises(AnalysisError, match="unknown group attribute\\(s\\) age; have: gender, accent"):
        geo.audit(g, attributes=["age"], seed=1)
    with pytest.raises(AnalysisError, match=r"leakage: m=3 exceeds min_a \(C_a − 1\) = 2"):
        geo.audit(g, m=3, seed=1, n_perm=1, jackknife=False)


def test_summary_reads_the_headline_statistics() -> None:
    g = make_grid(n_text=4, n_voice=8, n_style=3, d=8, effects={"sem": ([0, 1], 1.0)})
    g = geo.EmbeddingGrid.build(
        g.x, g.text, g.voice, g.style, {"gender": g.groups["gender"], "accent": g.groups["accent"]}
    )
    frame = geo.to_frame(geo.audit(g, n_perm=5, seed=3), {"encoder": "toy", "source": "c", "subset": "full"})
    frame = frame.astype({c: str for c in ("layer", "axis_b", "attribute", "group", "note")})
    row = geo.summary(frame).iloc[0]
    f_sem = frame[(frame["metric"] == "F") & (frame["axis"] == "sem")]["value"].iloc[0]
    gamma = frame[(frame["metric"] == "Gamma") & (frame["attribute"] == "accent") & (frame["axis"] == "sem")]
    assert row["F_sem"] == f_sem and row["Gamma_acc"] == gamma["value"].iloc[0]
    assert row["Gamma_acc_p"] == gamma["p_value"].iloc[0] and row["Lambda_m"] == 2
