"""Each operator owns its columns of operations.parquet: it declares them (``recorded``) and
fills every one from what it realised (``columns(record)``) — applied to a short signal, no
declared column is None or non-finite, so an operator that forgets a column (an achieved SNR
of None in every row) fails here, not silently in a run."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

from interbias.operators import OPERATORS, Chain, OpContext, Operator, make_operator
from interbias.run.operations import COLUMNS, flatten
from interbias.utils.seeding import derive_rng

RATE = 16000

#: One instance of each registered operator: its parameters (a new operator adds its row).
EXAMPLES: dict[str, dict[str, Any]] = {
    "agc": {},
    "clip": {"threshold": 0.2},
    "codec": {"codec": "gsm"},
    "crop": {"duration_s": 0.5, "where": "random"},
    "echo": {"delay_ms": 50},
    "filter": {"kind": "narrowband"},
    "gain": {"gain_db": 12},
    "identity": {},
    "noise": {"kind": "pink", "snr_db": 10},  # synthetic noise: no file, no talkers
    "packet_loss": {"rate": 0.2},
    "pitch": {"semitones": 2},
    "resample": {"rate_hz": 8000},
    "reverb": {"rt60_s": 0.4, "bank_size": 1},
    "time_scale": {"factor": 1.1},
}


def speech_like(seconds: float = 1.5) -> np.ndarray:
    """A voiced-sounding signal with pauses (active frames for the active-speech level)."""
    t = np.arange(int(seconds * RATE)) / RATE
    envelope = (np.sin(2 * np.pi * 3 * t) > -0.3).astype(float)
    x = 0.3 * envelope * (np.sin(2 * np.pi * 180 * t) + 0.5 * np.sin(2 * np.pi * 360 * t))
    return x.astype(np.float32)


#: Columns an example does not realise, so may leave empty (the others must be filled).
NOT_REALISED: dict[str, set[str]] = {"noise": {"noise_file", "noise_offset_s", "noise_talkers"}}


def unfilled(op: Operator, record: dict[str, Any]) -> list[str]:
    """The declared columns of ``op`` that its row leaves empty (None or not finite), but for
    those its example does not realise."""
    row = flatten(Chain((op,)), [record])
    expected = [c for c in op.recorded if c not in NOT_REALISED.get(op.name, set())]
    return [c for c in expected if row[c] is None or (isinstance(row[c], float) and not math.isfinite(row[c]))]


def realise(name: str, tmp_path: Path) -> tuple[Operator, dict[str, Any]]:
    op = make_operator(name, EXAMPLES[name])
    ctx = OpContext(RATE, "u", "s", derive_rng("columns", name), cache_dir=tmp_path)
    _, record = op.apply(speech_like(), ctx)
    return op, record


def test_every_operator_has_an_example_and_declares_its_own_columns() -> None:
    assert sorted(EXAMPLES) == OPERATORS.names(), "add the new operator's row to EXAMPLES"
    for name, cls in OPERATORS.items():
        assert "recorded" in vars(cls), f"{name}: declare recorded (() when its record stays in `realised`)"
        assert set(cls.recorded) <= set(COLUMNS), (name, cls.recorded)


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_an_operator_fills_every_column_it_declares(name: str, tmp_path: Path) -> None:
    op, record = realise(name, tmp_path)
    assert set(op.columns(record)) == set(op.recorded), name
    assert not unfilled(op, record), f"{name} leaves {unfilled(op, record)} empty in operations.parquet"
    row = flatten(Chain((op,)), [record])
    assert all(row[c] is None for c in NOT_REALISED.get(name, ())), "a column it did not realise holds a value"


def test_the_check_catches_an_operator_that_forgets_a_column(tmp_path: Path) -> None:
    """An operator that declares an achieved SNR but never fills it: its row has None there."""

    class Forgetful(Operator):
        name: ClassVar[str] = "forgetful"
        recorded: ClassVar[tuple[str, ...]] = ("snr_db_achieved",)

    assert unfilled(Forgetful(), {"snr_db_achieved": 9.5}) == ["snr_db_achieved"]
    noise, record = realise("noise", tmp_path)
    assert unfilled(noise, {**record, "snr_db_achieved": float("nan")}) == ["snr_db_achieved"]


def test_a_notice_is_the_operators_own_line() -> None:
    crop = make_operator("crop", {"duration_s": 2.0})
    assert crop.notice("c", [{"kept_whole": False}]) is None
    line = crop.notice("c", [{"kept_whole": True}, {"kept_whole": False}])
    assert line == (
        "note: c: the crop kept 1 of 2 utterance(s) whole (no longer than its 2 s window): those are scored "
        "on the audio without the crop"
    )
    echo = make_operator("echo", {"delay_ms": 100, "reflections": 3})
    assert echo.notice("e", [{"reflections_applied": 3}]) is None
    assert "added fewer than 3 reflection(s) to 1 of 2" in str(echo.notice("e", [{"reflections_applied": 1}, {}]))
