"""utils/keyvalue.py: comma_list (the KEY=VALUE parser is tested through test_cm_train.py and test_cli_operators.py)."""

from __future__ import annotations

from interbias.utils.keyvalue import comma_list


def test_comma_list_strips_items_and_drops_empty_ones() -> None:
    assert comma_list(" a, b ,,c ,") == ["a", "b", "c"]
    assert comma_list("") == [] and comma_list(" , ") == []


def test_typed_settings_types_each_value_after_its_field_and_lists_the_valid_keys() -> None:
    from dataclasses import dataclass

    import pytest

    from interbias.utils.errors import ConfigError
    from interbias.utils.keyvalue import typed_settings

    @dataclass(frozen=True)
    class Record:
        steps: int = 1
        lr: float = 0.1
        on: bool = True
        m: int | None = None
        axes: tuple[str, ...] = ("a",)

    pairs = {"steps": "20", "lr": "1e-3", "on": "no", "m": "none", "axes": "sem, voice"}
    assert typed_settings(Record, pairs, "--set") == {
        "steps": 20, "lr": 0.001, "on": False, "m": None, "axes": ("sem", "voice")
    }  # fmt: skip
    assert typed_settings(Record, {"m": "3", "on": "TRUE"}, "--set") == {"m": 3, "on": True}
    for pairs, message in (
        ({"step": "1"}, "--set: unknown setting 'step'; valid: steps, lr, on, m, axes"),
        ({"steps": "1.5"}, "--set: steps='1.5' is not an int"),
        ({"lr": "fast"}, "--set: lr='fast' is not a float"),
        ({"on": "maybe"}, "--set: on='maybe' is not a bool"),
    ):
        with pytest.raises(ConfigError) as exc:
            typed_settings(Record, pairs, "--set")
        assert str(exc.value) == message
    with pytest.raises(ConfigError, match=r"valid: steps, lr$"):
        typed_settings(Record, {"on": "1"}, "--set", keys=("steps", "lr"))
