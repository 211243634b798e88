"""The strict YAML reader of experiment files: keys are text as written, duplicates refused,
YAML 1.2 scalars, bounded alias expansion, UTF-8 only, and path-escaping experiment names
refused (issue 14, section 2)."""

from __future__ import annotations

import string
from pathlib import Path

import pytest
import yaml
from conftest import tiny_experiment
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from interbias.experiments import yamlfile
from interbias.experiments.schema import load_experiment
from interbias.utils.errors import ConfigError

FAST = settings(
    max_examples=60, derandomize=True, database=None, deadline=None, suppress_health_check=list(HealthCheck)
)


def _bomb(depth: int, width: int = 9) -> str:
    lines = ["name: E99", 'l0: &l0 ["lol"]']
    for i in range(1, depth + 1):
        lines.append(f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"


def test_a_duplicated_key_is_refused_naming_file_key_and_lines(tmp_path: Path) -> None:
    p = tmp_path / "dup.yaml"
    p.write_text("name: E1\nlevels:\n  g10: [a]\n  clean: []\n  g10: [b]\n")
    with pytest.raises(ConfigError) as info:
        yamlfile.load(p)
    assert str(info.value) == (
        "dup.yaml:5: key 'g10' appears twice in one mapping (lines 3 and 5); "
        'keys are text as written, so 1 and "1" are the same key'
    )


def test_one_and_quoted_one_are_the_same_key(tmp_path: Path) -> None:
    p = tmp_path / "one.yaml"
    p.write_text('levels:\n  1: a\n  "1": b\n')
    with pytest.raises(ConfigError, match=r"one.yaml:3: key '1' appears twice"):
        yamlfile.load(p)


def test_keys_are_text_as_written_and_values_follow_yaml_1_2() -> None:
    data = yamlfile.loads(
        "levels: {on: a, off: b, 5: c, yes: d, 1.50: e, null: f, ~: g}\n"
        "values: [on, off, yes, no, 1:30, 2020-01-01, 010, 0x1F, true, False, 1.5, .inf, null]\n",
        where="w",
    )
    assert list(data["levels"]) == ["on", "off", "5", "yes", "1.50", "null", "~"]
    assert data["values"] == [
        "on",
        "off",
        "yes",
        "no",
        "1:30",
        "2020-01-01",
        10,
        31,
        True,
        False,
        1.5,
        float("inf"),
        None,
    ]


def test_anchors_and_merges_still_work() -> None:
    data = yamlfile.loads("a: &x [1, {b: 2}]\nc: [*x, *x]\nm: &m {p: 1}\nn: {<<: *m, q: 2}\n", where="w")
    assert data["c"] == [[1, {"b": 2}], [1, {"b": 2}]]
    assert data["n"] == {"p": 1, "q": 2}


def test_a_billion_laughs_file_fails_fast_in_one_line(tmp_path: Path) -> None:
    p = tmp_path / "bomb.yaml"
    p.write_text(_bomb(9))  # 9**9 strings if expanded
    with pytest.raises(ConfigError) as info:
        yamlfile.load(p)
    assert str(info.value) == (
        f"bomb.yaml: aliases expand to more than {yamlfile.MAX_NODES} nodes (an alias bomb?); refused before expanding it"
    )


def test_recursive_alias_and_deep_nesting_are_one_line() -> None:
    with pytest.raises(ConfigError, match="an alias refers to a node that contains it"):
        yamlfile.loads("a: &x [1, *x]\n", where="w")
    with pytest.raises(ConfigError, match=r"nested too deeply|not valid YAML"):
        yamlfile.loads("[" * 20000, where="w")


def test_latin1_yaml_is_one_line(tmp_path: Path) -> None:
    p = tmp_path / "latin.yaml"
    p.write_bytes("name: café\n".encode("latin-1"))
    with pytest.raises(ConfigError) as info:
        yamlfile.load(p)
    assert str(info.value) == f"{p}: experiment file is not UTF-8 text (byte 0xe9 at offset 9); save it as UTF-8"


def test_a_bom_is_accepted(tmp_path: Path) -> None:
    p = tmp_path / "bom.yaml"
    p.write_bytes(b"\xef\xbb\xbfname: E1\n")
    assert yamlfile.load(p) == {"name": "E1"}


@pytest.mark.parametrize("name", ["../escape", "a/b", "..", ".hidden", "a\\b", "x\ny", ""])
def test_an_experiment_name_that_escapes_out_is_refused(tmp_path: Path, name: str) -> None:
    p = tiny_experiment(tmp_path, name="T01")
    data = yaml.safe_load(p.read_text())
    data["name"] = name
    p.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError) as info:
        load_experiment(p)
    if name:
        assert str(info.value).startswith(f"T01.yaml: name: {name!r} cannot name a run directory")


def test_yaml_1_1_level_names_reach_the_experiment_as_written(tmp_path: Path) -> None:
    text = tiny_experiment(tmp_path, name="B").read_text()
    line = next(ln for ln in text.splitlines() if ln.strip() == "clean: []")
    pad = line[: len(line) - len(line.lstrip())]
    text = text.replace(line, f"{pad}off: []\n{pad}5: []\n{pad}on: []").replace("reference: clean", "reference: 'off'")
    p = tmp_path / "B.yaml"
    p.write_text(text)
    exp = load_experiment(p)
    assert exp.factors[1].level_names == ["off", "5", "on", "n10"]


def test_an_absurd_front_end_rate_is_refused(tmp_path: Path) -> None:
    for sample_rate_hz, msg in (
        (10**9, "1000000000 Hz is outside 1000..384000 Hz"),
        (True, "must be a whole number of Hz"),
    ):
        p = tiny_experiment(tmp_path, name="R", frontend={"sample_rate_hz": sample_rate_hz})
        with pytest.raises(ConfigError, match=msg):
            load_experiment(p)


# ---- generated --------------------------------------------------------------------------------

_key_text = st.text(alphabet=string.ascii_letters + string.digits + "_.-", min_size=1, max_size=8).filter(
    lambda k: k not in ("<<",)
)


@FAST
@given(st.lists(_key_text, min_size=1, max_size=6, unique=True), st.data())
def test_generated_keys_come_back_as_the_text_written(keys: list[str], data: st.DataObject) -> None:
    quoted = [data.draw(st.booleans()) for _ in keys]
    text = "".join((f'"{k}"' if q else k) + f": {i}\n" for i, (k, q) in enumerate(zip(keys, quoted, strict=True)))
    try:
        loaded = yamlfile.loads(text, where="g")
    except ConfigError:  # a plain key that YAML reads as something else (e.g. "-a" or "..."): refused, not changed
        return
    assert list(loaded) == keys


@FAST
@given(_key_text, st.booleans(), st.booleans())
def test_generated_duplicates_are_always_refused(key: str, q1: bool, q2: bool) -> None:
    a = f'"{key}"' if q1 else key
    b = f'"{key}"' if q2 else key
    try:
        yamlfile.loads(f"{a}: 1\nz_other: 2\n{b}: 3\n", where="g")
    except ConfigError as exc:
        assert "appears twice" in str(exc) or "not valid YAML" in str(exc)
    else:
        pytest.fail("a duplicated key was accepted")


@FAST
@given(st.integers(min_value=4, max_value=12), st.integers(min_value=4, max_value=12))
def test_generated_alias_bombs_are_refused_or_small(depth: int, width: int) -> None:
    text = _bomb(depth, width)
    sizes = [2]  # l0: a list holding one string
    for _ in range(depth):
        sizes.append(1 + width * sizes[-1])
    total = 1 + 2 + sum(1 + s for s in sizes)  # the root, "name: E99", each key and its value
    if total <= yamlfile.MAX_NODES:
        yamlfile.loads(text, where="g")
    else:
        with pytest.raises(ConfigError, match="aliases expand to more than"):
            yamlfile.loads(text, where="g")
