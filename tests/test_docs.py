"""The README and the docs site say what is true: commands they show exist, links resolve,
every command's --help carries a runnable example, and no page narrates how it was built."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click
import pytest
import typer
from typer.testing import CliRunner

from interbias.cli import app
from interbias.errors import DOCS_PAGES

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
runner = CliRunner()


def command_tree() -> dict[tuple[str, ...], click.Command]:
    """Every command and group under ``interbias``, keyed by its path of names."""
    root = typer.main.get_command(app)
    found: dict[tuple[str, ...], click.Command] = {}

    def walk(cmd: click.Command, path: tuple[str, ...]) -> None:
        found[path] = cmd
        if isinstance(cmd, click.Group):
            for name, sub in cmd.commands.items():
                walk(sub, (*path, name))

    walk(root, ())
    return found


def resolve(words: list[str]) -> tuple[tuple[str, ...], list[str]]:
    """Split ``interbias`` arguments into the command path and the rest."""
    tree = command_tree()
    path: tuple[str, ...] = ()
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


def test_every_command_shown_in_the_readme_exists() -> None:
    shown = shown_commands(README.read_text(encoding="utf-8"))
    assert len(shown) >= 10, shown
    tree = command_tree()
    for args in shown:
        path, _ = resolve(shlex.split(args))
        assert path, f"README shows `interbias {args}`: no such command"
        assert not isinstance(tree[path], click.Group) or path == (), f"`interbias {args}` names a group only"
        res = runner.invoke(app, [*path, "--help"])
        assert res.exit_code == 0, (args, res.output)


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
        res = runner.invoke(app, [*path, "--help"])
        assert res.exit_code == 0, (path, res.output)
        flat = " ".join(res.output.split())
        m = re.search(r"Example: (interbias [^\n]+)", cmd.epilog or "")
        assert m, f"interbias {' '.join(path)} --help has no 'Example: interbias ...' line"
        assert " ".join(m.group(1).split()[:3]) in flat
        words = shlex.split(m.group(1))[1:]
        example_path, args = resolve(words)
        assert example_path[: len(path)] == path, (path, m.group(1))
        leaf = tree[example_path]
        assert not isinstance(leaf, click.Group), m.group(1)
        # options and argument counts parse (files need not exist: no callbacks, no type checks)
        leaf.make_context(" ".join(example_path), list(args), resilient_parsing=True)


def test_an_example_with_an_unknown_option_would_fail_the_parse() -> None:
    leaf = command_tree()[("run",)]
    with pytest.raises(click.exceptions.NoSuchOption):
        leaf.make_context("run", ["E16", "--no-such-option"], resilient_parsing=True)


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
