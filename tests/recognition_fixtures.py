"""A tiny CM manifest with three algorithms: bona fide tones, buzzy 'A01' and noisy-chirp 'A02'."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import soundfile as sf
from cm_fixtures import SPEAKERS, clip

from interbias.corpora.manifest import Manifest, Utterance
from interbias.utils.seeding import derive_rng


def chirp(f0: float, key: str, seconds: float = 0.5, sample_rate_hz: int = 16000) -> np.ndarray:
    t = np.arange(int(seconds * sample_rate_hz)) / sample_rate_hz
    x = np.sin(2 * np.pi * (f0 + 3000 * t) * t) + 0.5 * derive_rng("rec-fixture", key).standard_normal(len(t))
    return (0.2 * x).astype(np.float32)


def three_class_manifest(root: Path, per_class: int = 3) -> Manifest:
    """``per_class`` clips per speaker of each algorithm (bonafide, A01, A02); ``root/manifest.csv``."""
    utts = []
    for spk, (gender, split) in SPEAKERS.items():
        base = 200.0 if gender == "female" else 110.0
        for alg in ("bonafide", "A01", "A02"):
            for i in range(per_class):
                uid = f"{spk}/{alg}{i}"
                path = root / f"{spk}_{alg}{i}.wav"
                path.parent.mkdir(parents=True, exist_ok=True)
                x = chirp(base + 7 * i, uid) if alg == "A02" else clip(alg == "A01", base + 7 * i, uid)
                sf.write(str(path), x, 16000)
                label = "bonafide" if alg == "bonafide" else "spoof"
                attrs = {"label": label, "split": split, "attack": alg}
                utts.append(Utterance(id=uid, path=path.name, speaker=spk, gender=gender, attrs=attrs))
    m = Manifest("tiny-cm3", root, tuple(utts))
    m.write(root / "manifest.csv")
    return m
