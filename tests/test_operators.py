from __future__ import annotations

import numpy as np
import pytest

from interbias.operators import Chain, OpContext, make_operator, parse_chain
from interbias.operators.levels import active_mask, active_power
from interbias.utils.errors import OperatorError
from interbias.utils.seeding import derive_rng


def speechlike(seed: str = "x", n: int = 32000) -> np.ndarray:
    rng = derive_rng("speechlike", seed)
    t = np.arange(n) / 16000
    env = (np.sin(2 * np.pi * 2.5 * t) > 0).astype(float)  # bursts with silences between
    return (env * (0.3 * np.sin(2 * np.pi * 180 * t) + 0.05 * rng.standard_normal(n))).astype(np.float32)


def apply(chain: Chain, x: np.ndarray, sha: str = "u1"):
    return chain.apply(x, utterance_sha256=sha, make_ctx=lambda rng: OpContext(16000, "u", "s", rng))


@pytest.mark.parametrize("snr", [-5.0, 0.0, 5.0, 15.0, 25.0])
def test_gaussian_noise_hits_requested_snr(snr: float) -> None:
    x = speechlike()
    chain = parse_chain([{"op": "noise", "kind": "gaussian", "snr_db": snr}], where="t")
    y, rec = apply(chain, x)
    mask = active_mask(x, 16000)
    achieved = 10 * np.log10(active_power(x, mask) / active_power(y.astype(np.float64) - x, mask))
    assert abs(achieved - snr) < 0.2
    assert rec[0]["snr_db_achieved"] == pytest.approx(snr, abs=1e-6)
    assert 0.3 < rec[0]["active_share"] < 0.7


def test_same_seed_same_bytes_other_utterance_other_draw() -> None:
    x = speechlike()
    chain = parse_chain([{"op": "noise", "kind": "gaussian", "snr_db": 10}], where="t")
    a, _ = apply(chain, x, "u1")
    b, _ = apply(chain, x, "u1")
    c, _ = apply(chain, x, "u2")
    assert a.tobytes() == b.tobytes()
    assert a.tobytes() != c.tobytes()


def test_identity_is_clean_and_has_empty_fingerprint_chain() -> None:
    assert parse_chain([{"op": "identity"}], where="t").fingerprint == Chain().fingerprint
    x = speechlike()
    y, rec = apply(parse_chain(["identity"], where="t"), x)
    assert y.tobytes() == x.tobytes() and rec == []


def test_silence_cannot_take_an_snr() -> None:
    chain = parse_chain([{"op": "noise", "kind": "gaussian", "snr_db": 10}], where="t")
    with pytest.raises(OperatorError, match="digital silence"):
        apply(chain, np.zeros(16000, np.float32))


def test_operator_validation_messages() -> None:
    with pytest.raises(OperatorError, match=r"noise.snr_db: 200.0 dB is outside \[-20, 80\]"):
        make_operator("noise", {"kind": "gaussian", "snr_db": 200})
    with pytest.raises(OperatorError, match="operator 'noise' needs parameter 'snr_db'"):
        make_operator("noise", {"kind": "gaussian"})
    with pytest.raises(OperatorError, match="'violet' is not one of gaussian"):
        make_operator("noise", {"kind": "violet", "snr_db": 3})
