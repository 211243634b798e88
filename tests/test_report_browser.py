"""report.html rendered by headless Chromium (make test-slow installs Debian's chromium when missing)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from synthetic_runs import gender_noise_run
from typer.testing import CliRunner

from interbias.cli import app

MEANS = {
    "enc": {("female", "clean"): 3.0, ("female", "n10"): 2.5, ("male", "clean"): 1.0, ("male", "n10"): 0.5},
}


@pytest.mark.slow
def test_report_renders_in_headless_chromium(tmp_path: Path) -> None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("chromium is not installed (make test-slow installs Debian's chromium package)")
    run = gender_noise_run(tmp_path / "run", MEANS, n=10)
    res = CliRunner().invoke(app, ["report", str(run), "--bootstrap", "200"])
    assert res.exit_code == 0, res.output
    shot = tmp_path / "shot.png"
    cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"]
    cmd += ["--window-size=1200,2400", f"--screenshot={shot}", (run / "report.html").as_uri()]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert shot.is_file(), done.stderr[-2000:]
    from PIL import Image

    pixels = np.asarray(Image.open(shot).convert("L"), dtype=np.float64)
    assert pixels.shape == (2400, 1200)
    dark = (pixels < 128).mean()  # text, table rules and figure lines on a white page
    assert 0.002 < dark < 0.5 and pixels.std() > 10, (dark, pixels.std())
