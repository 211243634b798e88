"""The embedded synthetic corpus: a factorial grid of espeak-ng voices, styles and sentences.

Voices cross gender × age band × accent (espeak-ng English accents) with per-voice pitch,
formant (vocal-tract scale and per-formant shifts, heights and widths), spectral tilt, rate,
stress, consonant strength, voicing, flutter, breath and roughness settings drawn from a seed
derived from the voice id. Styles and age bands are *prosodic proxies* (pitch level and range,
rate, amplitude, flutter, breathiness, whisper), not recorded emotion or ageing; the manifest
says so in ``attrs['proxy']``. Sentences are Harvard sentences (IEEE 1969, :mod:`interbias.corpora.harvard`).

Since v3 every voice is recorded in sessions of :data:`SESSION_SENTENCES` consecutive sentences
of one style, each with its own channel and prosody drift (:mod:`interbias.corpora.channel`:
room, microphone EQ and band limits, background at high SNR, level, pitch and rate drift),
so that a speaker's spectral average is not constant; ``session`` and the ``ch_*`` attributes
of the manifest say what each utterance went through. ``channel=0`` builds the dry v2-style
grid. This variability is part of the corpus: an experiment's clean level applies no operator.

The build is deterministic: a fresh process renders each voice in a fixed call sequence (libespeak-ng carries synthesis
state between calls within a process), audio is resampled to 16 kHz, recorded through its
session's channel and stored as 16-bit FLAC. Built once into the cache and reused.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, replace
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np

from interbias.corpora import CorpusAdapter, register
from interbias.corpora.channel import ROOM_BANK_KEY, Session, draw_session, room_bank
from interbias.corpora.harvard import SENTENCES
from interbias.corpora.manifest import Manifest, Utterance
from interbias.utils.errors import CorpusError
from interbias.utils.progress import Reporter
from interbias.utils.seeding import canonical_json, derive_rng, derive_seed

VERSION = 3
SYNTH = "espeak-ng 1.52 (espeakng-loader)"
#: Consecutive sentences of one style recorded in one session (same channel).
SESSION_SENTENCES = 4
#: Voices rendered in sequence by one fresh process (fixed, so bytes never depend on workers;
#: 1: a voice's audio does not depend on which other voices a spec holds).
VOICES_PER_PROCESS = 1
SAMPLE_RATE_HZ = 16000

#: accent code -> espeak-ng language file under lang/gmw
ACCENTS: dict[str, str] = {
    "us": "en-US",
    "gb": "en",
    "sc": "en-GB-scotland",
    "wi": "en-029",
    "rp": "en-GB-x-rp",
    "nyc": "en-US-nyc",
    "lancs": "en-GB-x-gbclan",
    "wmids": "en-GB-x-gbcwmd",
}
GENDERS = ("female", "male")
AGE_BANDS = ("young", "adult", "elderly")


@dataclass(frozen=True)
class Style:
    """Prosodic proxy of a speaking style: espeak pitch/range (0–100), rate factor, volume
    (0–200) and extra voice-file lines."""

    pitch: int
    pitch_range: int
    rate_factor: float
    volume: int
    extra: tuple[str, ...] = ()


STYLES: dict[str, Style] = {
    "neutral": Style(50, 50, 1.00, 100),
    "happy": Style(68, 85, 1.10, 115),  # cheerful
    "sad": Style(32, 18, 0.80, 75),
    "angry": Style(58, 95, 1.12, 150, ("roughness 5",)),
    "fearful": Style(72, 65, 1.22, 95, ("flutter 45",)),
    "calm": Style(44, 28, 0.86, 85),
    "whispered": Style(
        50,
        50,
        0.95,
        110,
        (
            "voicing 17",
            "breath 75 75 50 40 15 10",
            "breathw 150 150 200 200 400 400",
        ),
    ),
}


@dataclass(frozen=True)
class SyntheticSpec:
    """What to build. The defaults are the full factorial corpus (48 voices × 7 styles × 20
    sentences); smaller specs (options in an experiment's corpus entry) build elsewhere."""

    accents: tuple[str, ...] = ("us", "gb", "sc", "wi")
    genders: tuple[str, ...] = GENDERS
    age_bands: tuple[str, ...] = AGE_BANDS
    voices_per_cell: int = 2
    styles: tuple[str, ...] = tuple(STYLES)
    n_sentences: int = 20
    #: 1: every session of a voice has its own channel and prosody drift (see
    #: :mod:`interbias.corpora.channel`); 0: one dry channel for all (the v2 behaviour).
    channel: int = 1

    def n_cells(self) -> int:
        """Cells of gender × age band × accent (each holds ``voices_per_cell`` voices)."""
        return len(self.accents) * len(self.genders) * len(self.age_bands)

    def with_speakers(self, n: int) -> SyntheticSpec:
        """This spec with ``n`` voices in all, spread evenly over its cells."""
        cells = self.n_cells()
        if n < 1:
            raise CorpusError(f"synthetic: --speakers must be a positive number of voices, got {n}")
        if n < cells or n % cells:
            raise CorpusError(
                f"synthetic: --speakers must be a multiple of the {cells} cells of gender × age band × accent "
                f"({len(self.genders)} × {len(self.age_bands)} × {len(self.accents)}) to stay balanced; got {n}"
            )
        spec = replace(self, voices_per_cell=n // cells)
        spec.validate()
        return spec

    def validate(self) -> None:
        for a in self.accents:
            if a not in ACCENTS:
                raise CorpusError(f"synthetic: unknown accent {a!r}; valid: {', '.join(ACCENTS)}")
        for s in self.styles:
            if s not in STYLES:
                raise CorpusError(f"synthetic: unknown style {s!r}; valid: {', '.join(STYLES)}")
        for g in self.genders:
            if g not in GENDERS:
                raise CorpusError(f"synthetic: unknown gender {g!r}; valid: {', '.join(GENDERS)}")
        for b in self.age_bands:
            if b not in AGE_BANDS:
                raise CorpusError(f"synthetic: unknown age band {b!r}; valid: {', '.join(AGE_BANDS)}")
        if not 1 <= self.n_sentences <= len(SENTENCES):
            raise CorpusError(f"synthetic: n_sentences must be in 1..{len(SENTENCES)}")
        if self.voices_per_cell < 1:
            raise CorpusError("synthetic: voices_per_cell must be >= 1")
        if self.channel not in (0, 1):
            raise CorpusError("synthetic: channel must be 0 (dry) or 1 (per-session channels)")

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> SyntheticSpec:
        valid = {f for f in cls.__dataclass_fields__}
        unknown = sorted(set(options) - valid)
        if unknown:
            raise CorpusError(f"synthetic: unknown option {unknown[0]!r}; valid: {', '.join(sorted(valid))}")
        kw: dict[str, Any] = {}
        for key, value in options.items():
            if key in ("accents", "genders", "age_bands", "styles"):
                kw[key] = tuple(str(v) for v in (value if isinstance(value, list) else [value]))
            else:
                kw[key] = int(value)
        spec = cls(**kw)
        spec.validate()
        return spec

    def key(self) -> str:
        return hashlib.sha256(canonical_json({"v": VERSION, **asdict(self)}).encode()).hexdigest()[:10]


@dataclass(frozen=True)
class Voice:
    """One synthetic speaker: espeak-ng voice-file settings (percentages are of espeak's default)."""

    id: str
    gender: str
    age_band: str
    accent: str
    pitch_base_hz: float
    pitch_top_hz: float
    formants: tuple[tuple[int, int, int, int], ...]  # (n, freq %, height %, width %), n = 0..6
    rate_wpm: int
    flutter: int
    roughness: int
    breath: int
    #: Spectral tilt: (freq Hz, amplitude %) pairs of espeak's ``tone``.
    tone: tuple[int, ...]
    #: Per-stress-level pitch/amplitude offsets (espeak ``stressAdd``): idiolectal prosody.
    stress_add: tuple[int, ...]
    consonants: int
    voicing: int
    intonation: int


#: Per-formant spread (SD of the relative frequency shift) of formants 0..6 around the voice's
#: vocal-tract scale; formant 0 (nasal) is not scaled.
_FORMANT_SD = (0.104, 0.091, 0.091, 0.065, 0.052, 0.052, 0.039)


def _clipped_normal(rng: np.random.Generator, sd: float, lo: float, hi: float) -> float:
    return float(np.clip(rng.normal(0.0, sd), lo, hi))


def make_voices(spec: SyntheticSpec) -> list[Voice]:
    """The grid's voices; every voice's settings come from a seed derived from its id.

    Each voice draws a vocal-tract scale (female 1.04–1.24, male 0.86–1.04 of espeak's
    formant frequencies), independent shifts of each formant, formant heights and widths, a
    spectral tilt, pitch base and range, rate, idiolectal stress offsets, consonant strength,
    voicing and an intonation set; age bands shift pitch, rate, scale, flutter, roughness and
    breath (proxies of ageing). The spread was set so that voices are distinct for a trained
    speaker encoder without being trivially separable.
    """
    voices = []
    for accent in spec.accents:
        for gender in spec.genders:
            for band in spec.age_bands:
                for k in range(spec.voices_per_cell):
                    vid = f"{accent}-{gender[0]}-{band}-{k + 1}"
                    rng = derive_rng("synthetic-voice", VERSION, vid)
                    if gender == "female":
                        base = rng.uniform(160, 225)
                        top = base + rng.uniform(60, 130)
                        scale = rng.uniform(1.04, 1.24)
                    else:
                        base = rng.uniform(80, 130)
                        top = base + rng.uniform(25, 70)
                        scale = rng.uniform(0.86, 1.04)
                    words_per_min = rng.uniform(140, 195)
                    flutter = int(rng.integers(0, 15))
                    roughness = int(rng.integers(0, 4))
                    breath = int(rng.integers(0, 4))
                    if band == "young":
                        base, top, scale, words_per_min = base * 1.08, top * 1.08, scale + 0.03, words_per_min * 1.06
                    elif band == "elderly":
                        f = 0.88 if gender == "female" else 1.06
                        base, top, words_per_min = base * f, top * f, words_per_min * 0.85
                        scale -= 0.02
                        flutter += int(rng.integers(20, 40))
                        roughness += int(rng.integers(2, 4))
                        breath += int(rng.integers(2, 5))
                    formants = []
                    for n, sd in enumerate(_FORMANT_SD):
                        shift = 1 + sd * _clipped_normal(rng, 1.0, -2.5, 2.5)
                        freq = 100 * (scale if n else 1.0) * shift
                        height = 100 + _clipped_normal(rng, 23.0, -45, 45)
                        width = 100 + _clipped_normal(rng, 26.0, -50, 60)
                        formants.append((n, int(round(freq)), int(round(height)), int(round(width))))
                    tilt = rng.uniform(-1.3, 1.3)
                    tone = (
                        300,
                        round(100 + 35 * tilt),
                        1000,
                        100,
                        2500,
                        round(100 - 25 * tilt),
                        4500,
                        round(100 - 40 * tilt),
                    )
                    stress_add = tuple(int(round(x)) for x in rng.normal(0.0, 15.6, 8))
                    voices.append(
                        Voice(
                            id=vid,
                            gender=gender,
                            age_band=band,
                            accent=accent,
                            pitch_base_hz=round(base, 1),
                            pitch_top_hz=round(top, 1),
                            formants=tuple(formants),
                            rate_wpm=int(round(words_per_min)),
                            flutter=flutter,
                            roughness=roughness,
                            breath=breath,
                            tone=tuple(int(t) for t in tone),
                            stress_add=stress_add,
                            consonants=int(rng.integers(70, 130)),
                            voicing=int(rng.integers(85, 116)),
                            intonation=int(rng.integers(1, 5)),
                        )
                    )
    return voices


def voice_file(voice: Voice, style_name: str, lang_lines: list[str]) -> str:
    """An espeak-ng voice file: the accent's language settings plus this voice and style
    (a style's own ``voicing``/``flutter``/``roughness``/``breath`` lines replace the voice's)."""
    style = STYLES[style_name]
    lines = [f"name ib-{voice.id}-{style_name}"]
    lines += [ln for ln in lang_lines if not ln.startswith(("name", "maintainer", "status"))]
    lines.append(f"gender {voice.gender}")
    lines.append(f"pitch {int(voice.pitch_base_hz)} {int(voice.pitch_top_hz)}")
    lines += [f"formant {n} {fr} {h} {w}" for n, fr, h, w in voice.formants]
    lines.append("tone " + " ".join(map(str, voice.tone)))
    lines.append("stressAdd " + " ".join(map(str, voice.stress_add)))
    lines.append(f"consonants {voice.consonants}")
    lines.append(f"intonation {voice.intonation}")
    extra_keys = {e.split()[0] for e in style.extra}
    if "voicing" not in extra_keys:
        lines.append(f"voicing {voice.voicing}")
    if "flutter" not in extra_keys:
        lines.append(f"flutter {voice.flutter}")
    if "roughness" not in extra_keys:
        lines.append(f"roughness {voice.roughness}")
    if "breath" not in extra_keys and voice.breath:
        lines.append("breath " + " ".join([str(voice.breath)] * 6))
    lines += list(style.extra)
    return "\n".join(lines) + "\n"


def espeak_data_dir(build_dir: Path) -> Path:
    """A symlink farm of the shipped espeak-ng data with a private, writable ``voices``
    (custom voice files take effect only from a data folder the caller controls)."""
    import espeakng_loader

    src = Path(espeakng_loader.get_data_path())
    dst = build_dir / "espeak-ng-data"
    dst.mkdir(parents=True, exist_ok=True)
    for entry in src.iterdir():
        target = dst / entry.name
        if entry.name == "voices":
            if not target.exists():
                shutil.copytree(entry, target)
        elif not target.exists():
            target.symlink_to(entry)
    (dst / "voices" / "ib").mkdir(exist_ok=True)
    return dst


def render_jobs(
    data_dir: str, jobs: list[dict[str, Any]], rooms: list[np.ndarray] | None = None
) -> list[dict[str, Any]]:
    """Worker: render ``jobs`` in order in this (fresh) process and write their FLAC files.

    libespeak-ng carries synthesis state between calls within a process, so the bytes depend
    on the sequence of jobs a process renders: callers give each fresh process a fixed chunk.
    A job with a ``channel`` (a :class:`~interbias.corpora.channel.Session` as a dict) is
    recorded through it, with the background drawn from a seed derived from the job's id."""
    from interbias.audio.frontend import resample, write_flac16
    from interbias.corpora.channel import Session
    from interbias.corpora.channel import apply as apply_channel
    from interbias.corpora.espeak import Espeak

    engine = Espeak(Path(data_dir))
    libc = ctypes.CDLL("libc.so.6")
    out = []
    for job in jobs:
        cpu0 = time.process_time()
        seed = derive_seed("synthetic-utterance", VERSION, job["id"]) & 0x7FFFFFFF
        engine.set_random_seed(seed)
        libc.srand(seed)
        pcm = engine.synth(
            job["text"],
            job["voice"],
            words_per_min=job["words_per_min"],
            pitch=job["pitch"],
            pitch_range=job["range"],
            volume=job["volume"],
        )
        x = pcm.astype(np.float32) / 32768.0
        extra: dict[str, str] = {}
        if job.get("channel") is not None:  # resampled within the channel's frequency-domain pass
            session = Session(**job["channel"])
            rng = derive_rng("synthetic-background", VERSION, job["id"])
            x, extra = apply_channel(x, session, rooms or [], rng, SAMPLE_RATE_HZ, in_rate_hz=engine.sample_rate_hz)
        else:
            x = resample(x, engine.sample_rate_hz, SAMPLE_RATE_HZ)
        n, sha = write_flac16(Path(job["path"]), x, SAMPLE_RATE_HZ)
        cpu = time.process_time() - cpu0
        out.append({"id": job["id"], "duration_s": n / SAMPLE_RATE_HZ, "sha256": sha, "attrs": extra, "cpu_s": cpu})
    return out


def corpus_rooms(cache: Path) -> list[np.ndarray]:
    """The corpus's room bank (:func:`~interbias.corpora.channel.room_bank` at 16 kHz), simulated
    once and kept under ``cache/rir`` (simulating it takes a few seconds)."""
    from interbias.operators.reverb import BANK_VERSION

    path = cache / "rir" / f"synthetic-rooms-v{VERSION}-{ROOM_BANK_KEY}-shoebox-v{BANK_VERSION}.npz"
    if path.is_file():
        with np.load(path, allow_pickle=False) as data:
            return [data[f"room{k}"] for k in range(len(data.files))]
    rooms = room_bank(SAMPLE_RATE_HZ)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".partial-{os.getpid()}.npz")
    np.savez(tmp, **{f"room{k}": h for k, h in enumerate(rooms)})
    os.replace(tmp, path)
    return rooms


#: Modules a forkserver imports once, so that each fresh rendering process starts in
#: milliseconds instead of importing them again (libespeak-ng itself is loaded in the child).
_PRELOAD = ["interbias.corpora.synthetic", "interbias.audio.frontend", "scipy.signal", "scipy.fft", "soundfile"]


def render_chunks(
    data_dir: Path,
    chunks: list[list[dict[str, Any]]],
    workers: int | None,
    rooms: list[np.ndarray] | None = None,
    reporter: Reporter | None = None,
) -> tuple[dict[str, dict[str, Any]], int]:
    """Render every chunk in a fresh process (``workers`` at a time) forked from a forkserver
    that has the rendering modules imported but has never run libespeak-ng; results by job id
    and the number of processes used at a time. ``reporter`` shows utterances rendered."""
    n = max(1, min(len(chunks), workers or os.cpu_count() or 1))  # never more than chunks of work
    ctx = get_context("forkserver")
    ctx.set_forkserver_preload(_PRELOAD)  # no effect when this process's forkserver already runs
    done: dict[str, dict[str, Any]] = {}
    with (
        ProcessPoolExecutor(max_workers=n, mp_context=ctx, max_tasks_per_child=1) as pool,
        (reporter or Reporter(quiet=True)).task("synthetic corpus: rendering", sum(len(c) for c in chunks)) as advance,
    ):
        futures = [pool.submit(render_jobs, str(data_dir), chunk, rooms) for chunk in chunks]
        for f in futures:  # in submission order: the result never depends on finishing order
            batch = f.result()
            done.update((item["id"], item) for item in batch)
            advance(len(batch))
    return done, n


def _sessions(spec: SyntheticSpec, voice: Voice, style_name: str, n_rooms: int) -> dict[int, Session]:
    """The voice's recording sessions in ``style_name``: sentence index -> session."""
    names = {si: f"{style_name}-{(si - 1) // SESSION_SENTENCES + 1}" for si in range(1, spec.n_sentences + 1)}
    drawn = {
        name: draw_session(name, derive_rng("synthetic-session", VERSION, voice.id, name), n_rooms)
        for name in sorted(set(names.values()))
    }
    return {si: drawn[name] for si, name in names.items()}


def voice_jobs(
    spec: SyntheticSpec, v: Voice, data_dir: Path, work: Path, n_rooms: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """One voice's render jobs and manifest rows (voice files written into ``data_dir``)."""
    lang_lines = (data_dir / "lang" / "gmw" / ACCENTS[v.accent]).read_text().splitlines()
    jobs, rows = [], []
    for style_name in spec.styles:
        style = STYLES[style_name]
        fname = f"{v.id}-{style_name}"
        (data_dir / "voices" / "ib" / fname).write_text(voice_file(v, style_name, lang_lines))
        sessions = _sessions(spec, v, style_name, n_rooms)
        for si, text in enumerate(SENTENCES[: spec.n_sentences], 1):
            uid = utterance_id(v.id, style_name, si)
            rel = f"audio/{v.id}/{style_name}/s{si:02d}.flac"
            job = {"id": uid, "text": text, "voice": f"ib/{fname}", "path": str(work / rel)}
            job.update(words_per_min=v.rate_wpm * style.rate_factor, pitch=style.pitch, range=style.pitch_range)
            job.update(volume=style.volume, channel=None)
            attrs = {
                "sentence": f"s{si:02d}",
                "proxy": "age_band,style",
                "synth": SYNTH,
                "corpus_version": str(VERSION),
            }
            session = sessions[si]
            if spec.channel:
                jitter = derive_rng("synthetic-jitter", VERSION, uid)
                job["pitch"] = int(np.clip(style.pitch + session.pitch_offset + jitter.integers(-2, 3), 0, 100))
                job["range"] = int(np.clip(style.pitch_range + session.range_offset, 0, 100))
                job["words_per_min"] = job["words_per_min"] * session.rate_factor * jitter.uniform(0.98, 1.02)
                job["channel"] = asdict(session)
                attrs.update(session.attrs())
            job["words_per_min"] = int(round(job["words_per_min"]))
            attrs.update(
                espeak_pitch=str(job["pitch"]),
                espeak_range=str(job["range"]),
                espeak_rate_wpm=str(job["words_per_min"]),
            )
            jobs.append(job)
            rows.append(
                {
                    "id": uid,
                    "path": rel,
                    "speaker": v.id,
                    "gender": v.gender,
                    "age_band": v.age_band,
                    "accent": v.accent,
                    "style": style_name,
                    "session": f"{v.id}/{session.session}" if spec.channel else None,
                    "text": text,
                    "sample_rate_hz": SAMPLE_RATE_HZ,
                    "attrs": attrs,
                }
            )
    return jobs, rows


def corpus_folder(spec: SyntheticSpec, cache: Path) -> Path:
    """Where :func:`build` puts the corpus of ``spec`` under ``cache`` (its manifest is
    ``manifest.jsonl`` there): named by the corpus version and the spec's key."""
    return cache / "corpora" / f"synthetic-v{VERSION}-{spec.key()}"


def utterance_id(voice_id: str, style_name: str, sentence: int) -> str:
    """``<voice>/<style>/sNN``, the id of a voice's ``sentence``-th sentence (from 1) in a style."""
    return f"{voice_id}/{style_name}/s{sentence:02d}"


def planned_utterances(spec: SyntheticSpec) -> list[dict[str, str]]:
    """The utterances :func:`build` renders for ``spec`` (id, speaker and the speaker's and
    style's attributes), known without rendering anything."""
    return [
        {"id": utterance_id(v.id, style, si), "speaker": v.id, "gender": v.gender, "age_band": v.age_band}
        | {"accent": v.accent, "style": style}
        for v in make_voices(spec)
        for style in spec.styles
        for si in range(1, spec.n_sentences + 1)
    ]


def build(
    spec: SyntheticSpec, cache: Path, *, workers: int | None = None, reporter: Reporter | None = None
) -> tuple[Manifest, float]:
    """Build (or reuse) the corpus for ``spec`` under ``cache``; returns it and build seconds.
    ``reporter`` shows the rendering's progress (utterances rendered)."""
    spec.validate()
    final = corpus_folder(spec, cache)
    manifest_path = final / "manifest.jsonl"
    if manifest_path.is_file():
        return Manifest.read(manifest_path, name="synthetic"), 0.0
    t0, cpu0 = time.perf_counter(), time.process_time()
    work = final.with_name(final.name + f".partial-{os.getpid()}")
    if work.exists():
        shutil.rmtree(work)
    data_dir = espeak_data_dir(work)
    voices = make_voices(spec)
    rooms = corpus_rooms(cache) if spec.channel else []
    chunks: list[list[dict[str, Any]]] = []
    rows: list[dict[str, Any]] = []
    for i, v in enumerate(voices):
        jobs, voice_rows = voice_jobs(spec, v, data_dir, work, len(rooms))
        if i % VOICES_PER_PROCESS == 0:
            chunks.append([])
        chunks[-1].extend(jobs)
        rows.extend(voice_rows)
    done, n = render_chunks(data_dir, chunks, workers, rooms, reporter)
    for row in rows:
        item = done[row["id"]]
        row["duration_s"] = round(item["duration_s"], 6)
        row["sha256"] = item["sha256"]
        row["attrs"].update(item["attrs"])
    manifest = Manifest("synthetic", work, tuple(Utterance.from_dict(r) for r in rows))
    (work / "voices.jsonl").write_text("".join(canonical_json(asdict(v)) + "\n" for v in voices), encoding="utf-8")
    manifest.write(work / "manifest.jsonl")
    shutil.rmtree(data_dir)
    seconds = time.perf_counter() - t0
    # CPU: this process plus the rendering of every utterance (not the processes' start-up)
    cpu = time.process_time() - cpu0 + sum(item["cpu_s"] for item in done.values())
    build_record = {
        "build_seconds": round(seconds, 2),
        "cpu_seconds": round(cpu, 2),
        "workers": n,
        "version": VERSION,
        "spec": asdict(spec),
    }
    (work / "build.json").write_text(canonical_json(build_record) + "\n", encoding="utf-8")
    if final.exists():  # another process finished first: keep theirs
        shutil.rmtree(work)
    else:
        work.rename(final)
    return Manifest.read(manifest_path, name="synthetic"), seconds


def build_info(manifest: Manifest) -> dict[str, Any]:
    """What ``build.json`` recorded about a built corpus (seconds, workers, version, spec)."""
    import json

    try:
        return json.loads((manifest.root / "build.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def prepare_synthetic(
    root: Path | None, cache: Path, options: dict[str, Any], reporter: Reporter | None = None
) -> Manifest:
    manifest, _ = build(SyntheticSpec.from_options(options), cache, reporter=reporter)
    return manifest


register(
    CorpusAdapter(
        name="synthetic",
        description="embedded factorial espeak-ng corpus (gender × age band × accent × style × sentence; proxies)",
        prepare=prepare_synthetic,
        needs_root=False,
        attributes=("gender", "age_band", "accent", "style", "text", "sentence", "proxy", "synth"),
        shows_progress=True,
    )
)
