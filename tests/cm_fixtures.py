"""A tiny CM manifest on disk: bona fide tones vs buzzy 'spoofs', speaker-disjoint splits."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import soundfile as sf

from interbias.corpora.manifest import Manifest, Utterance
from interbias.utils.seeding import derive_rng

#: The 2 × 2 test-side grid of the tracks tests (codec: clean, mu-law; noise: clean, 20 dB).
TRACK_FACTORS = """factors:
  - name: codec
    type: acoustic
    apply_to: test
    reference: clean
    levels: {clean: [], mulaw: [{op: codec, codec: pcm_mulaw}]}
  - name: noise
    type: acoustic
    apply_to: test
    reference: clean
    levels: {clean: [], g20: [{op: noise, kind: gaussian, snr_db: 20}]}
"""

#: speaker -> (gender, split)
SPEAKERS = {
    "f1": ("female", "train"), "m1": ("male", "train"), "f2": ("female", "train"), "m2": ("male", "train"),
    "f3": ("female", "dev"), "m3": ("male", "dev"),
    "f4": ("female", "eval"), "m4": ("male", "eval"),
}  # fmt: skip


def clip(spoof: bool, f0: float, key: str, seconds: float = 0.5, sample_rate_hz: int = 16000) -> np.ndarray:
    """A tone (bona fide) or a square-ish buzz with noise (spoof), seeded by ``key``."""
    t = np.arange(int(seconds * sample_rate_hz)) / sample_rate_hz
    rng = derive_rng("cm-fixture", key)
    x = np.sin(2 * np.pi * f0 * t)
    if spoof:
        x = np.sign(x) * 0.5 + 0.3 * rng.standard_normal(len(t))
    return (0.3 * x + 0.01 * rng.standard_normal(len(t))).astype(np.float32)


def cm_manifest(root: Path, per_class: int = 3, speakers: dict | None = None) -> Manifest:
    """``per_class`` bona fide and spoof clips per speaker; written as ``root/manifest.csv`` too."""
    utts = []
    for spk, (gender, split) in (speakers or SPEAKERS).items():
        base = 200.0 if gender == "female" else 110.0
        for label in ("bonafide", "spoof"):
            for i in range(per_class):
                uid = f"{spk}/{label}{i}"
                path = root / f"{spk}_{label}{i}.wav"
                path.parent.mkdir(parents=True, exist_ok=True)
                sf.write(str(path), clip(label == "spoof", base + 7 * i, uid), 16000)
                attrs = {"label": label, "split": split, "attack": "A01" if label == "spoof" else "bonafide"}
                utts.append(Utterance(id=uid, path=path.name, speaker=spk, gender=gender, attrs=attrs))
    m = Manifest("tiny-cm", root, tuple(utts))
    m.write(root / "manifest.csv")
    return m


def copy_attacks(tmp: Path, corpus: Manifest) -> Path:
    """An attack manifest (``tmp/attacks.csv``): one attack per speaker of ``corpus``, another
    speaker's file at half the amplitude."""
    import pandas as pd

    rows = []
    for i, spk in enumerate(corpus.speakers()):
        src = [u for u in corpus if u.speaker != spk][i]
        x, sample_rate_hz = sf.read(corpus.resolve(src), dtype="float32")
        sf.write(tmp / f"att-{i}.flac", 0.5 * x, sample_rate_hz)
        rows.append({"path": f"att-{i}.flac", "target_speaker": spk, "generator": "copy"})
    pd.DataFrame(rows).to_csv(tmp / "attacks.csv", index=False)
    return tmp / "attacks.csv"
