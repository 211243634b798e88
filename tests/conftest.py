"""Shared fixtures: an isolated cache, a tiny synthetic corpus, tiny experiments."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import soundfile as sf
import yaml
from hypothesis import settings

from interbias.corpora.synthetic import SyntheticSpec, build

# One verdict per commit: every hypothesis test draws the same examples on every run (derandomize)
# and none replays a failure another run stored (no example database). Test files' own
# ``settings(...)`` inherit this profile, which conftest loads before they are imported.
settings.register_profile("interbias", derandomize=True, database=None)
settings.load_profile("interbias")

#: A small grid for fast tests: 2 accents × 2 genders × 3 voices, neutral, 5 sentences.
TINY = {"accents": ["us", "wi"], "age_bands": ["adult"], "voices_per_cell": 3, "styles": ["neutral"], "n_sentences": 5}


@pytest.fixture(scope="session")
def session_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("ibcache")
    os.environ["INTERBIAS_CACHE"] = str(path)
    return path


@pytest.fixture(scope="session")
def tiny_corpus(session_cache: Path):
    manifest, _ = build(SyntheticSpec.from_options(dict(TINY)), session_cache)
    return manifest


def wide_lines(text: str, width: int = 80) -> list[str]:
    """The lines of ``text`` over ``width`` characters, but a line that is one path alone (one
    token holding a ``/``): a path is never split, and a test's temporary folder is long (under
    pytest-xdist it gains ``popen-gwN/``)."""
    return [ln for ln in text.splitlines() if len(ln) > width and not (len(ln.split()) == 1 and "/" in ln)]


def gender_factor() -> dict:
    """The population factor most test experiments stratify by: gender, reference female."""
    return {
        "name": "gender",
        "type": "population",
        "attribute": "gender",
        "reference": "female",
        "levels": {"female": "female", "male": "male"},
    }


#: A protocol factor: no VAD (reference) or the energy VAD on every input of the cell.
VAD = {
    "name": "vad",
    "type": "protocol",
    "reference": "none",
    "levels": {"none": {"vad": "none"}, "on": {"vad": "energy"}},
}
#: Test-side Gaussian noise at 5 dB SNR against a clean reference.
NOISE = {
    "name": "noise",
    "type": "acoustic",
    "apply_to": "test",
    "reference": "clean",
    "levels": {"clean": [], "n5": [{"op": "noise", "kind": "gaussian", "snr_db": 5}]},
}


def tiny_experiment(tmp_path: Path, name: str = "T01", **overrides) -> Path:
    """Write a gender × noise experiment on the tiny corpus; returns its path."""
    data = {
        "name": name,
        "title": "tiny gender x noise",
        "corpus": {"name": "synthetic", "options": dict(TINY)},
        "factors": [
            gender_factor(),
            {
                "name": "noise",
                "type": "acoustic",
                "apply_to": "test",
                "reference": "clean",
                "levels": {"clean": [], "n10": [{"op": "noise", "kind": "gaussian", "snr_db": 10}]},
            },
        ],
        "trials": {"targets": 40, "min_speakers": 4},
    }
    data.update(overrides)
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def pytest_runtest_setup(item: pytest.Item) -> None:
    """speechbrain, once imported (the HyperPyYAML fixtures do), leaves proxy modules that
    break hypothesis's scan of sys.modules; drop the unloadable ones before every test."""
    from interbias.encoders import drop_unloadable_lazy_modules

    drop_unloadable_lazy_modules()


def write_calls(manifest, audio: Path, csv: Path) -> Path:
    """A user's corpus as the README describes it: WAV copies of ``manifest``'s recordings under
    ``audio`` (``<speaker>/<name>.wav``) and ``csv`` listing them as ``path,speaker,gender`` with
    paths relative to ``audio``; returns ``csv``."""
    rows = ["path,speaker,gender"]
    for u in manifest:
        x, rate = sf.read(manifest.resolve(u))
        rel = Path(u.speaker) / (Path(u.path).stem + ".wav")
        (audio / rel).parent.mkdir(parents=True, exist_ok=True)
        sf.write(audio / rel, x, rate)
        rows.append(f"{rel},{u.speaker},{u.get('gender')}")
    csv.write_text("\n".join(rows) + "\n")
    return csv
