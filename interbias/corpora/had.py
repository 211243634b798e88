"""The offline HAD-style corpus (``synthetic-had``): partially fake utterances for ADD 2023 Track 2.

Built from the offline CM corpus (:mod:`interbias.corpora.cm_corpus`, proxies). Each bona
fide utterance becomes one utterance of this corpus, in its speaker's split: with probability
``fake_share`` (a draw from ``derive_rng("had", seed, id)``) it is partially fake, else it
stays genuine. A partially fake utterance gets 1 to ``max_segments`` regions, each of a
length drawn uniformly in [``min_segment_s``, ``max_segment_s``] (capped by the donor and by
half the utterance), taken from a proxy attack of the **same talker** (a spoof whose target
is the host's speaker; TTS or VC proxy chosen uniformly among them) at a uniform offset, placed
at disjoint positions (:func:`interbias.corpora.splice.place_regions`) and spliced with a
``crossfade_ms`` cross-fade (:func:`interbias.corpora.splice.splice`). A host whose speaker
has no same-talker attack stays genuine and is counted (``no_donor``).

Files under ``<cache>/cm-corpora/synthetic-had-v<V>-<key>/``: ``audio/`` (spliced FLAC),
``manifest.jsonl`` (a CM manifest: ``label`` spoof for partially fake, ``attack``
``splice:<generator>``, ``fake_regions`` ``START-END;...`` in samples, ``donors``),
``regions.jsonl`` (the ground truth: per utterance its sample count, rate and every region with
donor and donor offset), ``reference_<split>.txt`` (segment files for ``cm-eval location``)
and ``had_corpus.json`` (spec and counts).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from interbias.corpora import CorpusAdapter, register
from interbias.corpora.cm_corpus import SPLITS, CMCorpusSpec, build_cm_corpus, check_cm_manifest
from interbias.corpora.manifest import Manifest, Utterance
from interbias.corpora.splice import Region, place_regions, region_attr, segment_line, splice
from interbias.utils.errors import CorpusError
from interbias.utils.seeding import canonical_json, derive_rng, sha256_text

VERSION = 1
SAMPLE_RATE_HZ = 16000


@dataclass(frozen=True)
class HADSpec:
    """The splice draw (module docstring) and the CM corpus it starts from."""

    fake_share: float = 0.5
    max_segments: int = 2
    min_segment_s: float = 0.2
    max_segment_s: float = 0.6
    crossfade_ms: float = 5.0
    seed: int = 0
    voices_per_cell: int = 2
    n_sentences: int = 10
    per_target: int = 4

    def key(self) -> str:
        return sha256_text(canonical_json({"v": VERSION, **asdict(self)}))[:10]

    def cm_spec(self) -> CMCorpusSpec:
        return CMCorpusSpec(self.voices_per_cell, self.n_sentences, self.per_target, seed=self.seed)

    def check(self) -> None:
        if not 0 <= self.fake_share <= 1 or self.max_segments < 1:
            raise CorpusError("synthetic-had: fake_share must lie in [0, 1] and max_segments be >= 1")
        if not 0 < self.min_segment_s <= self.max_segment_s or self.crossfade_ms < 0:
            raise CorpusError("synthetic-had: need 0 < min_segment_s <= max_segment_s and crossfade_ms >= 0")


def draw_regions(spec: HADSpec, host_id: str, n_host: int, donors: list[tuple[str, np.ndarray]]) -> list[Region]:
    """The regions of one partially fake host (module docstring); donors are (id, waveform)."""
    rng = derive_rng("had-regions", spec.seed, host_id)
    n_seg = int(rng.integers(1, spec.max_segments + 1))
    picks = [donors[int(rng.integers(len(donors)))] for _ in range(n_seg)]
    cap = n_host // (2 * n_seg)
    lengths = []
    for _, wave in picks:
        want = int(round(rng.uniform(spec.min_segment_s, spec.max_segment_s) * SAMPLE_RATE_HZ))
        lengths.append(max(1, min(want, len(wave), cap)))
    starts = place_regions(rng, n_host, lengths)
    out = []
    for (did, wave), start, length in zip(picks, starts, lengths, strict=True):
        offset = int(rng.integers(0, len(wave) - length + 1))
        out.append(Region(start, length, did, offset))
    return out


def _load(manifest: Manifest, u: Utterance) -> np.ndarray:
    from interbias.audio.frontend import FrontEnd, load

    fe = FrontEnd(sample_rate_hz=SAMPLE_RATE_HZ, min_duration_s=0.0, max_duration_s=None)
    return load(manifest.resolve(u), fe, span=u.span).samples


def build_had_corpus(cache: Path, spec: HADSpec = HADSpec(), reporter: Any = None) -> Manifest:
    """Build (or reuse) the HAD-style corpus under ``cache`` (module docstring)."""
    spec.check()
    cache = Path(cache).resolve()
    final = had_corpus_folder(cache, spec)
    if (final / "manifest.jsonl").is_file():
        return Manifest.read(final / "manifest.jsonl", name="synthetic-had")
    return write_had(build_cm_corpus(cache, spec.cm_spec(), reporter=reporter), final, spec)


def had_corpus_folder(cache: Path, spec: HADSpec) -> Path:
    """Where :func:`build_had_corpus` writes (and reuses) the corpus of ``spec``."""
    return Path(cache).resolve() / "cm-corpora" / f"synthetic-had-v{VERSION}-{spec.key()}"


def write_had(base: Manifest, final: Path, spec: HADSpec) -> Manifest:
    """Splice the bona fide utterances of the CM manifest ``base`` into ``final`` (module docstring)."""
    from interbias.audio.frontend import write_flac16

    check_cm_manifest(base)
    work = final.with_name(final.name + ".partial")
    (work / "audio").mkdir(parents=True, exist_ok=True)
    spoofs: dict[str, list[Utterance]] = {}
    for u in base:
        if u.get("label") == "spoof":
            spoofs.setdefault(u.speaker, []).append(u)
    utts, truth, no_donor = [], [], 0
    fade = int(round(spec.crossfade_ms * SAMPLE_RATE_HZ / 1000))
    hosts = sorted((u for u in base if u.get("label") == "bonafide"), key=lambda u: u.id)
    for u in hosts:
        host = _load(base, u)
        fake = derive_rng("had", spec.seed, u.id).uniform() < spec.fake_share
        cands = sorted(spoofs.get(u.speaker, []), key=lambda s: s.id)
        if fake and not cands:
            no_donor += 1
        d = u.to_dict()
        d.update(id=f"had:{u.id}", path=str(base.resolve(u)), label="bonafide", attack="bonafide", fake_regions="",
                 duration_s=len(host) / SAMPLE_RATE_HZ, sample_rate_hz=SAMPLE_RATE_HZ)  # fmt: skip
        regions: list[Region] = []
        if fake and cands:
            donors = [(s.id, _load(base, s)) for s in cands]
            regions = draw_regions(spec, u.id, len(host), donors)
            waves = dict(donors)
            y = splice(host, regions, [waves[r.donor] for r in regions], crossfade=fade)
            name = f"audio/{sha256_text(u.id)[:16]}.flac"
            _, sha = write_flac16(work / name, y, SAMPLE_RATE_HZ)
            gens = sorted({str(next(s for s in cands if s.id == r.donor).get("generator")) for r in regions})
            d.update(path=str(final / name), sha256=sha, label="spoof", attack="splice:" + "+".join(gens),
                     fake_regions=region_attr(regions), donors=";".join(r.donor for r in regions),
                     crossfade_samples=str(fade))  # fmt: skip
        utts.append(Utterance.from_dict(d))
        truth.append({"id": d["id"], "split": u.get("split"), "n_samples": len(host), "sample_rate_hz": SAMPLE_RATE_HZ,
                      "crossfade_samples": fade if regions else 0, "regions": [asdict(r) for r in regions]})  # fmt: skip
    manifest = Manifest("synthetic-had", final, tuple(utts))
    check_cm_manifest(manifest)
    manifest.write(work / "manifest.jsonl")
    write_truth(work, truth)
    info = {"spec": asdict(spec), "no_donor": no_donor, "n_fake": sum(1 for t in truth if t["regions"]),
            "n_genuine": sum(1 for t in truth if not t["regions"])}  # fmt: skip
    (work / "had_corpus.json").write_text(json.dumps(info, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    if final.exists():
        import shutil

        shutil.rmtree(final)
    work.rename(final)
    return Manifest.read(final / "manifest.jsonl", name="synthetic-had")


def write_truth(folder: Path, truth: list[dict[str, Any]]) -> None:
    """``regions.jsonl`` and one reference segment file per split."""
    lines = [json.dumps(t, sort_keys=True) for t in truth]
    (folder / "regions.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    for split in SPLITS:
        rows = [
            segment_line(t["id"], [(r["start"], r["start"] + r["length"]) for r in t["regions"]], t["n_samples"],
                         t["sample_rate_hz"])
            for t in truth if t["split"] == split
        ]  # fmt: skip
        (folder / f"reference_{split}.txt").write_text("".join(r + "\n" for r in rows), encoding="utf-8")


def had_spec(options: dict[str, Any]) -> HADSpec:
    """The :class:`HADSpec` of the ``synthetic-had`` options (its field names, numbers)."""
    fields = HADSpec.__dataclass_fields__
    unknown = sorted(set(options) - set(fields))
    if unknown:
        raise CorpusError(f"synthetic-had: unknown option {unknown[0]!r}; valid: {', '.join(sorted(fields))}")
    kw: dict[str, Any] = {}
    for k, v in options.items():
        try:
            kw[k] = float(v) if fields[k].type == "float" else int(v)
        except (TypeError, ValueError):
            raise CorpusError(f"synthetic-had: {k}={v!r} is not a number") from None
    return HADSpec(**kw)


def prepare_synthetic_had(root: Path | None, cache: Path, options: dict[str, Any], reporter: Any = None) -> Manifest:
    """The ``synthetic-had`` corpus adapter: options are the fields of :class:`HADSpec`."""
    return build_had_corpus(cache, had_spec(options), reporter=reporter)


register(
    CorpusAdapter(
        name="synthetic-had",
        description="offline HAD-style corpus: synthetic bona fide speech with proxy TTS/VC segments of the same talker spliced in (proxies)",
        prepare=prepare_synthetic_had,
        needs_root=False,
        attributes=("gender", "age_band", "accent", "label", "split", "attack", "fake_regions", "proxy"),
        shows_progress=True,
    )
)
