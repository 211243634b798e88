"""The same-text CM set (``interbias data build same-text``): recorded telephone prompts as bona
fide speech and Debian's classic synthesisers reading the same texts as attacks.

The texts are ``n_texts`` prompts of the English recorded voice (:mod:`interbias.corpora.prompts`:
``en_US_f_Allison``, the voices read English), chosen without a draw: the prompts at the top of the
voice folder whose transcript is speech of at least ``min_words`` words and whose recording
holds at least ``min_signal_s`` of signal (the front end's rule), sorted by id, taken at even
steps. Every synthetic voice of :data:`interbias.corpora.synthesisers.VOICES` that runs here
reads each text; a voice whose program or voice files are missing is left out and named with
the packages that provide it, and a text a voice fails on (festival's diphone voices crash on
some) is one counted line, never a row.

Every file, bona fide and spoof, is brought to ``rate_hz`` (8 kHz: the prompts' own rate, so the
sample rate and bandwidth never reveal the label) with the polyphase resampler and stored as
16-bit FLAC, a file whose peak would clip attenuated to just under full scale (its
``gain_db``, counted in ``build.json``). Manifest columns: ``label`` (bonafide | spoof), ``split`` (eval), ``family``
(``recorded`` for the prompts, else the synthesiser family), ``voice``, ``gender``,
``text_id`` (the prompt id), ``text``, ``source_rate_hz`` (the rate the audio was made at) and,
for spoofs, ``attack`` (the family), so ``cm score --manifest`` and ``scores cm-eval track1
--by family`` break a CM's EER down per family. Built into the cache once per spec, voice set
and package versions; the same command gives a byte-identical manifest and audio.
"""

from __future__ import annotations

import os
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from interbias.audio.frontend import RATE_LIMITS_HZ
from interbias.corpora.manifest import Manifest, Utterance
from interbias.corpora.prompts import Prompt, PromptVoice, prompt_voice, prompts, spoken
from interbias.corpora.synthesisers import FAMILIES, VOICES, SynthVoice, package_versions, synthesise
from interbias.utils.errors import AudioError, CorpusError
from interbias.utils.progress import Reporter
from interbias.utils.seeding import canonical_json, sha256_text

VERSION = 1
NAME = "same-text"
#: Largest peak (full scale 1) a stored file may have; louder audio is attenuated to it.
PEAK = 0.99


@dataclass(frozen=True)
class SameTextSpec:
    """What the set holds: texts, the common rate and the text rules (the synthetic voices
    read English, so the texts are the English prompts)."""

    n_texts: int = 40
    rate_hz: int = 8000
    min_words: int = 4
    min_signal_s: float = 1.0

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> SameTextSpec:
        """The spec of ``--set`` options (``texts=N``, ``rate_hz=16000``, ``min_words=N``)."""
        names = {"texts": "n_texts", "rate_hz": "rate_hz", "min_words": "min_words"}
        unknown = sorted(set(options) - set(names))
        if unknown:
            raise CorpusError(f"{NAME}: unknown option {unknown[0]!r}; valid: {', '.join(sorted(names))}")
        kw: dict[str, Any] = {}
        for key, value in options.items():
            try:
                kw[names[key]] = int(value)
            except (TypeError, ValueError):
                raise CorpusError(f"{NAME}: {key} must be a whole number, got {value!r}") from None
            if kw[names[key]] < 1:
                raise CorpusError(f"{NAME}: {key} must be at least 1, got {value!r}")
        low, high = RATE_LIMITS_HZ
        if not low <= kw.get("rate_hz", low) <= high:
            raise CorpusError(f"{NAME}: rate_hz must be between {low} and {high} Hz, got {kw['rate_hz']}")
        return cls(**kw)


@dataclass
class SameTextSet:
    """A built set: its manifest, the voices that read the texts, those left out (voice, why),
    the renders that failed (one line each) and the build's seconds (0 when reused)."""

    manifest: Manifest
    record: dict[str, Any]
    seconds: float = 0.0
    built_now: bool = False
    left_out: list[str] = field(default_factory=list)

    @property
    def failures(self) -> list[str]:
        return list(self.record.get("failures", []))


def choose_texts(candidates: list[Prompt], spec: SameTextSpec) -> list[Prompt]:
    """The ``spec.n_texts`` prompts (module docstring), or a :class:`CorpusError` when fewer qualify."""
    from interbias.audio.frontend import decode, signal_duration_s

    eligible = []
    for p in candidates:
        if "/" in p.id or not spoken(p, min_words=spec.min_words):
            continue
        data, rate = decode(p.path)
        if signal_duration_s(data[:, 0], rate) >= spec.min_signal_s:
            eligible.append(p)
    if len(eligible) < spec.n_texts:
        raise CorpusError(
            f"{NAME}: {len(eligible)} prompts qualify (speech of ≥ {spec.min_words} words, "
            f"≥ {spec.min_signal_s:g} s of signal); {spec.n_texts} texts asked for"
        )
    return [eligible[i * len(eligible) // spec.n_texts] for i in range(spec.n_texts)]


def set_folder(cache: Path, spec: SameTextSpec, voices: list[SynthVoice], versions: dict[str, str]) -> Path:
    """Where the set of ``spec`` read by ``voices`` (at these package versions) lives."""
    key = {"v": VERSION, "spec": asdict(spec), "voices": [v.name for v in voices], "packages": versions}
    return cache / "corpora" / f"{NAME}-v{VERSION}-{sha256_text(canonical_json(key))[:10]}"


def build_same_text(
    spec: SameTextSpec, cache: Path, *, workers: int | None = None, reporter: Reporter | None = None
) -> SameTextSet:
    """Build (or reuse) the same-text set of ``spec`` under ``cache`` (module docstring)."""
    bona = prompt_voice("en")
    present = [v for v in VOICES if v.missing() is None]
    left_out = [f"{v.name} ({v.family}): {v.missing()}; {v.install_hint()}" for v in VOICES if v.missing()]
    if not present:
        raise CorpusError(f"{NAME}: no synthesiser runs here; " + "; ".join(left_out))
    packages = [bona.package] + [p for v in present for p in v.packages]
    versions = package_versions(packages)
    final = set_folder(cache, spec, present, versions)
    if (final / "manifest.jsonl").is_file():
        return SameTextSet(Manifest.read(final / "manifest.jsonl", name=NAME), _record(final), left_out=left_out)
    t0 = time.perf_counter()
    texts = choose_texts(prompts(bona), spec)
    work = final.with_name(final.name + f".partial-{os.getpid()}")
    shutil.rmtree(work, ignore_errors=True)
    (work / "raw").mkdir(parents=True)
    rows = [_bonafide_row(bona, p, work, spec) for p in texts]
    jobs = [(v, p) for v in present for p in texts]
    reporter = reporter or Reporter(quiet=True)
    results: list[dict[str, Any] | str] = []
    with reporter.task(f"{NAME}: {len(jobs)} renders", len(jobs)) as advance:
        with ThreadPoolExecutor(max_workers=workers or os.cpu_count() or 1) as pool:
            for result in pool.map(lambda job: _spoof_row(job[0], job[1], work, spec), jobs):
                results.append(result)
                advance(1)
    shutil.rmtree(work / "raw")
    failures = [r for r in results if isinstance(r, str)]
    rows += [r for r in results if isinstance(r, dict)]
    manifest = Manifest(NAME, work, tuple(Utterance.from_dict(r) for r in rows))
    manifest.write(work / "manifest.jsonl")
    record = {
        "version": VERSION, "spec": asdict(spec), "bonafide": bona.folder.name, "texts": [p.id for p in texts],
        "voices": [asdict(v) for v in present], "left_out": left_out, "failures": failures, "packages": versions,
        "attenuated": sorted(str(r["id"]) for r in rows if r["gain_db"] != "0.0"),
    }  # fmt: skip
    (work / "build.json").write_text(canonical_json(record) + "\n", encoding="utf-8")
    if final.exists():  # another process finished first: keep theirs
        shutil.rmtree(work)
    else:
        work.rename(final)
    manifest = Manifest.read(final / "manifest.jsonl", name=NAME)
    return SameTextSet(manifest, record, time.perf_counter() - t0, True, left_out)


def _record(folder: Path) -> dict[str, Any]:
    import json

    return json.loads((folder / "build.json").read_text(encoding="utf-8"))


def _store(x: np.ndarray, source_rate_hz: int, dest: Path, spec: SameTextSpec) -> dict[str, Any]:
    """``x`` at ``spec.rate_hz`` as 16-bit FLAC at ``dest``. Audio whose peak would reach full
    scale (the resampler overshoots near-full-scale synthesiser output) is attenuated to a peak of
    :data:`PEAK` rather than clipped; the gain is the row's ``gain_db`` (0 for the rest)."""
    from interbias.audio.frontend import resample, write_flac16

    y = resample(x, source_rate_hz, spec.rate_hz)
    peak = float(np.max(np.abs(y))) if len(y) else 0.0
    gain_db = 0.0
    if peak >= PEAK:
        y = y * np.float32(PEAK / peak)
        gain_db = round(20 * np.log10(PEAK / peak), 3)
    n, sha = write_flac16(dest, y, spec.rate_hz)
    return {
        "duration_s": round(n / spec.rate_hz, 6),
        "sample_rate_hz": spec.rate_hz,
        "sha256": sha,
        "gain_db": str(gain_db),
    }


def _bonafide_row(voice: PromptVoice, p: Prompt, work: Path, spec: SameTextSpec) -> dict[str, Any]:
    from interbias.audio.frontend import decode

    name = f"recorded-{voice.folder.name}"
    data, rate = decode(p.path)
    rel = f"audio/{name}/{p.id}.flac"
    stored = _store(data[:, 0], rate, work / rel, spec)
    return {
        "id": f"{name}/{p.id}", "path": rel, "speaker": name, "gender": voice.gender, "text": p.text, **stored,
        "label": "bonafide", "split": "eval", "family": "recorded", "voice": name, "text_id": p.id,
        "source_rate_hz": str(rate), "language": voice.language,
    }  # fmt: skip


def _spoof_row(voice: SynthVoice, p: Prompt, work: Path, spec: SameTextSpec) -> dict[str, Any] | str:
    """The manifest row of ``voice`` reading prompt ``p``, or one line saying why it failed."""
    from interbias.audio.frontend import decode

    raw = work / "raw" / voice.name / f"{p.id}.wav"
    raw.parent.mkdir(parents=True, exist_ok=True)
    problem = synthesise(voice, p.text, raw, raw.parent)
    if problem is not None:
        return f"{problem} on text {p.id}"
    rel = f"audio/{voice.name}/{p.id}.flac"
    try:
        data, rate = decode(raw)
        stored = _store(data[:, 0], rate, work / rel, spec)
    except AudioError as exc:
        return f"{voice.name}: {exc} on text {p.id}"
    return {
        "id": f"{voice.name}/{p.id}", "path": rel, "speaker": voice.name, "gender": voice.gender, "text": p.text,
        **stored, "label": "spoof", "split": "eval", "family": voice.family, "attack": voice.family,
        "voice": voice.name, "text_id": p.id, "source_rate_hz": str(rate), "language": "en",
    }  # fmt: skip


def family_counts(manifest: Manifest) -> dict[str, tuple[int, int]]:
    """``family → (voices, files)``, the recorded prompts first, then :data:`FAMILIES` in order."""
    out: dict[str, tuple[set[str], int]] = {}
    for u in manifest:
        voices, n = out.get(u.get("family") or "", (set(), 0))
        out[u.get("family") or ""] = (voices | {u.get("voice") or ""}, n + 1)
    order = ["recorded", *FAMILIES]
    keys = sorted(out, key=lambda f: (order.index(f) if f in order else len(order), f))
    return {k: (len(out[k][0]), out[k][1]) for k in keys}
