"""One written form of an operator, ``NAME[:KEY=VALUE,...]``: ``--op`` on the command line and a
string item of a chain in an experiment file build the same operator."""

from __future__ import annotations

import pytest

from interbias.operators import parse_chain
from interbias.operators.spec import parse_op_spec, with_settings
from interbias.utils.errors import OperatorError


def test_a_spec_is_a_name_and_its_raw_parameters() -> None:
    assert parse_op_spec("codec") == ("codec", {})
    assert parse_op_spec(" noise : snr_db=5, kind=babble") == ("noise", {"snr_db": "5", "kind": "babble"})


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (":snr_db=3", "--op ':snr_db=3': expected NAME or NAME:KEY=VALUE[,KEY=VALUE...]"),
        ("noise:", "--op 'noise:': expected NAME or NAME:KEY=VALUE[,KEY=VALUE...]"),
        ("noise:snr_db", "--op 'noise:snr_db': 'snr_db': expected KEY=VALUE"),
        ("noise:snr_db=1,snr_db=2", "--op 'noise:snr_db=1,snr_db=2': snr_db: given twice"),
    ],
)
def test_a_malformed_spec_is_one_error_naming_it(spec: str, message: str) -> None:
    with pytest.raises(OperatorError) as exc:
        parse_op_spec(spec)
    assert str(exc.value) == message


def test_a_yaml_string_item_builds_the_operator_of_its_mapping() -> None:
    as_text = parse_chain(["noise:kind=gaussian,snr_db=5", "clip:threshold=0.3"], where="test")
    as_maps = parse_chain(
        [{"op": "noise", "kind": "gaussian", "snr_db": 5}, {"op": "clip", "threshold": 0.3}], where="test"
    )
    assert as_text.fingerprint == as_maps.fingerprint and as_text.label == as_maps.label
    with pytest.raises(OperatorError, match=r"^test\[0\]: unknown parameter 'snr' for operator 'noise'; valid: "):
        parse_chain(["noise:snr=5"], where="test")


def test_one_op_takes_set_parameters_and_several_are_a_chain() -> None:
    assert with_settings(["noise:kind=pink"], {"snr_db": "5"}) == ("noise", {"kind": "pink", "snr_db": "5"}, [])
    assert with_settings(["noise", "clip"], {}) == (None, {}, ["noise", "clip"])
    assert with_settings([], {}) == (None, {}, [])
    for specs, settings, message in (
        (["noise:snr_db=5"], {"snr_db": "6"}, "--op 'noise:snr_db=5' and --set both give 'snr_db'"),
        (["noise", "clip"], {"snr_db": "6"}, "--set snr_db: with several --op give each operator's parameters"),
        ([], {"snr_db": "6"}, "--set snr_db: no --op to apply it to"),
    ):
        with pytest.raises(OperatorError, match="^" + message.replace("(", r"\(")):
            with_settings(specs, settings)
