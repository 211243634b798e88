"""`interbias runs inventory`: one row per run of a folder (Tables 5/6), checked by hand."""

from __future__ import annotations

import pandas as pd
import pytest
from conftest import wide_lines
from synthetic_runs import gender_noise_run
from typer.testing import CliRunner

from interbias.analysis.across.inventory import inventory
from interbias.cli import app

MEANS = {"m": {("female", "clean"): 2.0, ("female", "n10"): 1.5, ("male", "clean"): 2.0, ("male", "n10"): 1.2}}


def test_inventory_of_a_folder_of_runs(tmp_path) -> None:
    gender_noise_run(tmp_path / "r1", MEANS, n=6, m=3)
    gender_noise_run(tmp_path / "r2", {**MEANS, "k": MEANS["m"]}, n=8, m=2, seed="other")
    table = inventory([tmp_path]).set_index("run")
    for name, n, m, models in (("r1", 6, 3, 1), ("r2", 8, 2, 2)):
        res = pd.read_csv(tmp_path / name / "results.csv")
        row = table.loc[name]
        assert (row.n_encoders, row.n_cells, row.n_scored_rows) == (models, 4, 4 * models)
        assert row.n_trials == 2 * n * 2 * m  # two strata, n speakers, m target + m non-target each
        assert row.eer == pytest.approx(res.eer.mean()) and row.eer_sd == pytest.approx(res.eer.std(ddof=1))
        assert row.min_dcf == pytest.approx(res.min_dcf.mean()) and pd.isna(row.auc)
        assert row.corpus == "synthetic"
    out = tmp_path / "inv.csv"
    done = CliRunner(env={"COLUMNS": "80"}).invoke(app, ["runs", "inventory", str(tmp_path), "--out", str(out)])
    assert done.exit_code == 0, done.output
    assert pd.read_csv(out)["run"].tolist() == ["r1", "r2"]
    assert not wide_lines(done.output)


def test_a_folder_of_symbolic_links_to_runs_is_a_folder_of_runs(tmp_path) -> None:
    """Links are followed; a run linked twice is one row; a link back up ends the walk."""
    gender_noise_run(tmp_path / "real" / "r1", MEANS, n=6, m=3)
    gender_noise_run(tmp_path / "real" / "r2", MEANS, n=8, m=2, seed="other")
    links = tmp_path / "links"
    links.mkdir()
    (links / "a").symlink_to(tmp_path / "real" / "r1", target_is_directory=True)
    (links / "b").symlink_to(tmp_path / "real" / "r2", target_is_directory=True)
    (links / "b-again").symlink_to(tmp_path / "real" / "r2", target_is_directory=True)
    (links / "up").symlink_to(links, target_is_directory=True)
    assert inventory([links])["run"].tolist() == ["a", "b"]
    done = CliRunner().invoke(app, ["runs", "inventory", str(links), "--out", str(tmp_path / "inv.csv")])
    assert done.exit_code == 0, done.output
    assert pd.read_csv(tmp_path / "inv.csv")["n_trials"].tolist() == [2 * 6 * 2 * 3, 2 * 8 * 2 * 2]
