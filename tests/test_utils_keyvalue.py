"""utils/keyvalue.py: comma_list (the KEY=VALUE parser is tested through test_cm_train.py and test_cli_operators.py)."""

from __future__ import annotations

from interbias.utils.keyvalue import comma_list


def test_comma_list_strips_items_and_drops_empty_ones() -> None:
    assert comma_list(" a, b ,,c ,") == ["a", "b", "c"]
    assert comma_list("") == [] and comma_list(" , ") == []
