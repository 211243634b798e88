"""Every catalogue experiment that ``interbias list`` marks ✓ (runs here) runs to the end at its
smallest size: the synthetic corpus, one encoder (mfcc-stats), few trials per stratum. Slow
(minutes each; ``make test-slow``): issue 63 found E23 listed ✓ yet failing every time."""

from __future__ import annotations

from pathlib import Path

import pytest
from run_helpers import run_child

from interbias.utils.paths import conditions_dir

#: The catalogue's experiments (found by name only: which corpora run here is asked in the test).
NAMES = sorted(p.stem for p in conditions_dir().glob("*.yaml"))
#: Experiments run at their own size, not --max-trials 40: E22's WebRTC VAD trims one synthetic
#: utterance of the 40-trial draw to 0.93 s (under the 1 s minimum), which drops 1 of 40 trials,
#: 2.5 % > the 1 % --max-failure-share (a counted failure, exit 1); its 600 trials drop none.
FULL_SIZE = {"E22"}


def _runs_here(name: str) -> list[str]:
    """The corpora (default and variants) that ``interbias list`` marks ✓ for ``name``."""
    from interbias.experiments.schema import load_experiment
    from interbias.run.catalogue import describe_experiment

    path = conditions_dir() / f"{name}.yaml"
    exp = load_experiment(path)
    out = [exp.corpus.name] if describe_experiment(exp)["runnable"] else []
    for variant in sorted((exp.raw.get("variants") or {}).keys()):
        if describe_experiment(load_experiment(path, corpus=variant))["runnable"]:
            out.append(variant)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_a_listed_experiment_runs(name: str, tmp_path: Path, session_cache: Path) -> None:
    corpora = _runs_here(name)
    if not corpora:
        pytest.skip(f"{name}: not marked ✓ by interbias list here")
    for corpus in corpora:
        out = tmp_path / corpus
        size = [] if name in FULL_SIZE else ["--max-trials", "40"]
        args = ["run", name, "--corpus", corpus, "--encoders", "mfcc-stats", *size, "-q"]
        res = run_child([*args, "--out", str(out), "--cache-dir", str(session_cache)], timeout=3600)
        assert res.returncode == 0, f"{name} --corpus {corpus}: {res.stderr[-2000:]}"
        assert "Traceback" not in res.stderr
        assert list(out.glob("*/results.csv")), res.stdout[-2000:]
