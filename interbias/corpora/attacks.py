"""Spoofing attack sets: an attack manifest of stored attack audio, and proxy builders.

**Attack manifest** (CSV or JSONL, one row per attack file):

- ``path`` (required): the audio, absolute or relative to the manifest's folder (and inside it);
- ``target_speaker`` (required): the corpus speaker id the attack imitates;
- ``generator`` (required): the system that made it (e.g. ``VITS``, ``kNN-VC``);
- optional ``id`` (default: the path without suffix), ``attack_type`` (tts, vc, …),
  ``source_speaker``, ``text``, ``duration_s``, ``sha256``, ``proxy``; any other column is kept
  as a free attribute.

Each attack becomes an utterance with id ``spoof:<id>`` whose ``speaker`` is the target it
imitates (as in ASVspoof protocols) and which inherits the target's gender, age band and accent
when it has none. A spoof trial pairs a genuine enrolment of the target with the attack.

**Proxy builders** (registered by name, for the embedded synthetic corpus only, so that spoofing
experiments run offline; every attack is marked ``proxy`` and its generator name says what
made it — they are not neural TTS or VC systems):

- ``synthetic-tts``: for each target voice, another voice of the same gender rendered by
  espeak-ng with the target's accent, pitch, pitch range and rate (its prosodic settings) and
  formants interpolated geometrically from the other voice toward the target's
  (``similarity`` 0 = the other voice's formants, 1 = the target's voice file exactly), on
  sentences the corpus does not use for that voice when enough exist;
- ``synthetic-vc``: a same-gender source talker's real corpus utterances converted toward the
  target by pitch and formant warping (:mod:`interbias.corpora.voicewarp`) with the ratios of
  the two voices' settings raised to ``strength``.

Both are deterministic: choices come from seeds derived from the target's id, and rendering is
the corpus's own (fresh process per voice) or pure signal processing.
"""

from __future__ import annotations

import csv
import hashlib
import os
import shutil
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, replace
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np

from interbias.audio.frontend import write_flac16
from interbias.corpora.channel import draw_session
from interbias.corpora.manifest import Manifest, Utterance
from interbias.utils.errors import CorpusError, ManifestError
from interbias.utils.registry import Registry
from interbias.utils.seeding import canonical_json, derive_rng

#: Bump when a builder's output changes (invalidates built attack sets).
ATTACK_VERSION = 2
REQUIRED = ("path", "target_speaker", "generator")
PREFIX = "spoof:"
INHERITED = ("gender", "age_band", "accent")
#: Voices rendered per fresh process by the TTS proxy.
_TTS_CHUNK = 8


@dataclass(frozen=True)
class AttackSet:
    """Attack utterances (ids ``spoof:<id>``, ``speaker`` = imitated target) and their source."""

    utterances: tuple[Utterance, ...]
    source: str

    def __len__(self) -> int:
        return len(self.utterances)

    @property
    def sha256(self) -> str:
        """Hash of (id, target, generator, audio sha256) of every attack, in order."""
        h = hashlib.sha256()
        for u in self.utterances:
            h.update(canonical_json([u.id, u.speaker, u.get("generator"), u.sha256]).encode())
            h.update(b"\n")
        return h.hexdigest()

    def by_target(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for u in self.utterances:
            out.setdefault(u.speaker, []).append(u.id)
        return {k: sorted(v) for k, v in sorted(out.items())}

    def extend(self, manifest: Manifest) -> Manifest:
        """The corpus manifest plus the attacks (absolute paths), for embedding."""
        return Manifest(manifest.name, manifest.root, manifest.utterances + self.utterances, manifest.utterance_level)

    def generators(self) -> list[str]:
        return sorted({u.get("generator") or "" for u in self.utterances})


def _read_rows(path: Path) -> tuple[list[str], list[dict[str, Any]]]:
    """Columns and rows of a CSV or JSONL file, rows as string-valued dicts (empty cells dropped)."""
    import pandas as pd

    try:
        if path.suffix == ".jsonl":
            frame = pd.read_json(path, lines=True, dtype=False)
        elif path.suffix == ".csv":
            frame = pd.read_csv(path, dtype=str, keep_default_na=False)
        else:
            raise ManifestError(f"attack manifest {path}: files end in .csv or .jsonl")
    except (ValueError, pd.errors.ParserError) as exc:
        raise ManifestError(f"attack manifest {path}: not valid {path.suffix[1:].upper()} ({exc})") from exc
    return [str(c) for c in frame.columns], [
        {str(k): str(v) for k, v in row.items() if v is not None and not (isinstance(v, float) and v != v) and v != ""}
        for row in frame.to_dict(orient="records")
    ]


def _inside(base: Path, audio: Path) -> bool:
    """An absolute path, or a relative one that resolves (links followed) inside ``base``."""
    if audio.is_absolute():
        return True
    full = (base / audio).resolve()
    return full == base or base in full.parents


def read_attacks(path: Path, corpus: Manifest) -> AttackSet:
    """Read and validate an attack manifest against the corpus it attacks (module docstring)."""
    path = Path(path)
    if not path.is_file():
        raise ManifestError(f"attack manifest {path} does not exist")
    columns, rows = _read_rows(path)
    if not rows:
        raise ManifestError(f"attack manifest {path}: no rows")
    present = set(columns)
    from interbias.utils.seeding import sha256_file

    missing = [c for c in REQUIRED if c not in present]
    if missing:
        raise ManifestError(
            f"attack manifest {path}: missing required column(s) {', '.join(missing)}; "
            f"found: {', '.join(sorted(present))}"
        )
    empty = [i + 2 for i, r in enumerate(rows) if any(not str(r.get(c) or "").strip() for c in REQUIRED)]
    if empty:
        raise ManifestError(
            f"attack manifest {path}: {len(empty)} row(s) with an empty path, target_speaker or generator; "
            f"first at line(s) {', '.join(map(str, empty[:5]))}"
        )
    speakers: dict[str, Utterance] = {}
    for u in corpus:
        speakers.setdefault(u.speaker, u)
    unknown = sorted({str(r["target_speaker"]) for r in rows} - set(speakers))
    if unknown:
        raise ManifestError(
            f"attack manifest {path}: {len(unknown)} target speaker(s) are not in corpus {corpus.name!r}; "
            f"first: {', '.join(unknown[:5])}"
        )
    utts = []
    absent = []
    base = path.parent.resolve()
    outside = [str(r["path"]) for r in rows if not _inside(base, Path(str(r["path"])))]
    if outside:
        raise ManifestError(
            f"attack manifest {path}: {len(outside)} relative path(s) escape its folder {base}; first: "
            f"{', '.join(outside[:5])}"
        )
    for r in rows:
        audio = Path(str(r["path"]))
        full = audio if audio.is_absolute() else (base / audio).resolve()
        if not full.is_file():
            absent.append(str(r["path"]))
            continue
        target = speakers[str(r["target_speaker"])]
        row = {k: v for k, v in r.items() if v is not None and v != ""}
        row["id"] = PREFIX + str(r.get("id") or Path(str(r["path"])).with_suffix("").as_posix())
        row["path"] = str(full)
        row["speaker"] = str(r["target_speaker"])
        row.setdefault("sha256", sha256_file(full))
        for attr in INHERITED:
            if not row.get(attr) and target.get(attr) is not None:
                row[attr] = target.get(attr)
        utts.append(Utterance.from_dict(row, where=str(path)))
    if absent:
        raise ManifestError(
            f"attack manifest {path}: {len(absent)} attack file(s) do not exist; first: "
            f"{', '.join(list(dict.fromkeys(absent))[:5])}"
        )
    try:
        Manifest("attacks", path.parent, tuple(utts))
    except ManifestError as exc:
        raise ManifestError(f"attack manifest {path}: {exc}") from None
    return AttackSet(tuple(utts), str(path))


# ---- builders -----------------------------------------------------------------------------

#: ``builder(corpus_spec, corpus_manifest, cache_dir, options) -> attack manifest path``
Builder = Callable[[Any, Manifest, Path, dict[str, Any]], Path]
BUILDERS: Registry[Builder] = Registry("attack builder", CorpusError)


def load_attacks(spoofing: Any, corpus_spec: Any, corpus: Manifest, cache: Path) -> AttackSet:
    """The attack set of an experiment's ``spoofing`` entry (a file, or a builder's output)."""
    if spoofing.attacks:
        return read_attacks(Path(spoofing.attacks).expanduser(), corpus)
    builder = BUILDERS.get(spoofing.builder)
    return read_attacks(builder(corpus_spec, corpus, cache, dict(spoofing.options)), corpus)


@dataclass(frozen=True)
class ProxyOptions:
    """Options of the proxy builders. ``similarity`` (TTS) and ``strength`` (VC) in [0, 1]."""

    per_target: int = 4
    style: str = "neutral"
    similarity: float = 0.5
    strength: float = 1.0


def _options(builder: str, options: dict[str, Any], valid: tuple[str, ...]) -> ProxyOptions:
    unknown = sorted(set(options) - set(valid))
    if unknown:
        raise CorpusError(f"attack builder {builder}: unknown option {unknown[0]!r}; valid: {', '.join(valid)}")
    try:
        opts = ProxyOptions(
            per_target=int(options.get("per_target", ProxyOptions.per_target)),
            style=str(options.get("style", ProxyOptions.style)),
            similarity=float(options.get("similarity", ProxyOptions.similarity)),
            strength=float(options.get("strength", ProxyOptions.strength)),
        )
    except (TypeError, ValueError) as exc:
        raise CorpusError(f"attack builder {builder}: option values must be numbers ({exc})") from None
    if opts.per_target < 1:
        raise CorpusError(f"attack builder {builder}: per_target must be >= 1")
    if not 0 <= opts.similarity <= 1 or not 0 <= opts.strength <= 1:
        raise CorpusError(f"attack builder {builder}: similarity and strength must be in [0, 1]")
    return opts


def _synthetic_spec(builder: str, corpus_spec: Any) -> Any:
    from interbias.corpora.synthetic import SyntheticSpec

    if corpus_spec.name != "synthetic" or corpus_spec.manifest:
        raise CorpusError(
            f"attack builder {builder} makes proxy attacks for the embedded synthetic corpus only "
            f"(this experiment uses {corpus_spec.name!r}); give an attack manifest file instead"
        )
    return SyntheticSpec.from_options(dict(corpus_spec.options))


def _source_voice(kind: str, target: Any, voices: list[Any]) -> Any:
    """A same-gender other voice (same accent when there is one), by a seed derived from the target."""
    same = [v for v in voices if v.gender == target.gender and v.id != target.id]
    if not same:
        raise CorpusError(f"attack builder synthetic-{kind}: voice {target.id} has no other voice of its gender")
    pool = [v for v in same if v.accent == target.accent] or same
    return pool[int(derive_rng("attack", kind, ATTACK_VERSION, target.id).integers(len(pool)))]


def _attack_dir(cache: Path, builder: str, spec: Any, opts: ProxyOptions) -> Path:
    key = hashlib.sha256(canonical_json([ATTACK_VERSION, spec.key(), opts.__dict__]).encode()).hexdigest()[:10]
    return cache / "attacks" / f"{builder}-v{ATTACK_VERSION}-{key}"


def _finish(work: Path, final: Path, rows: list[dict[str, Any]]) -> Path:
    cols = list(dict.fromkeys(k for r in rows for k in r))
    with (work / "attacks.csv").open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=cols, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    if final.exists():  # another process finished first: keep theirs
        shutil.rmtree(work)
    else:
        work.rename(final)
    return final / "attacks.csv"


def _tts_clone(target: Any, src: Any, similarity: float) -> Any:
    """The target's voice with formants moved geometrically toward the other voice's
    (``similarity`` 1 = the target's exactly) and the other voice's voice quality."""
    a = similarity
    formants = tuple(
        (
            n,
            int(round(fs ** (1 - a) * ft**a)),
            int(round((1 - a) * hs + a * ht)),
            int(round((1 - a) * ws + a * wt)),
        )
        for (n, fs, hs, ws), (_, ft, ht, wt) in zip(src.formants, target.formants, strict=True)
    )
    return replace(
        target,
        id=f"tts-{target.id}",
        formants=formants,
        flutter=src.flutter,
        roughness=src.roughness,
        breath=src.breath,
    )


def _tts_target(
    target: Any, voices: list[Any], spec: Any, opts: ProxyOptions, data_dir: Path, work: Path, n_rooms: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """One target's render jobs and attack rows (its clone's voice file written into ``data_dir``)."""
    from interbias.corpora import synthetic as syn

    style = syn.STYLES[opts.style]
    src = _source_voice("tts", target, voices)
    clone = _tts_clone(target, src, opts.similarity)
    lang_lines = (data_dir / "lang" / "gmw" / syn.ACCENTS[target.accent]).read_text().splitlines()
    fname = f"tts-{target.id}-{opts.style}"
    (data_dir / "voices" / "ib" / fname).write_text(syn.voice_file(clone, opts.style, lang_lines))
    # played back through a recording session of its own, as the corpus's utterances are
    session = draw_session("attack", derive_rng("attack", "tts-session", ATTACK_VERSION, target.id), n_rooms)
    jobs, rows = [], []
    for i in range(opts.per_target):
        si = (spec.n_sentences + i) % len(syn.SENTENCES)
        aid = f"tts/{target.id}/a{i + 1:02d}"
        rel = f"audio/{target.id}/a{i + 1:02d}.flac"
        job = {"id": aid, "text": syn.SENTENCES[si], "voice": f"ib/{fname}", "path": str(work / rel)}
        job.update(
            words_per_min=int(round(target.rate_wpm * style.rate_factor)), pitch=style.pitch, range=style.pitch_range
        )
        job.update(volume=style.volume, channel=asdict(session) if spec.channel else None)
        jobs.append(job)
        rows.append(
            {
                "id": aid,
                "path": rel,
                "target_speaker": target.id,
                "generator": f"proxy-tts:espeak-ng-clone(similarity={opts.similarity:g})",
                "attack_type": "tts",
                "source_speaker": src.id,
                "text": syn.SENTENCES[si],
                "proxy": "synthetic TTS proxy: another espeak voice with the target's prosodic settings",
                "similarity": opts.similarity,
            }
        )
    return jobs, rows


def build_tts_proxy(corpus_spec: Any, corpus: Manifest, cache: Path, options: dict[str, Any]) -> Path:
    """``synthetic-tts``: see the module docstring. Returns the attack manifest's path."""
    from interbias.corpora import synthetic as syn

    spec = _synthetic_spec("synthetic-tts", corpus_spec)
    opts = _options("synthetic-tts", options, ("per_target", "style", "similarity"))
    if opts.style not in syn.STYLES:
        raise CorpusError(f"attack builder synthetic-tts: unknown style {opts.style!r}; valid: {', '.join(syn.STYLES)}")
    final = _attack_dir(cache, "synthetic-tts", spec, opts)
    if (final / "attacks.csv").is_file():
        return final / "attacks.csv"
    work = final.with_name(final.name + f".partial-{os.getpid()}")
    if work.exists():
        shutil.rmtree(work)
    data_dir = syn.espeak_data_dir(work)
    rooms = syn.corpus_rooms(cache) if spec.channel else []
    voices = syn.make_voices(spec)
    jobs_by_voice, rows = [], []
    for target in voices:
        jobs, target_rows = _tts_target(target, voices, spec, opts, data_dir, work, len(rooms))
        jobs_by_voice.append(jobs)
        rows.extend(target_rows)
    # A fresh process renders a fixed chunk of voices in a fixed order (libespeak-ng keeps
    # state between calls), so the bytes do not depend on the number of workers.
    chunks = [
        [job for jobs in jobs_by_voice[i : i + _TTS_CHUNK] for job in jobs]
        for i in range(0, len(jobs_by_voice), _TTS_CHUNK)
    ]
    info, _ = syn.render_chunks(data_dir, chunks, None, rooms)
    for r in rows:
        r["duration_s"] = round(info[r["id"]]["duration_s"], 6)
        r["sha256"] = info[r["id"]]["sha256"]
    shutil.rmtree(data_dir)
    return _finish(work, final, rows)


def _convert_jobs(jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Worker: convert one target's source utterances (pure signal processing)."""
    import soundfile as sf

    from interbias.corpora.voicewarp import convert

    out = []
    for job in jobs:
        x, sample_rate_hz = sf.read(job["source_path"], dtype="float64")
        y, rec = convert(x, sample_rate_hz, pitch_ratio=job["pitch_ratio"], formant_ratio=job["formant_ratio"])
        n, sha = write_flac16(Path(job["path"]), y, sample_rate_hz)
        out.append(
            {
                "id": job["id"],
                "duration_s": n / sample_rate_hz,
                "sha256": sha,
                "pitch_ratio": rec["pitch_ratio"],
            }
        )
    return out


def build_vc_proxy(corpus_spec: Any, corpus: Manifest, cache: Path, options: dict[str, Any]) -> Path:
    """``synthetic-vc``: see the module docstring. Returns the attack manifest's path."""
    from interbias.corpora import synthetic as syn

    spec = _synthetic_spec("synthetic-vc", corpus_spec)
    opts = _options("synthetic-vc", options, ("per_target", "style", "strength"))
    final = _attack_dir(cache, "synthetic-vc", spec, opts)
    if (final / "attacks.csv").is_file():
        return final / "attacks.csv"
    work = final.with_name(final.name + f".partial-{os.getpid()}")
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    generator = f"proxy-vc:wsola-lpc-warp(strength={opts.strength:g})"
    voices = syn.make_voices(spec)
    by_speaker: dict[str, list[Utterance]] = {}
    for u in corpus:
        if u.style == opts.style:
            by_speaker.setdefault(u.speaker, []).append(u)
    jobs_by_voice, rows = [], []
    for target in voices:
        src = _source_voice("vc", target, voices)
        pool = sorted(by_speaker.get(src.id, []), key=lambda u: u.id)
        if len(pool) < opts.per_target:
            raise CorpusError(
                f"attack builder synthetic-vc: source voice {src.id} has {len(pool)} {opts.style} utterance(s); "
                f"per_target is {opts.per_target}"
            )
        pick = np.sort(
            derive_rng("attack", "vc-utterances", ATTACK_VERSION, target.id).choice(
                len(pool), opts.per_target, replace=False
            )
        )
        f_t = np.mean([f for _, f, _, _ in target.formants])
        f_s = np.mean([f for _, f, _, _ in src.formants])
        formant_ratio = float((f_t / f_s) ** opts.strength)
        pitch_ratio = float(
            (np.sqrt(target.pitch_base_hz * target.pitch_top_hz) / np.sqrt(src.pitch_base_hz * src.pitch_top_hz))
            ** opts.strength
        )
        jobs = []
        for i, p in enumerate(pick.tolist()):
            u = pool[p]
            aid = f"vc/{target.id}/a{i + 1:02d}"
            rel = f"audio/{target.id}/a{i + 1:02d}.flac"
            jobs.append(
                {
                    "id": aid,
                    "source_path": str(corpus.resolve(u)),
                    "path": str(work / rel),
                    "pitch_ratio": pitch_ratio,
                    "formant_ratio": formant_ratio,
                }
            )
            rows.append(
                {
                    "id": aid,
                    "path": rel,
                    "target_speaker": target.id,
                    "generator": generator,
                    "attack_type": "vc",
                    "source_speaker": src.id,
                    "source_utterance": u.id,
                    "text": u.text or "",
                    "proxy": "synthetic VC proxy: a source talker's utterance pitch- and formant-warped toward the target",
                    "strength": opts.strength,
                    "formant_ratio": round(formant_ratio, 6),
                }
            )
        jobs_by_voice.append(jobs)
    n = max(1, min(len(jobs_by_voice), os.cpu_count() or 1))
    with ProcessPoolExecutor(max_workers=n, mp_context=get_context("spawn")) as pool_ex:
        done = [item for batch in pool_ex.map(_convert_jobs, jobs_by_voice) for item in batch]
    info = {d["id"]: d for d in done}
    for r in rows:
        r["pitch_ratio"] = round(info[r["id"]]["pitch_ratio"], 6)
        r["duration_s"] = round(info[r["id"]]["duration_s"], 6)
        r["sha256"] = info[r["id"]]["sha256"]
    return _finish(work, final, rows)


BUILDERS.register("synthetic-tts")(build_tts_proxy)
BUILDERS.register("synthetic-vc")(build_vc_proxy)
