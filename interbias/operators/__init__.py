"""Degradation operators: registered, typed records applied in ordered chains.

An operator is a frozen dataclass registered under its exact name; its fields are its
parameters, validated on construction from YAML or the CLI. Randomness comes only from the
generator in :class:`OpContext`, derived from (utterance content, chain fingerprint, position
in the chain). What an operator actually did (achieved SNR, noise offset, realised loss rate)
is returned as a record and stored with the embedding.
"""

from __future__ import annotations

import importlib
import pkgutil
import types
import typing
from dataclasses import MISSING, dataclass, field, fields
from functools import cached_property
from typing import Any, ClassVar, Literal

import numpy as np

from interbias.utils.errors import OperatorError
from interbias.utils.registry import Registry
from interbias.utils.seeding import canonical_json, derive_rng, sha256_text

OPERATORS: Registry[type[Operator]] = Registry("operator", OperatorError)


@dataclass
class OpContext:
    """What an operator may know about the utterance it degrades.

    ``corpus`` (a Manifest) and ``exclude_speakers`` serve operators that draw other talkers;
    ``rng`` is the derived generator for this (utterance, chain, position).
    """

    sample_rate_hz: int
    utterance_id: str
    speaker: str
    rng: np.random.Generator
    corpus: Any = None
    exclude_speakers: frozenset[str] = frozenset()
    frontend: Any = None
    #: Folder for operator caches (e.g. a simulated impulse-response bank).
    cache_dir: Any = None
    extras: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Operator:
    """Base of every operator. Subclasses set ``name`` and implement :meth:`apply`."""

    name: ClassVar[str] = ""
    version: ClassVar[int] = 1
    #: Operators whose output equals their input by definition (skipped in fingerprints).
    is_identity: ClassVar[bool] = False
    #: Operators that mix in other talkers of the corpus; their output depends on which
    #: speakers are excluded (``OpContext.exclude_speakers``), so cache keys include that set.
    draws_talkers: ClassVar[bool] = False
    #: Operators that read files from disk (a noise folder, impulse responses): their
    #: :meth:`inputs` carry each file's sha256, which the run id includes too.
    reads_files: ClassVar[bool] = False
    #: Operators allowed to change the number of samples (time-scale modification).
    changes_length: ClassVar[bool] = False
    #: Operators that draw from their generator (noise segment, loss pattern, room, crop
    #: position): ``trials: {operator_draws: K}`` re-realises chains holding one K times.
    stochastic: ClassVar[bool] = False
    #: Unit and closed range of numeric parameters, ``name -> (low, high, unit)``: listed by
    #: ``interbias data operators`` and checked by :func:`check_ranges`.
    ranges: ClassVar[dict[str, tuple[float, float, str]]] = {}
    #: The columns of operations.parquet this operator fills, in order (docs/outputs.md), their
    #: values taken by :meth:`columns` from what it realised; every operator declares its own,
    #: ``()`` when its record stays in the ``realised`` column only.
    recorded: ClassVar[tuple[str, ...]] = ()

    def apply(self, x: np.ndarray, ctx: OpContext) -> tuple[np.ndarray, dict[str, Any]]:
        """Degrade float32 mono ``x``; return the output (same rate, and same length unless
        ``changes_length``) and a record of what was done."""
        raise NotImplementedError

    def validate(self) -> None:
        """Range checks beyond types; raise :class:`OperatorError` naming the parameter."""

    def recorded_input(self) -> tuple[str, str] | None:
        """(parameter, what it holds) when this operator reads recordings the user brings in a
        folder (``("noise_dir", "recorded noise")``); ``None`` when it needs none. An experiment's
        requirements (:mod:`interbias.experiments.requirements`) are built from it."""
        return None

    def columns(self, record: dict[str, Any]) -> dict[str, Any]:
        """This operator's columns of operations.parquet (:attr:`recorded`) from the ``record``
        :meth:`apply` returned."""
        return {}

    def notice(self, chain: str, records: list[dict[str, Any]]) -> str | None:
        """One line when this operator, in the chain labelled ``chain``, did less than it was
        asked on some utterances (``records``: its record on each), else ``None``."""
        return None

    def inputs(self, corpus: Any) -> Any:
        """What the output depends on beyond the parameters, the utterance and the seed (the
        talker pool of ``corpus``, a folder's files, a room bank's version), as JSON-able data;
        ``None`` when nothing. Part of the embedding cache key (:meth:`Chain.inputs_fingerprint`),
        never of the seed."""
        return None

    def check_resources(self) -> None:
        """Raise :class:`OperatorError` when something this operator needs on this machine is
        missing (a noise folder, a codec backend, room simulation). Separate from
        :meth:`validate` so an experiment file loads anywhere; a run checks it for
        every chain before any work."""

    def params(self) -> dict[str, Any]:
        """The parameters; optional ones left at ``None`` are omitted (so adding an optional
        parameter keeps the fingerprints and labels of existing conditions)."""
        out = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None and f.default is None:
                continue
            out[f.name] = value
        return out

    def to_record(self) -> dict[str, Any]:
        return {"name": self.name, "kwargs": self.params()}

    @classmethod
    def describe_params(cls) -> list[dict[str, Any]]:
        hints = typing.get_type_hints(cls)
        out = []
        for f in fields(cls):
            default = None if f.default is MISSING else f.default
            out.append(
                {
                    "name": f.name,
                    "type": _type_name(hints[f.name]),
                    "default": default,
                    "required": f.default is MISSING and f.default_factory is MISSING,
                    **_range_entry(cls.ranges.get(f.name)),
                }
            )
        return out

    @classmethod
    def available(cls) -> tuple[bool, str]:
        """Whether this operator can run on this machine, and why not."""
        return True, ""


def _range_entry(spec: tuple[float, float, str] | None) -> dict[str, Any]:
    if spec is None:
        return {}
    low, high, unit = spec
    return {"unit": unit, "range": [low, high]}


def check_ranges(op: Operator) -> None:
    """Raise :class:`OperatorError` (one line naming the parameter, value, unit and range) for
    the first parameter of ``op`` outside its declared ``ranges``; ``None`` values pass."""
    for pname, (low, high, unit) in op.ranges.items():
        value = getattr(op, pname)
        if value is not None and not low <= value <= high:
            raise OperatorError(
                f"{op.name}.{pname}: {value:g} {unit} is outside [{low:g}, {high:g}]".replace("  ", " ")
            )


def _type_name(tp: Any) -> str:
    origin = typing.get_origin(tp)
    if origin is Literal:
        return "|".join(map(str, typing.get_args(tp)))
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_type_name(a) for a in typing.get_args(tp) if a is not type(None)) + " (optional)"
    return getattr(tp, "__name__", str(tp))


def _coerce(value: Any, tp: Any, where: str) -> Any:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _coerce(value, arg, where)
            except OperatorError as exc:
                errors.append(str(exc))
        raise OperatorError(errors[0] if errors else f"{where}: invalid value {value!r}")
    if origin is Literal:
        choices = typing.get_args(tp)
        if value in choices:
            return value
        raise OperatorError(f"{where}: {value!r} is not one of {', '.join(map(str, choices))}")
    if tp is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false", "1", "0", "yes", "no"):
            return value.lower() in ("true", "1", "yes")
        raise OperatorError(f"{where}: {value!r} is not a boolean")
    if tp is float:
        if isinstance(value, bool):
            raise OperatorError(f"{where}: {value!r} is not a number")
        try:
            out = float(value)
        except (TypeError, ValueError):
            raise OperatorError(f"{where}: {value!r} is not a number") from None
        if not np.isfinite(out):
            raise OperatorError(f"{where}: {value!r} is not a finite number")
        return out
    if tp is int:
        if isinstance(value, bool):
            raise OperatorError(f"{where}: {value!r} is not an integer")
        try:
            f = float(value)
        except (TypeError, ValueError):
            raise OperatorError(f"{where}: {value!r} is not an integer") from None
        if not f.is_integer():
            raise OperatorError(f"{where}: {value!r} is not an integer")
        return int(f)
    if tp is str:
        if isinstance(value, (str, int, float)) and not isinstance(value, bool):
            return str(value)
        raise OperatorError(f"{where}: {value!r} is not a string")
    return value


def make_operator(
    name: str, params: dict[str, Any], *, where: str = "operator", check_resources: bool = True
) -> Operator:
    """Build and validate the operator ``name`` from raw parameters (YAML or CLI strings);
    with ``check_resources`` also check that what it needs on this machine is there."""
    cls = OPERATORS.get(name)
    hints = typing.get_type_hints(cls)
    valid = {f.name: f for f in fields(cls)}
    unknown = sorted(set(params) - set(valid))
    if unknown:
        raise OperatorError(
            f"{where}: unknown parameter {unknown[0]!r} for operator {name!r}; valid: {', '.join(valid) or '(none)'}"
        )
    kwargs = {}
    for pname, f in valid.items():
        if pname in params:
            kwargs[pname] = _coerce(params[pname], hints[pname], f"{where}: {name}.{pname}")
        elif f.default is MISSING and f.default_factory is MISSING:
            raise OperatorError(f"{where}: operator {name!r} needs parameter {pname!r}")
    op = cls(**kwargs)
    op.validate()
    if check_resources:
        op.check_resources()
    return op


@dataclass(frozen=True)
class Chain:
    """An ordered tuple of operators: one side's acoustic condition. ``draw`` (0, 1, …) is which
    realisation of its random operators this is (``trials: {operator_draws: K}``); draw 0 is
    the only one of a run without repeated draws and keeps the plain fingerprint."""

    ops: tuple[Operator, ...] = ()
    draw: int = 0

    @property
    def effective(self) -> tuple[Operator, ...]:
        return tuple(op for op in self.ops if not op.is_identity)

    def records(self) -> list[dict[str, Any]]:
        return [dict(op.to_record(), version=op.version) for op in self.effective]

    @cached_property
    def fingerprint(self) -> str:
        """sha256 (16 hex) of the canonical records of its non-identity operators and versions
        (with the draw index when it is above 0); computed once per chain (operators are frozen)."""
        if self.draw:
            return sha256_text(canonical_json({"chain": self.records(), "draw": self.draw}))[:16]
        return sha256_text(canonical_json(self.records()))[:16]

    @property
    def stochastic(self) -> bool:
        """Whether an operator of the chain draws from its generator."""
        return any(op.stochastic for op in self.effective)

    def with_draw(self, draw: int) -> Chain:
        """This chain's realisation ``draw``; a chain with no random operator has only draw 0."""
        return Chain(self.ops, draw if self.stochastic else 0)

    @property
    def label(self) -> str:
        if not self.effective:
            return "clean"
        return "+".join(
            op.name + "(" + ",".join(f"{k}={v}" for k, v in op.params().items()) + ")" for op in self.effective
        )

    @property
    def draws_talkers(self) -> bool:
        return any(op.draws_talkers for op in self.effective)

    def resource_problems(self) -> list[str]:
        """Messages of every operator whose resources are missing on this machine."""
        problems = []
        for op in self.effective:
            try:
                op.check_resources()
            except OperatorError as exc:
                problems.append(str(exc))
        return problems

    def key(self, exclude_speakers: frozenset[str] = frozenset()) -> str:
        """Cache/seed key: the fingerprint, plus a hash of the excluded speakers when an
        operator draws other talkers (so a cached mix never includes a trial's speaker)."""
        if not self.draws_talkers:
            return self.fingerprint
        return f"{self.fingerprint}~{sha256_text(canonical_json(sorted(exclude_speakers)))[:8]}"

    def inputs_fingerprint(self, corpus: Any) -> str:
        """sha256 (8 hex) of what the chain's operators read beyond their parameters
        (:meth:`Operator.inputs`, e.g. the talker pool of ``corpus``); ``""`` when none does."""
        inputs = [[i, op.name, got] for i, op in enumerate(self.effective) if (got := op.inputs(corpus)) is not None]
        return sha256_text(canonical_json(inputs))[:8] if inputs else ""

    def files_fingerprint(self) -> str:
        """sha256 (8 hex) of the inputs of the chain's operators that read files from disk (their
        contents' sha256); ``""`` when none does. Part of the run id."""
        inputs = [[i, op.name, op.inputs(None)] for i, op in enumerate(self.effective) if op.reads_files]
        return sha256_text(canonical_json(inputs))[:8] if inputs else ""

    def __add__(self, other: Chain) -> Chain:
        return Chain(self.ops + other.ops, max(self.draw, other.draw))

    def apply(
        self,
        x: np.ndarray,
        *,
        utterance_sha256: str,
        make_ctx: typing.Callable[[np.random.Generator], OpContext],
        key: str | None = None,
    ) -> tuple[np.ndarray, list[dict[str, Any]]]:
        """Run every operator in order. Operator ``i`` draws from
        ``derive_rng("operator", utterance_sha256, key, i, name)`` (``key`` defaults to the
        fingerprint; see :meth:`key`)."""
        realised = []
        y = x
        n = len(x)
        for i, op in enumerate(self.effective):
            rng = derive_rng("operator", utterance_sha256, key or self.fingerprint, i, op.name)
            y, record = op.apply(y, make_ctx(rng))
            if len(y) != n and not op.changes_length:
                raise OperatorError(f"operator {op.name!r} changed the length from {n} to {len(y)} samples")
            if len(y) == 0:
                raise OperatorError(f"operator {op.name!r} produced no samples")
            n = len(y)
            if not np.isfinite(y).all():
                raise OperatorError(f"operator {op.name!r} produced non-finite samples")
            realised.append({"name": op.name, **record})
        return np.ascontiguousarray(y, dtype=np.float32), realised


def parse_chain(items: Any, *, where: str) -> Chain:
    """A chain from YAML: a list of ``{op: NAME, PARAM: VALUE, ...}`` mappings, or of strings
    ``NAME[:KEY=VALUE,...]`` as ``--op`` takes them (:mod:`interbias.operators.spec`)."""
    from interbias.operators.spec import op_mapping

    if items is None:
        return Chain()
    if not isinstance(items, list):
        raise OperatorError(f"{where}: an operator chain is a list of {{op: NAME, ...}} mappings")
    ops = []
    for i, item in enumerate(items):
        here = f"{where}[{i}]"
        if isinstance(item, str):
            item = op_mapping(item, where=here)
        if not isinstance(item, dict) or "op" not in item:
            raise OperatorError(f"{here}: each operator is a mapping with an 'op' key")
        params = {k: v for k, v in item.items() if k != "op"}
        try:
            ops.append(make_operator(str(item["op"]), params, where=here, check_resources=False))
        except OperatorError as exc:  # name the place in the file for every operator error
            msg = str(exc)
            raise OperatorError(msg if msg.startswith(here) else f"{here}: {msg}") from None
    return Chain(tuple(ops))


def register_operator(cls: type[Operator]) -> type[Operator]:
    """Class decorator: register an operator under its :attr:`Operator.name` (written once, in
    the class)."""
    OPERATORS.register(cls.name)(cls)
    return cls


def _import_operators() -> None:
    """Import every module of this package, in name order (deterministic): each operator
    registers itself where it is defined (:func:`register_operator`)."""
    for module in pkgutil.iter_modules(__path__, prefix=f"{__name__}."):
        importlib.import_module(module.name)


_import_operators()
