"""Every documented command runs: each ``--help`` example (the command's typer epilog) and each
``interbias ...`` line of a ``sh``/``console`` block in README.md and docs/guide/*.md is run
through the CLI, in a folder holding the small inputs it names, and must exit 0.

The commands are read from their sources (the command tree, the Markdown files), never from a
list kept here. What is kept here is the exceptions, each by its exact text, so that a stale one
fails (``test_every_exception_names_a_shown_command``):

- ``SUBSTITUTED``: an example run at a reduced size (a copy of the experiment that asks for fewer
  speakers, ``--encoders mfcc-stats``), with the reason;
- ``SKIPPED``: an example that is not run, with the reason (a download, a cluster, a corpus on disk
  that is not here);
- ``SLOW``: examples that need a whole run (the placeholders ``results/<run_id>`` and
  ``results/E16-294d65cc39f1`` become that run's folder) or minutes of CPU; they run under
  ``-m slow``, everything else in the default suite.
"""

from __future__ import annotations

import functools
import glob
import json
import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

import fake_corpora
import numpy as np
import pandas as pd
import pytest
import typer
import yaml
from conftest import write_calls
from synthetic_runs import gender_noise_run
from typer.testing import CliRunner

from interbias.cli import app
from interbias.utils.paths import conditions_dir
from interbias.utils.seeding import derive_rng

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs" / "guide").glob("*.md"))]
SHELL_BLOCKS = {"sh", "console", "bash", "shell"}
runner = CliRunner()


@dataclass(frozen=True)
class Example:
    where: str  # "help: run" or "README.md:111"
    line: str  # the command as shown, comment dropped: "interbias run E16 ..."


def help_examples() -> list[Example]:
    """The example line of every command's and group's ``--help`` (its typer epilog)."""
    found: list[Example] = []

    def walk(cmd: object, path: tuple[str, ...]) -> None:
        for line in re.findall(r"interbias [^\n`]+", getattr(cmd, "epilog", None) or ""):
            found.append(Example(f"help: {' '.join(path)}", line.strip()))
        for name, sub in sorted(getattr(cmd, "commands", {}).items()):
            if not sub.hidden:
                walk(sub, (*path, name))

    walk(typer.main.get_command(app), ())
    return found


def page_examples(page: Path) -> list[Example]:
    """The ``interbias ...`` lines of a Markdown page's sh/console blocks (``$ `` prompt and
    trailing ``# comment`` dropped)."""
    found, lang = [], None
    for number, raw in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        fence = re.match(r"^\s*```(\w*)", raw)
        if fence:
            lang = None if lang is not None else fence.group(1)
            continue
        line = raw.strip().removeprefix("$ ")
        if lang in SHELL_BLOCKS and re.match(r"^(?:\.venv/bin/)?interbias ", line):
            words = shlex.split(line, comments=True)
            found.append(Example(f"{page.relative_to(ROOT)}:{number}", " ".join(["interbias", *words[1:]])))
    return found


@functools.cache
def examples() -> tuple[Example, ...]:
    return tuple(help_examples() + [e for page in PAGES for e in page_examples(page)])


def lines() -> list[str]:
    """Each distinct command line once (a help example the guide repeats runs once)."""
    return sorted({e.line for e in examples()})


#: Example → (the command run instead, why). ``{e16}`` is conditions/E16.yaml copied with fewer
#: speakers and trials (the fix E16's refusal names for a small corpus), ``{run}`` the fixture run.
SUBSTITUTED: dict[str, tuple[str, str]] = {
    "interbias run E16 --corpus synthetic --encoders CAM++,mfcc-stats": (
        "interbias run {e16} --corpus synthetic --encoders mfcc-stats",
        "the demo takes minutes: E16's grid on the tiny corpus, one encoder",
    ),
    "interbias run E16 --corpus synthetic": (
        "interbias run {e16} --corpus synthetic --encoders mfcc-stats",
        "three encoders over the demo corpus take minutes: E16's grid on the tiny corpus",
    ),
    "interbias run E16 --manifest calls.csv --data-root calls --encoders mfcc-stats": (
        "interbias run {e16} --manifest calls.csv --data-root calls --encoders mfcc-stats",
        "the test's folder has 6 voices per gender, E16 asks for 22: the copy asks for 2",
    ),
    "interbias validate conditions/E16.yaml --manifest calls.csv --data-root calls --encoders mfcc-stats": (
        "interbias validate {e16} --manifest calls.csv --data-root calls --encoders mfcc-stats",
        "the test's folder has 6 voices per gender, E16 asks for 22: the copy asks for 2",
    ),
    "interbias data info calls.csv --data-root /data/calls": (
        "interbias data info calls.csv --data-root calls",
        "/data/calls is the test's calls/ folder",
    ),
    "interbias validate conditions/E16.yaml --manifest calls.csv --data-root /data/calls": (
        "interbias validate {e16} --manifest calls.csv --data-root calls",
        "/data/calls is the test's calls/ folder, 6 voices per gender: the copy asks for 2",
    ),
    "interbias run E16 --manifest calls.csv --data-root /data/calls --encoders CAM++": (
        "interbias run {e16} --manifest calls.csv --data-root calls --encoders mfcc-stats",
        "/data/calls is the test's calls/ folder; the copy asks for 2 voices; mfcc-stats is fast",
    ),
    "interbias run E16 --manifest calls.csv --data-root /data/calls --trials trials.txt --encoders CAM++": (
        "interbias run {e16} --manifest calls.csv --data-root calls --trials trials.txt --encoders mfcc-stats",
        "/data/calls is the test's calls/ folder; the copy asks for 2 voices; mfcc-stats is fast",
    ),
    "interbias data build synthetic": (
        "interbias data build synthetic --speakers 24",
        "48 voices take a minute to render: 24 (the smallest multiple it takes)",
    ),
    "interbias data build synthetic --speakers 96": (
        "interbias data build synthetic --speakers 24",
        "96 voices take minutes to render: 24 (the smallest multiple it takes)",
    ),
    "interbias data build synthetic --speakers 240": (
        "interbias data build synthetic --speakers 24",
        "240 voices take many minutes to render: 24 (the smallest multiple it takes)",
    ),
    "interbias scores cm-eval recognition reference.txt prediction.txt --unknown unknown": (
        "interbias scores cm-eval recognition classes.txt predicted.txt --unknown unknown",
        "the location example's reference.txt holds segment labels; this one reads class labels",
    ),
    "interbias audit geometry --encoder CAM++ --sentences 8": (
        "interbias audit geometry --encoder mfcc-stats --sentences 2",
        "CAM++ over 8 sentences per voice takes minutes: mfcc-stats, 2 sentences",
    ),
}

#: Example → why it is not run.
SKIPPED: dict[str, str] = {
    "interbias run E16 --corpus synthetic --plan results/<run_id>/plan.csv": (
        "a follow-up of the planned size renders thousands of voices per stratum (hours of CPU); "
        "tests/test_planner_run.py runs pilot → plan → run --plan on a small design"
    ),
    "interbias encoders fetch ECAPA-TDNN WavLM-Base+": "downloads checkpoints (network)",
    "interbias encoders fetch ECAPA-TDNN": "downloads checkpoints (network)",
    "interbias encoders verify": "checks the checkpoints `encoders fetch` pinned: none without a download",
    "interbias run E16 --corpus synthetic --executor ray --address auto": "needs a running Ray cluster",
    "interbias run E16 --corpus-root /shared/corpora/commonvoice --executor ray --address $head:6379": (
        "needs a Ray cluster and Common Voice on disk"
    ),
    "interbias run E14 --corpus synthetic --jobs 2": "E14 on the demo corpus takes tens of minutes of CPU",
    "interbias data info prompts.csv --data-root /usr/share/asterisk/sounds/en": (
        "Debian's asterisk prompts: run by tests/test_real_prompts.py where they are installed"
    ),
    "interbias run E01 --corpus-root ~/corpora/ravdess": "RAVDESS on disk (E01 needs its 24 actors)",
    "interbias cm train --model ResNet18-logspec --config small": "trains a ResNet-18: minutes of CPU",
    "interbias cm score AASIST a.flac b.wav --out scores.csv": "AASIST's published weights (download)",
    "interbias audit repair --encoder CAM++ --corpus synthetic --ablations --out results/repair": (
        "trains repairs over the demo corpus: minutes of CPU"
    ),
    "interbias audit blackbox score results/blackbox/protocol.csv --encoder CAM++": (
        "CAM++ over the demo corpus's black-box protocol: minutes of CPU"
    ),
    "interbias audit blackbox analyze results/blackbox/scores.csv --protocol results/blackbox/protocol.csv": (
        "reads the scores `audit blackbox score` writes (skipped above)"
    ),
}

#: Examples (after substitution, as shown) that run only under ``-m slow``: a whole run, or
#: the commands that read one.
SLOW_PATTERNS = (r"results/<run_id>", r"results/E16-", r"\binterbias run ", r"results/( |$)", r"data build", r"audit ")
SLOW_ALSO = {
    "interbias validate conditions/*.yaml",  # every experiment: a minute
    "interbias encoders embed a.wav b.wav --encoder CAM++",  # loading CAM++: tens of seconds
    "interbias data degrade in.wav out.wav --op noise:kind=babble,snr_db=5 --json",  # renders babble voices
}


def is_slow(line: str) -> bool:
    return line in SLOW_ALSO or any(re.search(p, line) for p in SLOW_PATTERNS)


def test_the_sources_show_the_commands() -> None:
    """The extraction finds the help examples and the guides' blocks (the own-data walkthrough of
    the README and corpora.md among them)."""
    where = {e.where.split(":")[0] for e in examples()}
    assert {"help", "README.md", "docs/guide/corpora.md", "docs/guide/analysis.md"} <= where
    assert len(help_examples()) >= 40
    shown = lines()
    assert "interbias data info calls.csv --data-root /data/calls" in shown
    assert any(line.startswith("interbias validate conditions/E16.yaml --manifest calls.csv") for line in shown)
    assert any(line.startswith("interbias run E16 --manifest calls.csv") for line in shown)


def test_every_exception_names_a_shown_command() -> None:
    """A substitution or skip of a command no page or help shows any more fails: no stale entry."""
    shown = set(lines())
    assert set(SUBSTITUTED) <= shown, set(SUBSTITUTED) - shown
    assert set(SKIPPED) <= shown, set(SKIPPED) - shown
    assert not set(SUBSTITUTED) & set(SKIPPED)
    assert SLOW_ALSO <= shown
    assert len(SKIPPED) == 14  # each named above with its reason
    ran = [line for line in shown if line not in SKIPPED]
    assert len(ran) >= 2 * len(SKIPPED)


# ---- the inputs the examples name ------------------------------------------------------------


def scores_files(folder: Path) -> None:
    """The small score files the ``scores`` examples read, in their documented formats."""
    rng = derive_rng("docs-examples")
    tar, non, spf = rng.normal(2, 1, 40), rng.normal(0, 1, 50), rng.normal(1, 1, 30)
    keyed = [("target", tar), ("nontarget", non), ("spoof", spf)]
    text = "".join(f"e{i} t{i} {float(s)!r} {k}\n" for k, xs in keyed for i, s in enumerate(xs))
    (folder / "sasv_scores.txt").write_text(text)
    (folder / "asv_scores.txt").write_text(text)
    (folder / "scores.txt").write_text("".join(line for line in text.splitlines(True) if "spoof" not in line))
    bona, spoof = rng.normal(1, 1, 40), rng.normal(-1, 1, 30)
    (folder / "cm_scores.txt").write_text(
        "".join(
            f"u{i} {float(s)!r} {k}\n"
            for i, (s, k) in enumerate([(x, "bonafide") for x in bona] + [(x, "spoof") for x in spoof])
        )
    )
    for name in ("round1.csv", "round2.csv", "aasist.csv", "rawgat.csv"):
        b, s = rng.normal(1, 1, 30), rng.normal(-1, 1, 30)
        pd.DataFrame({"score": np.r_[b, s], "label": ["bonafide"] * 30 + ["spoof"] * 30}).to_csv(
            folder / name, index=False
        )
    n = 80
    pd.DataFrame(
        {
            "score": np.r_[rng.normal(1, 1, n // 2), rng.normal(-1, 1, n // 2)],
            "label": [1] * (n // 2) + [0] * (n // 2),
            "attack": ["bonafide"] * (n // 2) + [f"A0{1 + i % 3}" for i in range(n // 2)],
            "codec": [f"C{i % 2}" for i in range(n)],
        }
    ).to_csv(folder / "cm_scores.csv", index=False)
    (folder / "r1_dsr.json").write_text(json.dumps({"dsr": 0.3791}))
    (folder / "reference.txt").write_text(
        "u1 0.00-1.00-T/1.00-2.00-F 0\nu2 0.00-2.50-T 1\nu3 0.00-0.50-F/0.50-2.00-T 0\n"
    )
    (folder / "prediction.txt").write_text("u1 0.00-1.50-T/1.50-2.00-F 0\nu2 0.00-2.50-T 1\nu3 0.00-2.00-T 1\n")
    (folder / "classes.txt").write_text("u1 A01\nu2 A02\nu3 bonafide\nu4 unknown\n")
    (folder / "predicted.txt").write_text("u1 A01\nu2 A01\nu3 bonafide\nu4 A02\n")
    sasv_trials(folder / "trials.csv")
    fairness_tables(folder)


def sasv_trials(path: Path) -> None:
    rng = derive_rng("docs-examples", "sasv")
    rows = []
    for cond in ("clean", "noise"):
        for gender in ("female", "male"):
            for key, asv_mu, cm_mu, n in (("target", 3, 2, 30), ("nontarget", -3, 2, 40), ("spoof", 2, -2, 30)):
                for a, c in zip(rng.normal(asv_mu, 1.5, n), rng.normal(cm_mu, 1.5, n), strict=True):
                    rows.append({"condition": cond, "gender": gender, "key": key, "asv_llr": a, "cm_llr": c})
    pd.DataFrame(rows).to_csv(path, index=False)


def fairness_tables(folder: Path) -> None:
    rng = derive_rng("docs-examples", "fairness")
    for name in ("eval.csv", "dev.csv"):
        rows = []
        for gender, shift in (("female", 0.0), ("male", 0.5)):
            for s in range(6):
                for t in range(6):
                    label = int(s == t)
                    rows.append(
                        {
                            "score": rng.normal(2.0 * label - shift, 1),
                            "label": label,
                            "gender": gender,
                            "enrol_speaker": f"{gender}{s}",
                            "test_speaker": f"{gender}{t}",
                        }
                    )
        pd.DataFrame(rows).to_csv(folder / name, index=False)


@pytest.fixture(scope="module")
def workspace(tiny_corpus, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with every input the examples name: ``calls/`` (WAV copies of the tiny corpus)
    and ``calls.csv`` (path,speaker,gender), ``in.wav``/``a.wav``/``b.wav``, score files, the
    E16 copy, and ``conditions`` (the catalogue)."""
    folder = tmp_path_factory.mktemp("docs-examples")
    calls = folder / "calls"
    rows = write_calls(tiny_corpus, calls, folder / "calls.csv").read_text().splitlines()
    wavs = sorted(calls.rglob("*.wav"))
    for name, src in (("in.wav", wavs[0]), ("a.wav", wavs[0]), ("b.wav", wavs[-1])):
        shutil.copy(src, folder / name)
    voxceleb_trials(folder / "trials.txt", rows[1:])
    data = yaml.safe_load((conditions_dir() / "E16.yaml").read_text())
    data["trials"] = {"targets": 40, "min_speakers": 2, "dev_share": 0.3}
    (folder / "E16.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    (folder / "conditions").symlink_to(conditions_dir())
    scores_files(folder)
    fake_corpora.ravdess(folder / "home" / "corpora" / "ravdess")
    for name in ("base", "new"):  # two runs of one model: `runs compare` finds no change
        gender_noise_run(
            folder / name, {"mfcc-stats": {(g, n): 2.0 for g in ("female", "male") for n in ("clean", "n5")}}
        )
    return folder


def voxceleb_trials(path: Path, rows: list[str]) -> None:
    """``label enrol test`` lines over the manifest's utterance ids (path without extension)."""
    utts = [(r.split(",")[0].removesuffix(".wav"), r.split(",")[1], r.split(",")[2]) for r in rows]
    out = []
    for i, (a, sa, ga) in enumerate(utts):  # pairs within a gender: each trial in one stratum
        for b, sb, _ in [u for u in utts[i + 1 :] if u[2] == ga][:3]:
            out.append(f"{int(sa == sb)} {a} {b}")
    path.write_text("\n".join(out) + "\n")


def command_args(line: str, folder: Path, run: Path | None) -> list[str]:
    """The CLI arguments of ``line`` as run in ``folder``: placeholders filled, globs expanded."""
    line = SUBSTITUTED.get(line, (line, ""))[0]
    line = line.replace("results/<run_id>", "{run}").replace("results/E16-294d65cc39f1", "{run}")
    if "{run}" in line:
        assert run is not None, line
        line = line.replace("{run}", str(run))
    line = line.replace("{e16}", str(folder / "E16.yaml"))
    args: list[str] = []
    for word in shlex.split(line)[1:]:
        word = re.sub(r"^~/", f"{folder / 'home'}/", word)  # as the shell expands it
        matched = sorted(glob.glob(word, root_dir=folder)) if "*" in word else []
        args += matched or [word]
    return args


#: Example → the example that writes its input (run first, in the same folder).
NEEDS = {
    "interbias data info ravdess.jsonl": "interbias data prepare ravdess --root ~/corpora/ravdess --out ravdess.jsonl",
}


def run_example(line: str, folder: Path, monkeypatch: pytest.MonkeyPatch, run: Path | None = None) -> str:
    monkeypatch.chdir(folder)
    if line in NEEDS:
        run_example(NEEDS[line], folder, monkeypatch, run)
    args = command_args(line, folder, run)
    if "--out" in args:  # a second run of an example writes anew (the guard keeps others' files)
        out = folder / args[args.index("--out") + 1]
        if out.is_file():
            out.unlink()
    res = runner.invoke(app, args)
    assert res.exit_code == 0, f"`{line}` ran as {args}:\n{res.output}"
    return res.output


FAST = [line for line in lines() if line not in SKIPPED and not is_slow(SUBSTITUTED.get(line, (line,))[0])]
SLOW = [line for line in lines() if line not in SKIPPED and line not in FAST]


@pytest.mark.parametrize("line", FAST)
def test_example_runs(line: str, workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_example(line, workspace, monkeypatch)


@pytest.fixture(scope="module")
def fixture_run(workspace: Path, monkeypatch_module: pytest.MonkeyPatch) -> Path:
    """The run ``results/<run_id>`` stands for: E16's copy on the test's own-data folder, with
    CAM++ and mfcc-stats (``fuse``'s example fuses the two), written under ``results/``."""
    before = set((workspace / "results").glob("*")) if (workspace / "results").is_dir() else set()
    line = "interbias run {e16} --manifest calls.csv --data-root calls --encoders CAM++,mfcc-stats"
    run_example(line, workspace, monkeypatch_module)
    (made,) = set((workspace / "results").glob("*")) - before
    return made


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as patch:
        yield patch


@pytest.mark.slow
@pytest.mark.parametrize("line", SLOW)
def test_slow_example_runs(line: str, workspace: Path, fixture_run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_example(line, workspace, monkeypatch, fixture_run)
