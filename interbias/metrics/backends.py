"""Scoring back-ends: how two embeddings become a score, fitted on labelled embeddings.

- ``cosine``: the raw cosine (nothing is fitted; the run's default).
- ``whiten+lnorm``: centre on the fit mean, whiten with the fit total covariance (PCA
  whitening, all ``min(D, n − 1)`` components), length-normalise, cosine.
- ``lda+cosine``: centre, LDA to ``min(D, S − 1)`` dimensions (S fit speakers), cosine.
- ``plda``: the ``lda+cosine`` projection, length-normalised, then a two-covariance PLDA
  (Brümmer & de Villiers 2010): x = μ + y + ε with speaker variable y ~ N(0, B) and
  within-speaker noise ε ~ N(0, W). The score is the log-likelihood ratio of "same speaker"
  against "different speakers", in closed form (:class:`TwoCovPlda`).

LDA follows scikit-learn's ``eigen`` solver: Sw = Σ_k p_k·Cov_k (biased class covariances,
empirical priors), Sb = St − Sw, directions from the generalised eigenproblem Sb v = λ Sw v
(v normalised to vᵀ Sw v = 1), largest λ first. When the within-class scatter has lower rank
than D (fewer than D + S fit utterances), the data are first projected onto the leading
``n − S`` principal components of the total scatter (the "Fisherface" PCA step; recorded as
``pca_dim``); LDA is invariant to an invertible linear map, so with enough data that step
changes nothing. PLDA's B and W are moment estimates: W the pooled within-speaker covariance,
B the covariance of the speaker means. A back-end that cannot be fitted (fewer than 2
speakers, a class with one utterance only, a singular covariance) raises :class:`MetricError`.

Domain adaptation (``whiten+lnorm+adapt``, ``plda+adapt``; :func:`adapt_backend`) re-estimates a
fitted back-end from **unlabelled** in-condition embeddings X (n × D), in the spirit of
WeSpeaker's ``adapt`` (BUT's Python form of Kaldi's unsupervised PLDA adaptation):

- whitening: the mean and the whitening are re-estimated on X (whitening needs no labels);
- PLDA: the projection is re-centred on X's mean m (the LDA directions are kept), so
  y = unit((x − m)·P); the PLDA mean becomes the mean of the y, and with S their covariance
  and T = B + W the model's total covariance, the excess of S over T — Σ over the generalised
  eigenpairs S e = v T e (eᵀ T e = 1) with v > 1 of (v − 1)·T e eᵀ T, i.e. the positive part of
  S − T in T's metric — is added to B and W in the shares :data:`ADAPT_BETWEEN` and
  :data:`ADAPT_WITHIN` (WeSpeaker's defaults, 0.5 each). Directions where the new data vary
  less than the model expects are left as they were.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import scipy.linalg

from interbias.utils.errors import MetricError

#: The suffix of a back-end adapted to each condition (:func:`adapt_backend`).
ADAPT = "+adapt"
BACKENDS = ("cosine", "whiten+lnorm", "lda+cosine", "plda", "whiten+lnorm" + ADAPT, "plda" + ADAPT)
#: Back-ends that are fitted (every one but ``cosine``).
FITTED = BACKENDS[1:]
#: Shares of the PLDA covariance excess added to B (between) and W (within) when adapting.
ADAPT_BETWEEN = 0.5
ADAPT_WITHIN = 0.5
#: Smallest eigenvalue kept, relative to the largest, before a covariance counts as singular.
_RCOND = 1e-10
_CHUNK = 1 << 14


@dataclass(frozen=True)
class Projection:
    """x ↦ (x − mean)·matrix (D → k)."""

    mean: np.ndarray
    matrix: np.ndarray

    def apply(self, x: np.ndarray) -> np.ndarray:
        return (np.asarray(x, np.float64) - self.mean) @ self.matrix


@dataclass(frozen=True)
class TwoCovPlda:
    """Two-covariance PLDA on centred k-dimensional features: ``between`` B, ``within`` W.

    With T = B + W, a pair (e, t) is N(0, [[T, B], [B, T]]) for one speaker and N(0, T)⊗N(0, T)
    for two; writing the inverse of the former as [[A, C], [C, A]], the log-likelihood ratio is
    −½ eᵀQe − ½ tᵀQt − eᵀCt + const with Q = A − T⁻¹ and const = log|T| − ½ log|[[T, B], [B, T]]|.
    """

    mean: np.ndarray
    between: np.ndarray
    within: np.ndarray
    q: np.ndarray
    c: np.ndarray
    const: float

    @classmethod
    def from_covariances(cls, mean: np.ndarray, between: np.ndarray, within: np.ndarray) -> TwoCovPlda:
        k = len(between)
        total = between + within
        joint = np.block([[total, between], [between, total]])
        _check_pd(within, "the within-speaker covariance")
        _check_pd(joint, "the same-speaker joint covariance")
        inv = np.linalg.inv(joint)
        inv = (inv + inv.T) / 2
        a, c = inv[:k, :k], inv[:k, k:]
        q = a - np.linalg.inv(total)
        const = np.linalg.slogdet(total)[1] - 0.5 * np.linalg.slogdet(joint)[1]
        return cls(mean, between, within, (q + q.T) / 2, (c + c.T) / 2, float(const))

    def llr(self, enrol: np.ndarray, test: np.ndarray, enrol_idx: np.ndarray, test_idx: np.ndarray) -> np.ndarray:
        """The LLR of trials (enrol[enrol_idx_i], test[test_idx_i]), float64."""
        e = np.asarray(enrol, np.float64) - self.mean
        t = np.asarray(test, np.float64) - self.mean
        qe = -0.5 * np.einsum("ij,jk,ik->i", e, self.q, e)
        qt = -0.5 * np.einsum("ij,jk,ik->i", t, self.q, t)
        ec = e @ self.c
        out = np.empty(len(enrol_idx), np.float64)
        for lo in range(0, len(enrol_idx), _CHUNK):
            ei, ti = enrol_idx[lo : lo + _CHUNK], test_idx[lo : lo + _CHUNK]
            out[lo : lo + _CHUNK] = qe[ei] + qt[ti] - np.einsum("ij,ij->i", ec[ei], t[ti]) + self.const
        return out


@dataclass(frozen=True)
class FittedBackend:
    """A fitted back-end: its projection (None for ``cosine``), its PLDA (``plda`` only) and
    what it was fitted on (the fit speakers' ids, the number of utterances)."""

    kind: str
    projection: Projection | None
    plda: TwoCovPlda | None
    speakers: tuple[str, ...]
    n_utterances: int
    pca_dim: int | None = None

    def features(self, x: np.ndarray) -> np.ndarray:
        """Embeddings as the back-end scores them (projected and length-normalised), float32
        for the cosine kinds (the run's cosine is float32), float64 for ``plda``."""
        if self.projection is None:
            return np.asarray(x, np.float32)
        y = _unit(self.projection.apply(x))
        return y if self.plda is not None else y.astype(np.float32)

    def arrays(self) -> dict[str, np.ndarray]:
        """The fitted parameters as named arrays (the run folder's ``.npz``)."""
        out: dict[str, np.ndarray] = {}
        if self.projection is not None:
            out.update(mean=self.projection.mean, matrix=self.projection.matrix)
        if self.plda is not None:
            p = self.plda
            out.update(plda_mean=p.mean, between=p.between, within=p.within, q=p.q, c=p.c, const=np.array(p.const))
        return out

    def sha256(self) -> str:
        """sha256 over the kind and every parameter array's name, shape and float64 bytes."""
        h = hashlib.sha256(self.kind.encode())
        for name, arr in sorted(self.arrays().items()):
            a = np.ascontiguousarray(arr, np.float64)
            h.update(f"{name}{a.shape}".encode())
            h.update(a.tobytes())
        return h.hexdigest()

    def record(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": self.kind,
            "n_speakers": len(self.speakers),
            "n_utterances": self.n_utterances,
            "sha256": self.sha256(),
        }
        if self.projection is not None:
            out["dim"] = int(self.projection.matrix.shape[1])
        if self.pca_dim is not None:
            out["pca_dim"] = self.pca_dim
        return out


def _unit(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(norms > 0, norms, 1.0)


def _check_pd(cov: np.ndarray, what: str) -> None:
    vals = np.linalg.eigvalsh(cov)
    if vals[0] <= _RCOND * max(vals[-1], np.finfo(float).tiny):
        raise MetricError(f"cannot fit the back-end: {what} is singular (smallest eigenvalue {vals[0]:.3g})")


def _classes(speakers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    names, codes = np.unique(speakers, return_inverse=True)
    return names, codes


def lda_directions(x: np.ndarray, codes: np.ndarray, k: int) -> np.ndarray:
    """The first ``k`` LDA directions of ``x`` with class ``codes`` (scikit-learn's eigen solver)."""
    n, d = x.shape
    counts = np.bincount(codes)
    means = np.stack([x[codes == i].mean(axis=0) for i in range(len(counts))])
    centred = x - means[codes]
    within = centred.T @ centred / n  # Σ_k p_k · biased Cov_k
    total = np.cov(x, rowvar=False, bias=True).reshape(d, d)
    _check_pd(within, "the within-speaker scatter")
    vals, vecs = scipy.linalg.eigh(total - within, within)
    return vecs[:, np.argsort(vals)[::-1][:k]]


def _pca(x: np.ndarray, r: int) -> np.ndarray:
    vals, vecs = np.linalg.eigh(np.cov(x, rowvar=False, bias=True))
    return vecs[:, np.argsort(vals)[::-1][:r]]


def _lda_projection(x: np.ndarray, codes: np.ndarray) -> tuple[Projection, int | None]:
    n, d = x.shape
    n_spk = int(codes.max()) + 1
    mean = x.mean(axis=0)
    rank = n - n_spk
    pca = _pca(x - mean, rank) if rank < d else None
    z = (x - mean) @ pca if pca is not None else x - mean
    dirs = lda_directions(z, codes, min(z.shape[1], n_spk - 1))
    matrix = pca @ dirs if pca is not None else dirs
    return Projection(mean, matrix), (rank if pca is not None else None)


def _whitening(x: np.ndarray) -> Projection:
    mean = x.mean(axis=0)
    vals, vecs = np.linalg.eigh(np.cov(x, rowvar=False, bias=True).reshape(x.shape[1], x.shape[1]))
    keep = min(x.shape[1], len(x) - 1)
    order = np.argsort(vals)[::-1][:keep]
    vals, vecs = vals[order], vecs[:, order]
    if vals[-1] <= _RCOND * vals[0]:
        raise MetricError(f"cannot fit the back-end: the total covariance is singular ({keep} components kept)")
    return Projection(mean, vecs / np.sqrt(vals))


def fit_plda(y: np.ndarray, codes: np.ndarray) -> TwoCovPlda:
    """Two-covariance PLDA by moments: W pooled within-speaker, B covariance of speaker means."""
    counts = np.bincount(codes)
    means = np.stack([y[codes == i].mean(axis=0) for i in range(len(counts))])
    centred = y - means[codes]
    within = centred.T @ centred / len(y)
    mu = means.mean(axis=0)
    between = (means - mu).T @ (means - mu) / len(means)
    return TwoCovPlda.from_covariances(mu, between, within)


def fit_backend(name: str, vectors: np.ndarray, speakers: np.ndarray) -> FittedBackend:
    """Fit ``name`` on ``vectors`` (n × D) of ``speakers`` (n labels); see the module doc."""
    if name not in BACKENDS:
        raise MetricError(f"unknown back-end {name!r} (one of {', '.join(BACKENDS)})")
    name = base_kind(name)
    x = np.asarray(vectors, np.float64)
    names, codes = _classes(np.asarray(speakers))
    spk = tuple(str(s) for s in names)
    if name == "cosine":
        return FittedBackend(name, None, None, spk, len(x))
    counts = np.bincount(codes) if len(codes) else np.zeros(0, int)
    if len(names) < 3 or (counts < 2).any():
        raise MetricError(
            f"cannot fit the {name} back-end: it needs at least 3 speakers with 2 or more utterances each "
            f"(has {len(names)} speaker(s), {int((counts >= 2).sum())} with 2 or more)"
        )
    if name == "whiten+lnorm":
        return FittedBackend(name, _whitening(x), None, spk, len(x))
    proj, pca_dim = _lda_projection(x, codes)
    plda = fit_plda(_unit(proj.apply(x)), codes) if name == "plda" else None
    return FittedBackend(name, proj, plda, spk, len(x), pca_dim)


def backend_scores(
    backend: FittedBackend, enrol: np.ndarray, test: np.ndarray, enrol_idx: np.ndarray, test_idx: np.ndarray
) -> np.ndarray:
    """PLDA LLRs of trials whose rows are already :meth:`FittedBackend.features`."""
    if backend.plda is None:
        raise MetricError(f"back-end {backend.kind} scores by cosine, not by PLDA")
    return backend.plda.llr(enrol, test, np.asarray(enrol_idx, np.int64), np.asarray(test_idx, np.int64))


def base_kind(name: str) -> str:
    """The back-end an adapted one starts from (``plda`` of ``plda+adapt``); others as given."""
    return name.removesuffix(ADAPT)


def adapts(name: str) -> bool:
    """Whether back-end ``name`` is adapted to each condition (:func:`adapt_backend`)."""
    return name.endswith(ADAPT)


def plda_excess(total: np.ndarray, cov: np.ndarray) -> np.ndarray:
    """The positive part of ``cov`` − ``total`` in ``total``'s metric: Σ_{v>1} (v − 1)·T e eᵀ T over
    the generalised eigenpairs cov·e = v·total·e with eᵀ·total·e = 1."""
    vals, vecs = scipy.linalg.eigh((cov + cov.T) / 2, (total + total.T) / 2)
    up = vals > 1
    te = total @ vecs[:, up]
    return (te * (vals[up] - 1)) @ te.T


def adapt_backend(backend: FittedBackend, vectors: np.ndarray) -> FittedBackend:
    """``backend`` (fitted on the clean dev split) adapted to unlabelled in-condition ``vectors``
    (n × D, no speaker labels: see the module doc); its kind gains ``+adapt``, its fit speakers
    and utterances stay those of the labelled fit. Whitening is re-estimated on ``vectors``; PLDA
    is re-centred and its B and W take the covariance excess. Needs 2 or more vectors."""
    x = np.asarray(vectors, np.float64)
    base = base_kind(backend.kind)
    if base not in ("whiten+lnorm", "plda"):
        raise MetricError(f"back-end {backend.kind} has no adaptation (adapted: {', '.join(BACKENDS[-2:])})")
    if len(x) < 2:
        raise MetricError(f"cannot adapt the {base} back-end: it needs 2 or more in-condition embeddings, got {len(x)}")
    if base == "whiten+lnorm":
        return replace(backend, kind=base + ADAPT, projection=_whitening(x))
    assert backend.projection is not None and backend.plda is not None  # a fitted PLDA back-end
    proj = Projection(x.mean(axis=0), backend.projection.matrix)
    y = _unit(proj.apply(x))
    p = backend.plda
    k = len(p.mean)
    excess = plda_excess(p.between + p.within, np.cov(y, rowvar=False, bias=True).reshape(k, k))
    between, within = p.between + ADAPT_BETWEEN * excess, p.within + ADAPT_WITHIN * excess
    plda = TwoCovPlda.from_covariances(y.mean(axis=0), between, within)
    return replace(backend, kind=base + ADAPT, projection=proj, plda=plda)
