"""``interbias validate``: the catalogue passes, broken experiment files give one line per error
and exit 1, nothing is run or written, and the cost estimate counts what a run embeds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from conftest import tiny_experiment
from typer.testing import CliRunner

from interbias.cli import app
from interbias.run.tasks.verification_estimate import embedding_items, utterance_table
from interbias.run.validate import validate_file
from interbias.utils.paths import conditions_dir

runner = CliRunner(env={"COLUMNS": "1000"})  # whole lines to match (80 columns: test_terminal_output)


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file())


def test_the_catalogue_is_valid_and_nothing_is_written(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("INTERBIAS_CACHE", str(tmp_path / "cache"))
    files = sorted(conditions_dir().glob("*.yaml"))
    attacks = [f for f in files if f.name.startswith("E24")]  # white-box attacks: GE2E has no gradient path
    res = runner.invoke(app, ["validate", *map(str, files)])  # the README's command
    assert res.exit_code == 0, res.output
    assert res.output.splitlines()[-1] == f"{len(files)} of {len(files)} file(s) valid"
    assert "note: GE2E left out of the default encoders: GE2E: white-box attacks" in res.output
    assert "note: run it with --encoders CAM++,mfcc-stats" in res.output
    refused = runner.invoke(app, ["validate", *map(str, attacks), "--encoders", "CAM++,GE2E"])  # named: as run
    assert refused.exit_code == 1 and "GE2E: white-box attacks (fgsm, pgd) are refused" in refused.output
    chosen = runner.invoke(app, ["validate", *map(str, attacks), "--encoders", "CAM++,mfcc-stats"])
    assert chosen.exit_code == 0, chosen.output
    assert "left out of the default encoders" not in chosen.output
    for f in files:  # every file and every variant is described
        exp = yaml.safe_load(f.read_text())
        assert f"{exp['name']}: corpus " in res.output
        for variant in exp.get("variants") or {}:
            assert f"{exp['name']} --corpus {variant}: corpus " in res.output
    assert "E14 --corpus synthetic: corpus synthetic, 6 strata × 7 chain setting(s) = 42 cells" in res.output
    assert _files(tmp_path) == []  # no run directory, no cache, nothing


def _broken(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    """Hostile experiment files of the suite and the one error line each must give."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    out: dict[str, tuple[Path, str]] = {}
    p = tiny_experiment(tmp_path, name="H02", frontend={"sample_rate_hz": 8_000_000_000})
    out["rate"] = (p, "H02.yaml: frontend.sample_rate_hz: 8000000000 Hz is outside 1000..384000 Hz")
    noise = [{"name": "noise", "type": "acoustic", "apply_to": "test", "reference": "clean"}]
    noise[0]["levels"] = {"clean": [], "w": [{"op": "warp", "amount": 2}]}
    p = tiny_experiment(tmp_path, name="H03", factors=noise)
    out["operator"] = (p, "unknown operator 'warp'")
    p = tmp_path / "H04.yaml"
    p.write_text("name: H04\nfactors: [\n")
    out["yaml"] = (p, "H04.yaml")
    p = tiny_experiment(tmp_path, name="H05", trials={"targets": -3})
    out["trials"] = (p, "H05.yaml: trials.targets")
    p = tiny_experiment(tmp_path, name="H06", variants={"bad": {"frontend": {"sample_rate_hz": 5}}})
    out["variant"] = (p, "variant bad")
    return out


def test_broken_files_give_one_line_each_and_exit_1(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("INTERBIAS_CACHE", str(tmp_path / "cache"))
    broken = _broken(tmp_path / "yaml")
    good = tiny_experiment(tmp_path / "yaml", name="OK1")
    before = _files(tmp_path)
    paths = [str(good), *(str(p) for p, _ in broken.values())]
    res = runner.invoke(app, ["validate", *paths], catch_exceptions=False)
    assert res.exit_code == 1
    assert "Traceback" not in res.output
    errors = [ln for ln in res.output.splitlines() if ln.startswith("error: ")]
    assert len(errors) == len(broken), res.output  # one line per broken file, none for the good one
    for (path, message), line in zip(broken.values(), errors, strict=True):
        assert line.startswith(f"error: {path}: ") and message in line, (line, message)
    assert "OK1: corpus synthetic, 2 strata × 2 chain setting(s) = 4 cells → 12 results rows" in res.output
    assert res.output.splitlines()[-1] == f"1 of {len(paths)} file(s) valid"
    assert _files(tmp_path) == before  # nothing written


def test_unknown_encoder_is_one_line(tmp_path: Path) -> None:
    p = tiny_experiment(tmp_path)
    res = runner.invoke(app, ["validate", str(p), "--encoders", "mfcc-stats,NoSuchNet"])
    assert res.exit_code == 1
    errors = [ln for ln in res.output.splitlines() if ln.startswith("error: ")]
    assert len(errors) == 1 and errors[0].startswith(f"error: {p}: unknown encoder 'NoSuchNet'; valid: ")


def test_json_output(tmp_path: Path) -> None:
    p = tiny_experiment(tmp_path)
    res = runner.invoke(app, ["validate", str(p), "--json", "--cache-dir", str(tmp_path / "c")])
    assert res.exit_code == 0, res.output
    (entry,) = json.loads(res.output)
    assert entry["errors"] == [] and entry["estimates"][0]["n_cells"] == 4


@pytest.mark.parametrize("cap", [None, 2])
def test_embedding_items_count_pools_and_chains(tmp_path: Path, cap: int | None) -> None:
    """A hand-made manifest: 2 female and 2 male speakers, 3 utterances each; the tiny experiment
    (gender × noise on the test side) embeds each stratum's utterances clean (enrol and the
    clean test cell share one chain) and once more under noise."""
    rows = [
        {"id": f"{s}-{i}", "path": f"{s}-{i}.wav", "speaker": s, "gender": g, "duration_s": 2.0}
        for s, g in (("f1", "female"), ("f2", "female"), ("m1", "male"), ("m2", "male"))
        for i in range(3)
    ]
    manifest = tmp_path / "m.jsonl"
    manifest.write_text("".join(json.dumps(r) + "\n" for r in rows))
    trials = {"targets": 4, "min_speakers": 2, **({"utterances_per_speaker": cap} if cap else {})}
    exp_path = tiny_experiment(tmp_path, corpus={"manifest": str(manifest)}, trials=trials)
    from interbias.experiments.schema import load_experiment

    exp = load_experiment(exp_path)
    table, source = utterance_table(exp, tmp_path)
    assert table is not None and source == "manifest m.jsonl"
    per_speaker = cap or 3
    n_utts = 4 * per_speaker
    assert embedding_items(exp, table) == (2 * n_utts, n_utts, 2.0 * n_utts)
    est = validate_file(exp_path, encoders=["mfcc-stats", "GE2E"], cache=tmp_path).estimates[0]
    assert est.n_embeddings == 2 * _items_run_embeds(exp_path) and est.n_rows == 4 * 2  # the drawn trials' items
    assert est.seconds is not None and est.seconds > 0


def test_a_manifest_without_an_id_column_is_read_as_run_reads_it(tmp_path: Path) -> None:
    """The README's own format (``path,speaker,gender``): an id defaults to the path without its
    extension, so the estimate counts the same utterances as the manifest with ids."""
    lines = ["path,speaker,gender"] + [
        f"{s}/{i}.wav,{s},{g}"
        for s, g in (("f1", "female"), ("f2", "female"), ("m1", "male"), ("m2", "male"))
        for i in range(3)
    ]
    manifest = tmp_path / "m.csv"
    manifest.write_text("\n".join(lines) + "\n")
    exp_path = tiny_experiment(tmp_path, corpus={"manifest": str(manifest)}, trials={"targets": 4, "min_speakers": 2})
    res = runner.invoke(app, ["validate", str(exp_path), "--encoders", "mfcc-stats", "--json"])
    assert res.exit_code == 0, res.output
    (entry,) = json.loads(res.output)
    assert entry["errors"] == []
    assert entry["estimates"][0]["n_utterances"] == 12
    assert entry["estimates"][0]["n_items"] == _items_run_embeds(exp_path)


def _items_run_embeds(exp_path: Path) -> int:
    """The (utterance, chain) items a run of the tiny gender × noise(test side) experiment embeds,
    from the trials it draws: every enrolment and clean-test utterance under the clean chain, every
    test utterance under the noise chain."""
    from interbias.corpora.manifest import Manifest
    from interbias.experiments.schema import load_experiment
    from interbias.run.inputs import draw_inputs

    exp = load_experiment(exp_path)
    trials, _ = draw_inputs(exp, Manifest.read(Path(exp.corpus.manifest)), None)
    enrol, test = set(trials.frame["enrol"]), set(trials.frame["test"])
    return len(enrol | test) + len(test)


def test_a_million_cell_grid_is_refused_in_seconds_with_its_count(tmp_path: Path) -> None:
    """``validate`` counts the grid before building a cell and refuses what ``run`` refuses."""
    import time

    levels = {f"l{i}": [{"op": "noise", "kind": "gaussian", "snr_db": i * 0.5}] for i in range(100)}
    factors = [{"name": n, "type": "acoustic", "apply_to": "test", "reference": "l0", "levels": levels} for n in "abc"]
    exp_path = tiny_experiment(tmp_path, name="G02", factors=factors)
    start = time.monotonic()
    res = runner.invoke(
        app, ["validate", str(exp_path), "--encoders", "mfcc-stats", "--cache-dir", str(tmp_path / "c")]
    )
    assert time.monotonic() - start < 10
    assert res.exit_code == 1
    assert (
        f"error: {exp_path}: G02: the grid has 1,000,000 cells (a 100 × b 100 × c 100) × 1 encoder(s) = 1,000,000 "
        "results rows, over the limit of 10,000" in res.output
    )


def test_a_per_utterance_population_attribute_must_be_declared_as_run_requires(tmp_path: Path) -> None:
    """A population factor by an attribute that varies within a speaker (``mood``): ``run`` refuses
    it unless the experiment declares it in ``utterance_attributes``; ``validate`` says the same."""
    lines = ["path,speaker,gender,mood"] + [
        f"{s}/{i}.wav,{s},{g},{'calm' if i % 2 else 'angry'}"
        for s, g in (("f1", "female"), ("f2", "female"), ("m1", "male"), ("m2", "male"))
        for i in range(4)
    ]
    manifest = tmp_path / "m.csv"
    manifest.write_text("\n".join(lines) + "\n")
    mood = {"name": "mood", "type": "population", "attribute": "mood", "reference": "calm",
            "levels": {"calm": "calm", "angry": "angry"}}  # fmt: skip
    args = {"corpus": {"manifest": str(manifest)}, "trials": {"targets": 4, "min_speakers": 2}}
    bare = tiny_experiment(tmp_path, name="U1", factors=[mood], **args)
    res = runner.invoke(app, ["validate", str(bare), "--encoders", "mfcc-stats"])
    assert res.exit_code == 1
    assert "'mood' differs within 4 speaker(s)" in res.output and "utterance_attributes" in res.output
    declared = tiny_experiment(tmp_path, name="U2", factors=[mood], utterance_attributes=["mood"], **args)
    res = runner.invoke(app, ["validate", str(declared), "--encoders", "mfcc-stats"])
    assert res.exit_code == 0, res.output


def test_a_21_cubed_grid_counts_its_items_from_the_pools_not_item_by_item(tmp_path: Path) -> None:
    """9,261 cells (three test-side factors of 21 levels) on the tiny corpus: every test-side
    chain meets every utterance, the clean chain is shared with the enrolment side, so the items
    are 60 × 9,261; counted per chain from each side's pool (issue 53 case 9: validate listed
    every item of every cell and ran for minutes on the full corpus)."""
    from interbias.experiments.schema import load_experiment

    def factor(name: str, op: dict, key: str, values: list) -> dict:
        levels: dict = {"ref": []}
        levels.update({f"{name}{i}": [{**op, key: v}] for i, v in enumerate(values)})
        return {"name": name, "type": "acoustic", "apply_to": "test", "reference": "ref", "levels": levels}

    factors = [
        factor("n", {"op": "noise", "kind": "gaussian"}, "snr_db", list(range(1, 21))),
        factor("c", {"op": "clip"}, "threshold", [round(0.09 + 0.04 * i, 3) for i in range(20)]),
        factor("a", {"op": "agc"}, "threshold_db", [-58 + 2 * i for i in range(20)]),
    ]
    exp = load_experiment(tiny_experiment(tmp_path, name="G21", factors=factors))
    assert len(exp.cells()) == 21**3
    table, _ = utterance_table(exp, tmp_path)
    items, n_utts, _ = embedding_items(exp, table)
    assert (items, n_utts) == (60 * 21**3, 60)


def _refusals(tmp_path: Path) -> dict[str, tuple[Path, str, str]]:
    """Inputs ``run`` refuses before any work: (file, encoders, the line's start after the path)."""
    out: dict[str, tuple[Path, str, str]] = {}
    p = tiny_experiment(tmp_path, name="R1", trials={"targets": 40, "min_speakers": 2, "enrol_utterances": 9})
    out["enrolment"] = (p, "mfcc-stats", "R1: trials.enrol_utterances 9 needs 10 utterances of a speaker")
    attacks = {"methods": ["pgd"], "budgets": [0, 0.01], "trials": 2}
    p = tiny_experiment(tmp_path, name="R2", trials={"targets": 40, "min_speakers": 2, "dev_share": 0.4},
                        attacks=attacks)  # fmt: skip
    out["pgd-ge2e"] = (p, "GE2E", "GE2E: white-box attacks (fgsm, pgd) are refused")
    cm = tmp_path / "R3.yaml"
    one = {"name": "codec", "type": "acoustic", "apply_to": "test", "reference": "clean",
           "levels": {"clean": [], "mulaw": [{"op": "codec", "codec": "pcm_mulaw"}]}}  # fmt: skip
    cm.write_text(yaml.safe_dump({"name": "R3", "corpus": "synthetic", "countermeasures": {"models": ["AASIST"]},
                                  "factors": [one]}))  # fmt: skip
    out["cm-one-factor"] = (cm, "CAM++", "R3.yaml: a countermeasure experiment has two acoustic factors")
    p = tiny_experiment(tmp_path, name="R4", trials={"list": str(tmp_path / "absent.txt")})
    out["missing-list"] = (p, "mfcc-stats", f"trial list {tmp_path / 'absent.txt'} does not exist")
    listed = tmp_path / "pairs.txt"
    listed.write_text("1 nobody/a.wav nobody/b.wav\n0 nobody/a.wav someone/c.wav\n")
    p = tiny_experiment(tmp_path, name="R5", trials={"list": str(listed)})
    out["unmatched-list"] = (p, "mfcc-stats", f"trial list {listed}: 3 of 3 utterance name(s) match no entry")
    p = tiny_experiment(tmp_path, name="R6", scoring={"norm": "s-norm", "cohort": {"speakers": 50}})
    out["cohort"] = (p, "mfcc-stats", "R6: scoring.cohort needs 50 speakers")
    return out


@pytest.mark.parametrize("case", ["enrolment", "pgd-ge2e", "cm-one-factor", "missing-list", "unmatched-list", "cohort"])
def test_validate_refuses_what_run_refuses_before_any_work(case, tmp_path, session_cache, tiny_corpus) -> None:
    """Each input ``run`` refuses within seconds: ``validate`` exits 1 with the line ``run`` gives
    (issue 53 case 9: validate passed all five)."""
    from run_helpers import isolated_cache, run_args, run_child

    path, encoders, start = _refusals(tmp_path)[case]
    res = runner.invoke(app, ["validate", str(path), "--encoders", encoders, "--cache-dir", str(session_cache)])
    assert res.exit_code == 1, res.output
    errors = [line for line in res.output.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and errors[0].startswith(f"error: {path}: {start}"), res.output
    args = run_args(path, tmp_path / "out", isolated_cache(tmp_path / "c", session_cache))
    args[args.index("mfcc-stats")] = encoders
    done = run_child(args)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == "error: " + errors[0].removeprefix(f"error: {path}: ")


def test_an_external_list_is_counted_per_stratum_not_priced_as_sampled(tmp_path, session_cache, tiny_corpus) -> None:
    """``N trials per stratum`` is the trial spec's number for a sampled design; a list gives its
    own count (issue 53 case 9: any list printed 4000)."""
    spk = sorted({u.speaker for u in tiny_corpus})
    utts = {s: sorted(u.path for u in tiny_corpus if u.speaker == s) for s in spk}
    rows = [f"1 {utts[spk[0]][0]} {utts[spk[0]][1]}", f"0 {utts[spk[0]][0]} {utts[spk[1]][0]}",
            f"1 {utts[spk[2]][0]} {utts[spk[2]][2]}"]  # fmt: skip
    listed = tmp_path / "pairs.txt"
    listed.write_text("\n".join(rows) + "\n")
    noise = {"name": "noise", "type": "acoustic", "apply_to": "test", "reference": "clean",
             "levels": {"clean": [], "n10": [{"op": "noise", "kind": "gaussian", "snr_db": 10}]}}  # fmt: skip
    path = tiny_experiment(tmp_path, name="L1", factors=[noise], trials={"list": str(listed)})
    res = runner.invoke(app, ["validate", str(path), "--encoders", "mfcc-stats", "--cache-dir", str(session_cache)])
    assert res.exit_code == 0, res.output
    assert "4000 trials per stratum" not in res.output
    assert "3 trials from the list" in res.output, res.output


def test_validate_says_the_trials_the_sampler_draws_not_the_ask(tmp_path, session_cache, tiny_corpus) -> None:
    """The first line counts the trials the run will draw (the sampler's, at most what the
    corpus holds), the ask beside it when larger (issue 63: 2,000,000,000 asked "runs here" where
    the run drew 3,230); an ask whose trial list cannot fit in memory is warned of when the corpus
    is not here to cap it."""
    from interbias.experiments.schema import load_experiment
    from interbias.run.estimate import Estimate
    from interbias.run.tasks.verification_estimate import TRIAL_BYTES, trial_memory_note
    from interbias.trials.sampler import draw_trials

    path = tiny_experiment(tmp_path, name="A1", trials={"targets": 2_000_000_000, "min_speakers": 4})
    res = runner.invoke(app, ["validate", str(path), "--encoders", "mfcc-stats", "--cache-dir", str(session_cache)])
    assert res.exit_code == 0, res.output
    frame = draw_trials(load_experiment(path), tiny_corpus).frame
    per = frame.groupby("stratum").size()
    assert per.nunique() == 1 and per.iloc[0] < 4_000_000_000  # matched across strata, capped by the corpus
    assert f"; {per.iloc[0]} trials per stratum (of 4000000000 asked); runs here" in res.output, res.output
    est = Estimate("X", "c", n_strata=2, trials_per_stratum=4_000_000_000)
    note = trial_memory_note(est, available=2**30)
    assert note is not None and note.startswith("4,000,000,000 trials per stratum asked: if the corpus holds that")
    assert f"needs {8_000_000_000 * TRIAL_BYTES / 2**40:.3g} TiB of memory" in note and "1 GiB free" in note
    assert trial_memory_note(est, available=2**50) is None
    est.trials_drawn = True
    assert trial_memory_note(est, available=2**30) is None
