"""CM corpora: manifests of bona fide and spoofed audio with labels and speaker-disjoint splits.

A **CM manifest** is a corpus manifest whose utterances also carry ``label`` (``bonafide`` |
``spoof``), ``split`` (``train`` | ``dev`` | ``eval``) and, for spoofs, ``attack`` (the
attack id or generator) and ``attack_type``. ``speaker`` is the speaker a spoof imitates
(ASVspoof convention). :func:`check_cm_manifest` refuses a manifest without these columns or
whose splits share a speaker.

**The offline CM corpus** (``synthetic-cm``) is built from the embedded synthetic corpus
(neutral style) and its two proxy attack builders (:mod:`interbias.corpora.attacks`:
``synthetic-tts`` and ``synthetic-vc``). Every utterance is marked ``proxy``: the spoofs are
espeak-ng voice clones and signal-processing conversions, not neural TTS/VC. Speakers are
assigned to train/dev/eval per gender (shares 0.5/0.25/0.25 by default), so every split
holds as many female as male speakers; a spoof's target and the talker it was made from are
kept in one split (:func:`assign_splits`), so no split leaks a voice into another. The proxy
builders pick a source of the same gender and accent, so on this corpus the groups are
gender × accent and the splits hold different accents (eval accents are unseen in training).
A spoof whose source is nevertheless in another split would be dropped and counted in
``cm_corpus.json`` (``dropped_cross_split_spoofs``).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from interbias.corpora import CorpusAdapter, register
from interbias.corpora.attacks import BUILDERS, read_attacks
from interbias.corpora.manifest import Manifest, Utterance
from interbias.utils.errors import CorpusError, ManifestError
from interbias.utils.seeding import canonical_json, content_sha256, derive_seed, sha256_text

LABELS = ("bonafide", "spoof")
SPLITS = ("train", "dev", "eval")
CM_COLUMNS = ("label", "split")
VERSION = 1


@dataclass(frozen=True)
class CMCorpusSpec:
    """The offline CM corpus: synthetic voices per gender × age × accent cell, sentences per
    voice, proxy attacks per target and builder, and the split shares (train, dev, eval)."""

    voices_per_cell: int = 2
    n_sentences: int = 10
    per_target: int = 4
    shares: tuple[float, float, float] = (0.5, 0.25, 0.25)
    seed: int = 0

    def key(self) -> str:
        return sha256_text(canonical_json({"v": VERSION, **asdict(self)}))[:10]

    def synthetic_options(self) -> dict[str, Any]:
        return {"voices_per_cell": self.voices_per_cell, "n_sentences": self.n_sentences, "styles": ["neutral"]}


def components(speakers: list[str], links: list[tuple[str, str]]) -> list[list[str]]:
    """Groups of speakers joined by ``links`` (an attack's target and its source talker)."""
    parent = {s: s for s in speakers}

    def find(s: str) -> str:
        while parent[s] != s:
            parent[s] = parent[parent[s]]
            s = parent[s]
        return s

    for a, b in links:
        if a in parent and b in parent:
            parent[find(a)] = find(b)
    groups: dict[str, list[str]] = {}
    for s in speakers:
        groups.setdefault(find(s), []).append(s)
    return [sorted(g) for g in groups.values()]


def assign_splits(
    speaker_gender: dict[str, str],
    shares: tuple[float, float, float],
    seed: int,
    links: list[tuple[str, str]] = (),  # type: ignore[assignment]
) -> dict[str, str]:
    """Speaker → split, per gender. Speakers joined by ``links`` stay together (a spoof and the
    talker it was made from land in one split); the groups, in the order of
    ``derive_seed("cm-split", seed, first speaker)``, fill dev up to ⌈n·share_dev⌉ speakers,
    then eval likewise, the rest go to train; each split needs at least one group per gender."""
    if len(shares) != 3 or min(shares) <= 0 or abs(sum(shares) - 1) > 1e-9:
        raise CorpusError(f"CM splits: shares must be three positive numbers summing to 1, got {list(shares)}")
    out: dict[str, str] = {}
    by_gender: dict[str, list[str]] = {}
    for spk, g in speaker_gender.items():
        by_gender.setdefault(g, []).append(spk)
    for g, spks in sorted(by_gender.items()):
        groups = components(sorted(spks), list(links))
        if len(groups) < 3:
            raise CorpusError(
                f"CM splits: gender {g!r} has {len(groups)} independent speaker group(s); train, dev and eval need 3"
            )
        groups.sort(key=lambda grp: (derive_seed("cm-split", seed, grp[0]), grp[0]))
        queue = list(groups)
        for split, share in (("dev", shares[1]), ("eval", shares[2])):
            taken = 0
            while queue and (taken == 0 or taken < len(spks) * share):
                grp = queue.pop(0)
                out.update(dict.fromkeys(grp, split))
                taken += len(grp)
        for grp in queue:
            out.update(dict.fromkeys(grp, "train"))
        if {out[s] for s in spks} != set(SPLITS):
            raise CorpusError(f"CM splits: gender {g!r}: its speaker groups cannot fill train, dev and eval")
    return out


def check_cm_manifest(manifest: Manifest, *, where: str | None = None) -> None:
    """Refuse a CM manifest without label/split values, or whose splits share a speaker."""
    where = where or f"CM manifest {manifest.name!r}"
    for col in CM_COLUMNS:
        bad = [u.id for u in manifest if u.get(col) not in (LABELS if col == "label" else SPLITS)]
        if bad:
            valid = LABELS if col == "label" else SPLITS
            raise ManifestError(
                f"{where}: {len(bad)} utterance(s) without a valid {col} ({'|'.join(valid)}); first: {bad[0]}"
            )
    splits: dict[str, set[str]] = {}
    for u in manifest:
        splits.setdefault(u.speaker, set()).add(str(u.get("split")))
    shared = sorted(s for s, sp in splits.items() if len(sp) > 1)
    if shared:
        raise ManifestError(
            f"{where}: {len(shared)} speaker(s) appear in more than one split (train/dev/eval must be "
            f"speaker-disjoint); first: {shared[0]} in {', '.join(sorted(splits[shared[0]]))}"
        )
    check_splits_share_no_audio(manifest, where=where)


def check_splits_share_no_audio(manifest: Manifest, *, where: str) -> None:
    """Refuse one audio in two splits: rows whose paths resolve (links followed) to one file
    and span, or whole files with identical bytes (sha256; the manifest's ``sha256`` where it
    has one, else read: only files whose size, then first 64 KiB, another split's file shares)."""
    import os

    keys: dict[str, list[tuple[Any, str]]] = {}  # utterance id -> its audio keys
    by_size: dict[int, list[Utterance]] = {}
    for u in manifest:
        path = manifest.resolve(u)
        keys[u.id] = [(os.path.realpath(path), u.span)]
        if u.span is None:
            if u.sha256:
                keys[u.id].append(u.sha256)
            else:
                by_size.setdefault(os.path.getsize(path), []).append(u)
    for group in by_size.values():
        if len({u.get("split") for u in group}) > 1:
            for u in _same_head(group, manifest):
                keys[u.id].append(content_sha256(manifest.resolve(u)))
    split_of = {u.id: str(u.get("split")) for u in manifest}
    seen: dict[Any, list[str]] = {}
    for uid, ks in keys.items():
        for k in ks:
            seen.setdefault(k, []).append(uid)
    shared = sorted({tuple(ids) for ids in seen.values() if len({split_of[i] for i in ids}) > 1})
    if shared:
        first = " = ".join(f"{i!r} ({split_of[i]})" for i in shared[0][:3])
        raise ManifestError(
            f"{where}: {len(shared)} audio(s) appear in more than one split (same file or identical bytes; "
            f"train/dev/eval must not share audio); first: {first}"
        )


def _same_head(group: list[Utterance], manifest: Manifest) -> list[Utterance]:
    """The utterances of ``group`` (files of one size) whose first 64 KiB another split's file
    shares: the only ones worth a full read."""
    heads: dict[str, list[Utterance]] = {}
    for u in group:
        with open(manifest.resolve(u), "rb") as fh:
            heads.setdefault(hashlib.sha256(fh.read(1 << 16)).hexdigest(), []).append(u)
    return [u for us in heads.values() if len({u.get("split") for u in us}) > 1 for u in us]


def _bonafide(u: Utterance, manifest: Manifest, split: str) -> Utterance:
    d = u.to_dict()
    d.update(path=str(manifest.resolve(u)), label="bonafide", split=split, attack="bonafide")
    return Utterance.from_dict(d)


def build_cm_corpus(cache: Path, spec: CMCorpusSpec = CMCorpusSpec(), reporter: Any = None) -> Manifest:
    """Build (or reuse) the offline CM corpus under ``cache`` (module docstring)."""
    from interbias.corpora.synthetic import SyntheticSpec, build
    from interbias.experiments.schema import CorpusSpec

    final = cm_corpus_folder(cache, spec)
    if (final / "manifest.jsonl").is_file():
        return Manifest.read(final / "manifest.jsonl", name="synthetic-cm")
    options = spec.synthetic_options()
    corpus, _ = build(SyntheticSpec.from_options(options), Path(cache), reporter=reporter)
    cspec = CorpusSpec(name="synthetic", options=options)
    gender = {u.speaker: str(u.gender) for u in corpus}
    attacks = [
        a
        for builder in ("synthetic-tts", "synthetic-vc")
        for a in read_attacks(
            BUILDERS.get(builder)(cspec, corpus, Path(cache), {"per_target": spec.per_target}), corpus
        ).utterances
    ]
    links = [(a.speaker, str(a.get("source_speaker"))) for a in attacks if a.get("source_speaker")]
    split = assign_splits(gender, spec.shares, spec.seed, links)
    utts = [_bonafide(u, corpus, split[u.speaker]) for u in corpus]
    dropped: dict[str, int] = {}
    for a in attacks:
        src = a.get("source_speaker")
        if src is not None and split.get(src) != split[a.speaker]:  # cannot happen with linked splits; counted
            key = str(a.get("attack_type"))
            dropped[key] = dropped.get(key, 0) + 1
            continue
        d = a.to_dict()
        d.update(label="spoof", split=split[a.speaker], attack=a.get("generator"))
        utts.append(Utterance.from_dict(d))
    manifest = Manifest("synthetic-cm", final, tuple(utts))
    check_cm_manifest(manifest)
    final.mkdir(parents=True, exist_ok=True)
    manifest.write(final / "manifest.jsonl")
    info = {"spec": asdict(spec), "synthetic": options, "dropped_cross_split_spoofs": dropped, **summary(manifest)}
    (final / "cm_corpus.json").write_text(json.dumps(info, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return manifest


def cm_corpus_folder(cache: Path, spec: CMCorpusSpec) -> Path:
    """Where :func:`build_cm_corpus` writes (and reuses) the corpus of ``spec``."""
    return Path(cache) / "cm-corpora" / f"synthetic-cm-v{VERSION}-{spec.key()}"


def summary(manifest: Manifest) -> dict[str, Any]:
    """Counts per split × label × gender and speakers per split × gender."""
    counts: dict[str, int] = {}
    speakers: dict[str, set[str]] = {}
    for u in manifest:
        k = f"{u.get('split')}/{u.get('label')}/{u.gender}"
        counts[k] = counts.get(k, 0) + 1
        speakers.setdefault(f"{u.get('split')}/{u.gender}", set()).add(u.speaker)
    return {"utterances": dict(sorted(counts.items())), "speakers": {k: len(v) for k, v in sorted(speakers.items())}}


def prepare_synthetic_cm(root: Path | None, cache: Path, options: dict[str, Any], reporter: Any = None) -> Manifest:
    """The ``synthetic-cm`` corpus adapter: options are the fields of :class:`CMCorpusSpec`."""
    return build_cm_corpus(cache, cm_spec_from_options(options), reporter=reporter)


def cm_spec_from_options(options: dict[str, Any]) -> CMCorpusSpec:
    """The :class:`CMCorpusSpec` of the ``synthetic-cm`` options (its field names, numbers)."""
    valid = set(CMCorpusSpec.__dataclass_fields__)
    unknown = sorted(set(options) - valid)
    if unknown:
        raise CorpusError(f"synthetic-cm: unknown option {unknown[0]!r}; valid: {', '.join(sorted(valid))}")
    kw = {k: (tuple(float(x) for x in v) if k == "shares" else int(v)) for k, v in options.items()}
    return CMCorpusSpec(**kw)


register(
    CorpusAdapter(
        name="synthetic-cm",
        description="offline CM corpus: synthetic bona fide speech vs proxy TTS/VC attacks, speaker-disjoint splits (proxies)",
        prepare=prepare_synthetic_cm,
        needs_root=False,
        attributes=("gender", "age_band", "accent", "label", "split", "attack", "attack_type", "proxy"),
        shows_progress=True,
    )
)
