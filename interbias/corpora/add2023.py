"""ADD 2023 corpus adapter (``corpus prepare add2023``): Track 2 (region location) and Track 3
(algorithm recognition) in the challenge's label-file layouts.

Expected tree (option ``track``: 2, the default, or 3)::

    ROOT/track2/<split>/label.txt   UTT_ID START-END-T/START-END-F/... LABEL   (HAD layout)
    ROOT/track2/<split>/wav/UTT_ID.wav
    ROOT/track3/<split>/label.txt   UTT_ID CLASS
    ROOT/track3/<split>/wav/UTT_ID.wav

``<split>`` is ``train``, ``dev``, ``eval`` or ``test`` (read as ``eval``); at least one must
exist. An id may carry its ``.wav`` suffix in the label file. Track 2 lines follow
``cm-eval location``'s reference rules (segments in seconds, in order, not overlapping, the
label 0 exactly when a segment is ``F``, no segment past the audio's end beyond 10 ms); an
utterance becomes ``label`` spoof (partially fake) or bonafide, ``fake_regions`` in samples
(``round(seconds × rate)``). Track 3 lines give ``algorithm`` = CLASS; ``label`` is bonafide
when CLASS equals the option ``bonafide_class`` (default ``0``; refused unless it is one of the
label files' classes, and for Track 2), else spoof, and ``attack`` = CLASS. ADD 2023 publishes no speaker labels: each utterance is its own ``speaker`` (so splits
are speaker-disjoint by construction and no speaker- or gender-level analysis is possible).
A malformed line, a missing audio file or a repeated id is one :class:`CorpusError` line
naming ``file:line``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from interbias.corpora import CorpusAdapter, register
from interbias.corpora.manifest import Manifest, Utterance
from interbias.corpora.splice import read_segment_line
from interbias.utils.errors import CorpusError

SPLIT_DIRS = {"train": "train", "dev": "dev", "eval": "eval", "test": "eval"}
#: Slack for a last segment ending after the audio (seconds).
END_SLACK_S = 0.01


def parse_track2_line(line: str, where: str) -> tuple[str, list[tuple[float, float]], bool]:
    """(id, fake regions in seconds, fake) of one Track 2 label line (the segment-file layout,
    :func:`interbias.corpora.splice.read_segment_line`; ``.wav`` dropped from the id)."""
    lab = read_segment_line(line, where=where, reference=True, error=CorpusError)
    return lab.utterance.removesuffix(".wav"), lab.fake_regions, lab.fake


def _lines(path: Path) -> list[tuple[int, str]]:
    if not path.is_file():
        raise CorpusError(f"add2023: {path} does not exist (each split folder needs its label.txt)")
    rows = [(i, line) for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if line.strip()]
    if not rows:
        raise CorpusError(f"add2023: {path} has no lines")
    return rows


def _audio(folder: Path, utt: str, where: str) -> tuple[Path, int, int]:
    """(path, frames, rate) of an utterance's wav file."""
    import soundfile as sf

    path = folder / "wav" / f"{utt}.wav"
    if not path.is_file():
        raise CorpusError(f"{where}: audio {path} does not exist")
    try:
        info = sf.info(str(path))
    except RuntimeError as exc:
        raise CorpusError(f"{where}: {path} is not readable audio ({exc})") from None
    return path, int(info.frames), int(info.samplerate)


def read_split(root: Path, track: int, split_dir: str, split: str, bonafide_class: str) -> list[Utterance]:
    """The utterances of one split folder (module docstring)."""
    folder = root / f"track{track}" / split_dir
    label_file = folder / "label.txt"
    seen: set[str] = set()
    out = []
    for lineno, line in _lines(label_file):
        where = f"{label_file}:{lineno}"
        if track == 2:
            utt, fake, is_fake = parse_track2_line(line, where)
        else:
            parts = line.split()
            if len(parts) != 2:
                raise CorpusError(f"{where}: expected 'UTT_ID CLASS', got {line.strip()!r}")
            utt, cls = parts[0].removesuffix(".wav"), parts[1]
        if utt in seen:
            raise CorpusError(f"{where}: utterance {utt!r} is listed twice")
        seen.add(utt)
        path, frames, rate = _audio(folder, utt, where)
        attrs: dict[str, str] = {"split": split}
        if track == 2:
            if fake and fake[-1][1] > frames / rate + END_SLACK_S:
                raise CorpusError(
                    f"{where}: fake segment ends at {fake[-1][1]:g} s, after the audio's end ({frames / rate:g} s)"
                )
            attrs.update(label="spoof" if is_fake else "bonafide", attack="partial" if is_fake else "bonafide")
            if fake:
                attrs["fake_regions"] = ";".join(f"{round(a * rate)}-{min(round(b * rate), frames)}" for a, b in fake)
        else:
            attrs.update(algorithm=cls, attack=cls, label="bonafide" if cls == bonafide_class else "spoof")
        rel = path.relative_to(root)
        out.append(Utterance(id=f"{split}/{utt}", path=str(rel), speaker=f"{split}/{utt}", duration_s=frames / rate,
                             sample_rate_hz=rate, attrs=attrs))  # fmt: skip
    return out


def prepare_add2023(root: Path | None, cache: Path, options: dict[str, Any]) -> Manifest:
    """The ``add2023`` adapter (module docstring); options ``track`` (2 | 3), ``bonafide_class``."""
    unknown = sorted(set(options) - {"track", "bonafide_class"})
    if unknown:
        raise CorpusError(f"add2023: unknown option {unknown[0]!r}; valid: bonafide_class, track")
    track = str(options.get("track", 2))
    if track not in ("2", "3"):
        raise CorpusError(f"add2023: track {track!r}: this adapter reads Track 2 or 3")
    if root is None:
        raise CorpusError("add2023: needs the corpus root (--corpus-root DIR)")
    root = Path(root)
    base = root / f"track{track}"
    dirs = [d for d in SPLIT_DIRS if (base / d).is_dir()]
    if not dirs:
        raise CorpusError(f"add2023: {base} holds none of the split folders {', '.join(SPLIT_DIRS)}")
    if "eval" in dirs and "test" in dirs:
        raise CorpusError(f"add2023: {base} holds both eval/ and test/; both would be the eval split")
    if track == "2" and "bonafide_class" in options:
        raise CorpusError("add2023: bonafide_class applies to Track 3 (Track 2's labels say bona fide themselves)")
    bonafide = str(options.get("bonafide_class", "0"))
    utts = [u for d in dirs for u in read_split(root, int(track), d, SPLIT_DIRS[d], bonafide)]
    classes = sorted({str(u.get("algorithm")) for u in utts}) if track == "3" else []
    if classes and bonafide not in classes:
        raise CorpusError(
            f"add2023: bonafide_class {bonafide!r} is no class of the label files (every utterance would be "
            f"spoof); classes: {', '.join(classes)}"
        )
    return Manifest(f"add2023-track{track}", root, tuple(utts))


register(
    CorpusAdapter(
        name="add2023",
        description="ADD 2023 Track 2 (label files with segment times) or Track 3 (algorithm labels)",
        prepare=prepare_add2023,
        expects="track2/<split>/label.txt + wav/ (or track3/...), split = train|dev|eval|test",
        attributes=("label", "split", "attack", "fake_regions", "algorithm"),
    )
)
