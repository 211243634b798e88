"""One strict YAML reader for every user experiment file.

PyYAML's safe loader quietly changes what a user wrote: a duplicated key keeps its last
value, YAML 1.1 turns ``on``/``off``/``yes``/``no`` into booleans and ``1:30`` into 90, a
numeric key becomes a number (so ``1:`` and ``"1":`` are two keys) and aliases can expand
without bound (a "billion laughs" file). This reader:

- keeps every mapping key as the text written (``on:`` is ``"on"``, ``5:`` is ``"5"``);
- refuses a key that appears twice in one mapping (``1:`` and ``"1":`` are the same key);
- reads values with YAML 1.2 core rules: booleans are only ``true``/``false``, integers are
  decimal (``010`` is ten; ``0x``/``0o`` prefixes allowed), ``yes``/``on``/``1:30`` and dates stay text;
- refuses aliases whose expansion exceeds :data:`MAX_NODES` nodes, and recursive aliases;
- refuses text that is not UTF-8 (a leading byte-order mark is accepted).

Every refusal is one :class:`ConfigError` naming the file (and the line where known).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from interbias.utils.errors import ConfigError
from interbias.utils.textfile import read_utf8

#: The most nodes a file may hold once every alias is expanded.
MAX_NODES = 100_000

_TIMESTAMP = "tag:yaml.org,2002:timestamp"
_BOOL = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
_INT = re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$")
_FLOAT = re.compile(
    r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
)


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader with YAML 1.2 core scalars, text keys and duplicate keys refused."""

    where = "YAML"

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[str, Any]:  # type: ignore[override]
        seen: dict[str, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = _key_text(key_node, self.where)
            line = key_node.start_mark.line + 1
            if key in seen:
                raise ConfigError(
                    f"{self.where}:{line}: key {key!r} appears twice in one mapping (lines {seen[key]} and {line}); "
                    'keys are text as written, so 1 and "1" are the same key'
                )
            seen[key] = line
        self.flatten_mapping(node)
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            out[_key_text(key_node, self.where)] = self.construct_object(value_node, deep=deep)
        return out

    def construct_yaml_int(self, node: ScalarNode) -> int:  # type: ignore[override]
        text = str(node.value)
        if text.startswith(("0x", "0o")):
            return int(text, 0)
        return int(text, 10)


def _key_text(node: Node, where: str) -> str:
    if not isinstance(node, ScalarNode):
        raise ConfigError(
            f"{where}:{node.start_mark.line + 1}: a mapping key must be plain text, not a list or mapping"
        )
    return str(node.value)


def _use_core_schema() -> None:
    resolvers: dict[Any, list[tuple[str, Any]]] = {}
    for first, entries in yaml.SafeLoader.yaml_implicit_resolvers.items():
        kept = [
            (tag, rx)
            for tag, rx in entries
            if tag not in ("tag:yaml.org,2002:bool", "tag:yaml.org,2002:int", "tag:yaml.org,2002:float", _TIMESTAMP)
        ]
        if kept:
            resolvers[first] = kept
    _StrictLoader.yaml_implicit_resolvers = resolvers
    _StrictLoader.add_implicit_resolver("tag:yaml.org,2002:bool", _BOOL, list("tTfF"))
    _StrictLoader.add_implicit_resolver("tag:yaml.org,2002:int", _INT, list("-+0123456789"))
    _StrictLoader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT, list("-+.0123456789"))
    _StrictLoader.add_constructor("tag:yaml.org,2002:int", _StrictLoader.construct_yaml_int)


_use_core_schema()


def _expanded_size(root: Node, where: str) -> int:
    """Nodes in ``root`` with every alias expanded (each shared node counted per use);
    stops as soon as the count passes :data:`MAX_NODES`; a node inside itself is refused."""
    sizes: dict[int, int] = {}
    # iterative post-order walk: deep nesting must not exhaust Python's stack
    stack: list[tuple[Node, bool]] = [(root, False)]
    open_: set[int] = set()
    while stack:
        node, done = stack.pop()
        if id(node) in sizes:
            continue
        children = _children(node)
        if not done:
            if id(node) in open_:
                raise ConfigError(f"{where}:{node.start_mark.line + 1}: an alias refers to a node that contains it")
            open_.add(id(node))
            stack.append((node, True))
            for child in children:
                if id(child) in open_:
                    raise ConfigError(
                        f"{where}:{child.start_mark.line + 1}: an alias refers to a node that contains it"
                    )
                if id(child) not in sizes:
                    stack.append((child, False))
            continue
        open_.discard(id(node))
        total = 1 + sum(sizes[id(c)] for c in children)
        if total > MAX_NODES:
            raise ConfigError(
                f"{where}: aliases expand to more than {MAX_NODES} nodes (an alias bomb?); refused before expanding it"
            )
        sizes[id(node)] = total
    return sizes[id(root)]


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return list(node.value)
    if isinstance(node, MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def loads(text: str, *, where: str) -> Any:
    """Parse one YAML document strictly (see the module docstring)."""
    loader: _StrictLoader | None = None
    try:
        loader = _StrictLoader(text)  # its reader refuses control characters at once
        loader.where = where
        node = loader.get_single_node()
        if node is None:
            return None
        _expanded_size(node, where)
        data = loader.construct_document(node)
        _check_plain(data, where)
        return data
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark else ""
        problem = " ".join(str(getattr(exc, "problem", None) or exc).split())
        raise ConfigError(f"{where}{line}: not valid YAML ({problem})") from None
    except RecursionError:
        raise ConfigError(f"{where}: nested too deeply to read") from None
    except (ValueError, TypeError, OverflowError) as exc:  # e.g. a timestamp or binary value that does not parse
        raise ConfigError(f"{where}: a value cannot be read ({exc})") from None
    finally:
        if loader is not None:
            loader.dispose()


def _check_plain(data: Any, where: str) -> None:
    """Refuse values an experiment cannot hold (``!!binary``, ``!!set``, ``!!omap`` and the like):
    only text, numbers, booleans, null, lists and mappings."""
    stack = [data]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
        elif value is not None and not isinstance(value, (str, int, float)):
            raise ConfigError(f"{where}: a value of type {type(value).__name__} (an explicit YAML tag?) is not allowed")


def load(path: Path) -> Any:
    """Read ``path`` strictly; errors name the file by its name."""
    path = Path(path)
    return loads(read_utf8(path, what="experiment file", error=ConfigError), where=path.name)
