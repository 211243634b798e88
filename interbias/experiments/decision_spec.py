"""Experiment keys that say how scores become decisions: ``operating_points``, ``calibration``
and ``scoring`` (score normalisation). Parsed here, used by :mod:`interbias.run.calibrate`
and :mod:`interbias.metrics.score_norm`; every problem is one :class:`ConfigError`.

    operating_points: [{name: sre, p_target: 0.01, c_miss: 1, c_fa: 1}, ...]
    calibration: {fit_on: reference | each, split: dev}
    scoring: {enrol: embedding-mean | score-mean, norm: none | s-norm | as-norm, top_k: 100,
              cohort: {speakers: 40, utterances_per_speaker: 2, pool: speaker | utterance},
              cohort_chain: clean | matched,
              backend: cosine | whiten+lnorm | lda+cosine | plda | whiten+lnorm+adapt | plda+adapt}
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from interbias.experiments.sections import check_keys
from interbias.metrics.backends import BACKENDS
from interbias.metrics.llr import CostPoint
from interbias.metrics.verification import P_TARGET
from interbias.utils.errors import ConfigError, MetricError

FIT_ON = ("reference", "each")
SPLITS = ("dev",)
NORMS = ("none", "s-norm", "as-norm")
COHORT_CHAINS = ("clean", "matched")
#: A cohort entry: one mean embedding per cohort speaker (WeSpeaker's recipe), or one per utterance.
POOLS = ("speaker", "utterance")
#: How a trial model of K enrolment utterances is scored (``trials.enrol_utterances``): the
#: cosine of the test embedding with the mean of the K L2-normalised enrolment embeddings
#: (rescaled to unit length), or the mean of the K cosine scores.
ENROL_MODES = ("embedding-mean", "score-mean")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,39}$")


@dataclass(frozen=True)
class OperatingPoint:
    """A named detection-cost operating point; its name suffixes the DCF columns it fills."""

    name: str
    cost: CostPoint

    def record(self) -> dict[str, Any]:
        return {"name": self.name, "p_target": self.cost.p_target, "c_miss": self.cost.c_miss, "c_fa": self.cost.c_fa}


#: min_dcf's point (p_target :data:`~interbias.metrics.verification.P_TARGET`, unit costs), named
#: ``p<P_TARGET>``: the default when an experiment declares none.
DEFAULT_POINT = OperatingPoint(f"p{P_TARGET:g}", CostPoint(P_TARGET, 1.0, 1.0))


@dataclass(frozen=True)
class CalibrationSpec:
    """Where the linear calibration is fitted: on the reference condition's dev trials
    (``reference``: all cells at every acoustic factor's reference level, pooled) and applied to
    every cell, or on each cell's own dev trials (``each``: an oracle, for comparison)."""

    fit_on: str = "reference"
    split: str = "dev"


@dataclass(frozen=True)
class CohortSpec:
    """The normalisation cohort: ``speakers`` speakers disjoint from every trial speaker, drawn by
    a derived seed, ``utterances_per_speaker`` utterances each; ``pool``: one cohort entry per
    speaker (the mean of its utterances' embeddings, as WeSpeaker's ``tools/vector_mean.py``) or
    one per utterance."""

    speakers: int = 40
    utterances_per_speaker: int = 2
    pool: str = "speaker"

    @property
    def entries(self) -> int:
        """Cohort embeddings a side is scored against (before any fail to embed)."""
        return self.speakers * (self.utterances_per_speaker if self.pool == "utterance" else 1)


@dataclass(frozen=True)
class ScoreCalibrationSpec:
    """``scoring.calibration``: ``linear`` (llr = a·score + b) or ``qmf`` (quality-aware:
    llr = a·score + Σ w·q + b over the trial's ``measures``' min and max,
    :mod:`interbias.audio.quality`); a QMF run keeps the linear columns and adds ``qmf_`` ones."""

    kind: str = "linear"
    measures: tuple[str, ...] = ()

    @property
    def quality_aware(self) -> bool:
        """Whether the calibration is QMF (the trial's quality measures beside its score)."""
        match self.kind:
            case "qmf":
                return True
            case _:
                return False


@dataclass(frozen=True)
class ScoreNormSpec:
    """Score normalisation over a speaker-disjoint cohort (``none``: raw cosine scores only)."""

    norm: str = "none"
    top_k: int = 100
    cohort: CohortSpec = field(default_factory=CohortSpec)
    cohort_chain: str = "clean"
    #: How K > 1 enrolment utterances become one score (:data:`ENROL_MODES`).
    enrol: str = "embedding-mean"
    calibration: ScoreCalibrationSpec = field(default_factory=ScoreCalibrationSpec)
    #: The scoring back-end (:data:`interbias.metrics.backends.BACKENDS`; docs/guide/backends.md):
    #: every one but ``cosine`` is fitted on the reference cells' dev-split embeddings (``+adapt``:
    #: then adapted per condition); a back-end factor sets it per cell instead.
    backend: str = "cosine"


def _choice(spec: dict[str, Any], key: str, choices: tuple[str, ...], default: str, where: str) -> str:
    value = spec.get(key, default)
    if value not in choices:
        raise ConfigError(f"{where}: {key}: {value!r} is not one of {', '.join(choices)}")
    return str(value)


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{where}: must be a number, got {value!r}")
    return float(value)


def _count(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{where}: must be a positive whole number, got {value!r}")
    return value


def _top_k(value: Any, where: str) -> int:
    k = _count(value, where)
    if k < 2:
        raise ConfigError(f"{where}: at least 2 (a standard deviation of one score is 0), got {k}")
    return k


def default_name(cost: CostPoint) -> str:
    """``p<p_target>`` plus ``_cmiss<C>`` / ``_cfa<C>`` for costs other than 1 (e.g. p0.05_cfa10)."""
    name = f"p{cost.p_target:g}"
    if cost.c_miss != 1:
        name += f"_cmiss{cost.c_miss:g}"
    if cost.c_fa != 1:
        name += f"_cfa{cost.c_fa:g}"
    return name


def parse_operating_points(spec: Any, where: str) -> tuple[OperatingPoint, ...]:
    """``operating_points``: a non-empty list of {name?, p_target, c_miss?, c_fa?} (default: :data:`DEFAULT_POINT`)."""
    if spec is None:
        return (DEFAULT_POINT,)
    if not isinstance(spec, list) or not spec:
        raise ConfigError(f"{where}: operating_points: a non-empty list of {{p_target, c_miss, c_fa}}")
    out: list[OperatingPoint] = []
    for i, item in enumerate(spec):
        here = f"{where}: operating_points[{i}]"
        if not isinstance(item, dict) or "p_target" not in item:
            raise ConfigError(f"{here}: a mapping with p_target (and optional name, c_miss, c_fa)")
        check_keys(item, {"name", "p_target", "c_miss", "c_fa"}, where, f"operating_points[{i}]")
        try:
            cost = CostPoint(
                _number(item["p_target"], f"{here}.p_target"),
                _number(item.get("c_miss", 1.0), f"{here}.c_miss"),
                _number(item.get("c_fa", 1.0), f"{here}.c_fa"),
            )
        except MetricError as exc:
            raise ConfigError(f"{here}: {exc}") from None
        name = str(item.get("name", default_name(cost)))
        if not _NAME.match(name):
            raise ConfigError(f"{here}.name: {name!r} must be letters, digits, '.', '_' or '-' (at most 40)")
        out.append(OperatingPoint(name, cost))
    names = [p.name for p in out]
    if len(set(names)) != len(names):
        raise ConfigError(f"{where}: operating_points: names must be unique, got {', '.join(names)}")
    return tuple(out)


def parse_calibration(spec: Any, where: str) -> CalibrationSpec:
    if spec is None:
        return CalibrationSpec()
    if not isinstance(spec, dict):
        raise ConfigError(f"{where}: calibration: a mapping {{fit_on: reference|each, split: dev}}")
    check_keys(spec, {"fit_on", "split"}, where, "calibration")
    here = f"{where}: calibration"
    return CalibrationSpec(
        _choice(spec, "fit_on", FIT_ON, "reference", here), _choice(spec, "split", SPLITS, "dev", here)
    )


def parse_scoring(spec: Any, where: str) -> ScoreNormSpec:
    if spec is None:
        return ScoreNormSpec()
    if not isinstance(spec, dict):
        raise ConfigError(f"{where}: scoring: a mapping {{enrol, norm, top_k, cohort, cohort_chain}}")
    keys = {"enrol", "norm", "top_k", "cohort", "cohort_chain", "calibration", "backend"}
    check_keys(spec, keys, where, "scoring")
    here = f"{where}: scoring"
    cohort_raw = spec.get("cohort") or {}
    if not isinstance(cohort_raw, dict):
        raise ConfigError(f"{here}.cohort: a mapping {{speakers, utterances_per_speaker}}")
    check_keys(cohort_raw, {"speakers", "utterances_per_speaker", "pool"}, where, "scoring.cohort")
    base = CohortSpec()
    cohort = CohortSpec(
        _count(cohort_raw.get("speakers", base.speakers), f"{here}.cohort.speakers"),
        _count(
            cohort_raw.get("utterances_per_speaker", base.utterances_per_speaker),
            f"{here}.cohort.utterances_per_speaker",
        ),
        _choice(cohort_raw, "pool", POOLS, "speaker", f"{here}.cohort"),
    )
    out = ScoreNormSpec(
        _choice(spec, "norm", NORMS, "none", here),
        _top_k(spec.get("top_k", ScoreNormSpec.top_k), f"{here}.top_k"),
        cohort,
        _choice(spec, "cohort_chain", COHORT_CHAINS, "clean", here),
        _choice(spec, "enrol", ENROL_MODES, "embedding-mean", here),
        parse_score_calibration(spec.get("calibration"), where),
        _choice(spec, "backend", BACKENDS, "cosine", here),
    )
    if out.norm == "as-norm" and out.top_k > cohort.entries:
        raise ConfigError(
            f"{here}.top_k: {out.top_k} exceeds the cohort's {cohort.entries} entries "
            f"(pool: {cohort.pool}; {cohort.speakers} speaker(s) x {cohort.utterances_per_speaker} utterance(s)): "
            "lower top_k or raise scoring.cohort.speakers"
        )
    return out


def parse_score_calibration(spec: Any, where: str) -> ScoreCalibrationSpec:
    """``scoring.calibration``: {kind: linear|qmf, measures: [duration, snr, magnitude]}."""
    from interbias.audio.quality import MEASURES

    if spec is None:
        return ScoreCalibrationSpec()
    here = f"{where}: scoring.calibration"
    if not isinstance(spec, dict):
        raise ConfigError(f"{here}: a mapping {{kind: linear|qmf, measures: [{', '.join(MEASURES)}]}}")
    check_keys(spec, {"kind", "measures"}, where, "scoring.calibration")
    method = _choice(spec, "kind", ("linear", "qmf"), "linear", here)
    raw = spec.get("measures", [])
    if not isinstance(raw, list) or any(m not in MEASURES for m in raw) or len(set(raw)) != len(raw):
        raise ConfigError(f"{here}.measures: a list of distinct measures out of {', '.join(MEASURES)}, got {raw!r}")
    if method == "qmf" and not raw:
        raise ConfigError(f"{here}.measures: kind qmf needs at least one of {', '.join(MEASURES)}")
    if method == "linear" and raw:
        raise ConfigError(f"{here}.measures: only kind qmf uses measures (kind is linear)")
    return ScoreCalibrationSpec(method, tuple(str(m) for m in raw))


def resolved_scoring(raw: Any, spec: ScoreNormSpec) -> Any:
    """``scoring`` as the resolved experiment states it: ``cohort.pool`` written out when it
    changes the scores (``speaker`` under s-norm / as-norm), left out otherwise (``pool:
    utterance`` scores as runs did before pools existed, and without normalisation there is no
    cohort), so a run id changes exactly when the scores do."""
    if not isinstance(raw, dict):
        return raw
    out = dict(raw)
    if out.get("backend") == "cosine":  # the default written out: the same scores, the same run id
        del out["backend"]
    cohort = out.get("cohort")
    if isinstance(cohort, dict) and "pool" in cohort:
        cohort = {k: v for k, v in cohort.items() if k != "pool"}
        if cohort:
            out["cohort"] = cohort
        else:  # a cohort mapping that only named the pool: as if it were not written
            del out["cohort"]
    if spec.norm != "none" and spec.cohort.pool == "speaker":
        out["cohort"] = {**(out.get("cohort") or {}), "pool": "speaker"}
    return out
