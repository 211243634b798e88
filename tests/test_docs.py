"""The README and the docs site say what is true: commands they show exist, links resolve,
every command's --help carries a runnable example, and no page narrates how it was built."""

from __future__ import annotations

import functools
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from interbias.cli import app
from interbias.utils.errors import DOCS_PAGES

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
runner = CliRunner()


@functools.cache
def help_of(path: tuple[str, ...]) -> tuple[int, str]:
    """Exit code and output of ``interbias PATH --help`` (each command asked once)."""
    res = runner.invoke(app, [*path, "--help"])
    return res.exit_code, res.output


@functools.cache
def command_tree() -> dict[tuple[str, ...], Any]:
    """Every command and group under ``interbias``, keyed by its path of names."""
    root = typer.main.get_command(app)
    found: dict[tuple[str, ...], Any] = {}

    def walk(cmd: Any, path: tuple[str, ...]) -> None:
        found[path] = cmd
        if is_group(cmd):
            for name, sub in cmd.commands.items():
                if not sub.hidden:  # an old name kept as an alias is not documented
                    walk(sub, (*path, name))

    walk(root, ())
    return found


def is_group(cmd: Any) -> bool:
    """A command with subcommands (typer ships its own click, so no isinstance on click's classes)."""
    return hasattr(cmd, "commands")


def resolve(words: list[str]) -> tuple[tuple[str, ...], list[str]]:
    """Split ``interbias`` arguments into the command path and the rest."""
    tree = command_tree()
    path: tuple[str, ...] = ()
    words = [w for w in words if w != "--debug"]  # the one option of `interbias` itself
    while words and (*path, words[0]) in tree:
        path, words = (*path, words[0]), words[1:]
    return path, words


def shown_commands(text: str) -> list[str]:
    """Every ``interbias ...`` command line in code blocks and inline code of a Markdown text."""
    lines = []
    for block in re.findall(r"```[a-z]*\n(.*?)```", text, flags=re.S):
        lines += [ln.split("#")[0].strip() for ln in block.splitlines()]
    lines += re.findall(r"`([^`\n]+)`", re.sub(r"```.*?```", "", text, flags=re.S))
    out = []
    for line in lines:
        m = re.match(r"^(?:\.venv/bin/)?interbias (.+)$", line.strip())
        if m:
            out.append(m.group(1))
    return out


def test_readme_is_short_and_starts_with_the_two_commands() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    first_block = re.search(r"```[a-z]*\n(.*?)```", text, flags=re.S)
    assert first_block is not None
    assert re.search(r"^make demo\b", first_block.group(1), flags=re.M)
    assert re.search(r"^make test\b", first_block.group(1), flags=re.M)


def check_commands_exist(md: Path) -> int:
    """Every ``interbias ...`` command shown in ``md`` exists: its ``--help`` exits 0."""
    shown = shown_commands(md.read_text(encoding="utf-8"))
    tree = command_tree()
    for args in shown:
        path, rest = resolve(shlex.split(args))
        assert path, f"{md.name} shows `interbias {args}`: no such command"
        paths = [path]
        if is_group(tree[path]) and rest and "|" in rest[0]:  # `interbias scores cm-eval eer|dsr`: each of them
            paths = [(*path, alt) for alt in rest[0].split("|")]
        for p in paths:
            assert p in tree and not is_group(tree[p]), f"{md.name}: `interbias {args}`: {' '.join(p)} is no command"
            code, output = help_of(p)
            assert code == 0, (md.name, args, output)
    return len(shown)


def test_every_command_shown_in_the_readme_exists() -> None:
    assert check_commands_exist(README) >= 10


def test_every_command_shown_in_the_docs_exists() -> None:
    assert sum(check_commands_exist(md) for md in sorted(DOCS.rglob("*.md"))) >= 30


def test_every_make_target_shown_in_the_readme_exists() -> None:
    targets = set(re.findall(r"^([a-z][a-z-]*):", (ROOT / "Makefile").read_text(), flags=re.M))
    shown = set(re.findall(r"`make ([a-z][a-z-]*)", README.read_text(encoding="utf-8")))
    shown |= set(re.findall(r"^make ([a-z][a-z-]*)", README.read_text(encoding="utf-8"), flags=re.M))
    assert {"demo", "test", "docs"} <= shown
    assert shown <= targets, shown - targets


def local_links(md: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", md.read_text(encoding="utf-8"), flags=re.S)
    links = re.findall(r"!?\[[^\]]*\]\(([^)\s]+)\)", text)
    return [ln for ln in links if not re.match(r"^(https?:|mailto:|#)", ln)]


def test_every_docs_link_in_the_readme_resolves_to_a_file() -> None:
    links = local_links(README)
    assert any(ln.startswith("docs/") for ln in links)
    for link in links:
        target = (README.parent / link.split("#")[0]).resolve()
        assert target.is_file(), f"README links to {link}, which is not a file"


def test_the_readme_screenshot_is_a_small_png() -> None:
    images = [ln for ln in local_links(README) if ln.endswith(".png")]
    assert images, "the README shows no screenshot"
    for link in images:
        data = (README.parent / link).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n", link
        assert len(data) < 400_000, (link, len(data))


def test_every_command_help_ends_with_a_runnable_example() -> None:
    tree = command_tree()
    assert len(tree) > 25  # the walk found the commands, groups and their subcommands
    for path, cmd in tree.items():
        if not path:
            continue
        code, output = help_of(path)
        assert code == 0, (path, output)
        flat = " ".join(output.split())
        example = next(
            (line for line in re.findall(r"interbias [^\n`]+", cmd.epilog or "") if starts_with(line, path)), None
        )
        assert example, f"interbias {' '.join(path)} --help shows no example of itself (typer epilog)"
        assert " ".join(example.split()[:3]) in flat
        example_path, args = resolve(shlex.split(example)[1:])
        leaf = tree[example_path]
        assert not is_group(leaf), example
        parse_example(leaf, example_path, args)


def starts_with(line: str, path: tuple[str, ...]) -> bool:
    """Whether the command line ``interbias ...`` runs ``path`` (or, for a group, one of its commands)."""
    try:
        words = shlex.split(line)[1:]
    except ValueError:
        return False
    return resolve(words)[0][: len(path)] == path


def parse_example(cmd: Any, path: tuple[str, ...], args: list[str]) -> None:
    """The example's options exist, its arguments are all taken and the required ones given
    (the command line is parsed only: files need not exist, nothing runs)."""
    parser = cmd.make_parser(cmd.context_class(cmd, info_name=" ".join(path)))
    values, extra, _ = parser.parse_args(list(args))
    assert not extra, (path, args, extra)
    required = {p.name for p in cmd.params if p.required}
    given = {name for name, value in values.items() if value not in (None, ())}
    assert required <= given, (path, args, required - given)


def test_an_example_with_an_unknown_option_or_a_missing_argument_fails_the_parse() -> None:
    run = command_tree()[("run",)]
    parse_example(run, ("run",), ["E16", "--corpus", "synthetic"])
    with pytest.raises(Exception, match="No such option: --no-such-option"):
        parse_example(run, ("run",), ["E16", "--no-such-option"])
    with pytest.raises(AssertionError):
        parse_example(run, ("run",), ["--corpus", "synthetic"])
    with pytest.raises(AssertionError):
        parse_example(run, ("run",), ["E16", "E17"])


#: How-it-was-built talk that has no place in user documentation.
PROCESS_TALK = [
    r"\bissues? ?#?\d+",
    r"\blent\b",
    r"\bsuperseded\b",
    r"\bthis project'?s sessions?\b",
    r"\bsessions? (?:of|for|in) (?:this|the) project\b",
    r"\b(?:engineering|coding|build|development|previous|earlier|later|next|this) sessions?\b",
]


def process_talk(text: str) -> list[str]:
    return [m.group(0) for p in PROCESS_TALK for m in re.finditer(p, text, flags=re.I)]


def test_process_talk_patterns_catch_process_and_spare_recordings() -> None:
    for phrase in (
        "the targets of issue 16",
        "see issue #31",
        "no GPU machine was lent to this project's sessions",
        "figures superseded by the next table",
        "measured in an earlier session",
    ):
        assert process_talk(phrase), phrase
    for phrase in (
        "every 4 sentences share a recording session",
        "onnxruntime sessions are deterministic",
        "`session` (TORGO session, VoxCeleb1 video)",
        "bad input is an issue for the user: one line",
        "the talent show",
    ):
        assert not process_talk(phrase), phrase


def test_no_process_talk_in_readme_or_docs() -> None:
    pages = [README, ROOT / "mkdocs.yml", *sorted(DOCS.rglob("*.md"))]
    assert len(pages) > 5
    found = {str(p.relative_to(ROOT)): process_talk(p.read_text(encoding="utf-8")) for p in pages}
    assert not {k: v for k, v in found.items() if v}


def test_error_messages_name_docs_pages_that_exist() -> None:
    assert DOCS_PAGES
    for page in DOCS_PAGES.values():
        assert (ROOT / page).is_file(), page


def test_the_speed_page_shows_one_whole_make_bench_run() -> None:
    """The speed page's figures are benchmarks/figures.md, included unchanged: written by
    ``make bench`` (its first line says so), with date and machine, one section per bench
    script, each exited 0 — a whole run, not tables pieced together by hand."""
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import run_all

    speed = (DOCS / "guide" / "speed.md").read_text(encoding="utf-8")
    assert '--8<-- "benchmarks/figures.md"' in speed
    figures = (ROOT / "benchmarks" / "figures.md").read_text(encoding="utf-8")
    lines = figures.splitlines()
    assert lines[0] == run_all.GENERATED
    assert re.match(r"Measured by `make bench` on \d{4}-\d\d-\d\d \(UTC\), commit \w+", lines[2])
    assert "logical cores" in lines[2]
    sections = re.findall(r"^### `(bench_\w+\.py)` \(\d+ s\)$", figures, flags=re.M)
    assert sections == [p.name for p in run_all.scripts()]
    assert not process_talk(figures)


def test_every_link_anchor_in_the_docs_is_ascii() -> None:
    """A link to a heading with a non-ASCII character (D̄, Λ) fails ``mkdocs build --strict``: such
    headings carry an explicit ASCII anchor (``{#id}``) and links name it."""
    pattern = re.compile(r"\]\(([^)\s]*#[^)\s]*)\)")
    bad = [
        f"{md.relative_to(ROOT)}: {target}"
        for md in sorted(DOCS.rglob("*.md"))
        for target in pattern.findall(md.read_text(encoding="utf-8"))
        if not target.isascii()
    ]
    assert not bad, bad
