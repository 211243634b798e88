"""ASVspoof 5 (Wang et al. 2024), Track 1: bona fide vs spoofed speech, as a CM manifest.

Layout (the Zenodo release, archives unpacked under ROOT)::

    ROOT/ASVspoof5_protocols/ASVspoof5.train.tsv          (or the .tsv files directly in ROOT)
    ROOT/ASVspoof5_protocols/ASVspoof5.dev.track_1.tsv
    ROOT/ASVspoof5_protocols/ASVspoof5.eval.track_1.tsv
    ROOT/flac_T/T_0000000000.flac   ROOT/flac_D/D_….flac   ROOT/flac_E_eval/E_….flac (or flac_E/)

Protocol lines are whitespace-separated, ten columns::

    SPEAKER_ID FLAC_FILE_NAME SPEAKER_GENDER CODEC CODEC_Q CODEC_SEED ATTACK_TAG ATTACK_LABEL KEY TMP

Each line becomes one utterance: ``speaker`` = SPEAKER_ID (for a spoof, the speaker it
imitates), ``gender`` from F/M, ``label`` = KEY (``bonafide`` | ``spoof``), ``split`` = the
protocol's official split (train, dev, eval), ``attack`` = ATTACK_LABEL (A01…A32;
``bonafide`` for bona fide speech), ``attack_tag`` = ATTACK_TAG, and ``codec``,
``codec_q``, ``codec_seed`` where not ``-``. Option ``splits`` (default ``train,dev,eval``)
reads a subset of the protocols. A protocol line with another number of columns, a KEY other
than bonafide/spoof, a gender other than F/M, a listed file that is absent, or a speaker in
two splits is an error naming the file and line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from interbias.corpora import CorpusAdapter, register
from interbias.corpora.common import check_options, describe_dir, layout_error, require_root
from interbias.corpora.manifest import Manifest, Utterance
from interbias.utils.errors import CorpusError

COLUMNS = (
    "SPEAKER_ID", "FLAC_FILE_NAME", "SPEAKER_GENDER", "CODEC", "CODEC_Q", "CODEC_SEED",
    "ATTACK_TAG", "ATTACK_LABEL", "KEY", "TMP",
)  # fmt: skip
#: split -> (protocol file name, audio folders tried in order)
PROTOCOLS = {
    "train": ("ASVspoof5.train.tsv", ("flac_T",)),
    "dev": ("ASVspoof5.dev.track_1.tsv", ("flac_D",)),
    "eval": ("ASVspoof5.eval.track_1.tsv", ("flac_E_eval", "flac_E")),
}
GENDERS = {"F": "female", "M": "male"}
EXPECTED = "ASVspoof5_protocols/ASVspoof5.{train,dev.track_1,eval.track_1}.tsv and flac_T/, flac_D/, flac_E_eval/"


def protocol_path(root: Path, name: str) -> Path | None:
    for p in (root / "ASVspoof5_protocols" / name, root / name):
        if p.is_file():
            return p
    return None


def parse_line(line: str, where: str) -> dict[str, str]:
    """One protocol line as a column → value mapping (module docstring)."""
    parts = line.split()
    if len(parts) != len(COLUMNS):
        raise CorpusError(
            f"asvspoof5: {where}: expected {len(COLUMNS)} columns ({' '.join(COLUMNS)}), got {len(parts)}"
        )
    row = dict(zip(COLUMNS, parts, strict=True))
    if row["KEY"] not in ("bonafide", "spoof"):
        raise CorpusError(f"asvspoof5: {where}: KEY {row['KEY']!r} is not bonafide or spoof")
    if row["SPEAKER_GENDER"] not in GENDERS:
        raise CorpusError(f"asvspoof5: {where}: SPEAKER_GENDER {row['SPEAKER_GENDER']!r} is not F or M")
    return row


def utterance(row: dict[str, str], split: str, audio_rel: str) -> Utterance:
    attrs = {
        "label": row["KEY"],
        "split": split,
        "attack": "bonafide" if row["KEY"] == "bonafide" else row["ATTACK_LABEL"],
        "attack_tag": row["ATTACK_TAG"],
        "codec": row["CODEC"],
        "codec_q": row["CODEC_Q"],
        "codec_seed": row["CODEC_SEED"],
    }
    return Utterance(
        id=row["FLAC_FILE_NAME"],
        path=audio_rel,
        speaker=row["SPEAKER_ID"],
        gender=GENDERS[row["SPEAKER_GENDER"]],
        attrs={k: v for k, v in attrs.items() if v and v != "-"},
    )


def read_split(root: Path, split: str) -> list[Utterance]:
    name, folders = PROTOCOLS[split]
    proto = protocol_path(root, name)
    if proto is None:
        raise layout_error("asvspoof5", root, EXPECTED, f"no {name} ({describe_dir(root)})")
    folder = next((root / f for f in folders if (root / f).is_dir()), None)
    if folder is None:
        raise layout_error("asvspoof5", root, EXPECTED, f"no audio folder {' or '.join(folders)}/ for {split}")
    utts, absent = [], []
    for lineno, line in enumerate(proto.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        row = parse_line(line, f"{proto.name}:{lineno}")
        audio = folder / f"{row['FLAC_FILE_NAME']}.flac"
        if not audio.is_file():
            absent.append(audio.name)
            continue
        utts.append(utterance(row, split, audio.relative_to(root).as_posix()))
    if absent:
        raise CorpusError(
            f"asvspoof5: {proto.name} lists {len(absent)} file(s) absent from {folder}; first: {absent[0]} "
            "(unpack every archive of the split)"
        )
    return utts


def prepare_asvspoof5(root: Path, cache: Path | None = None, options: dict[str, Any] | None = None) -> Manifest:
    """The CM manifest of ASVspoof 5 under ``root`` (module docstring)."""
    from interbias.corpora.cm_corpus import check_cm_manifest

    options = options or {}
    check_options("asvspoof5", options, ("splits",))
    raw = options.get("splits", "train,dev,eval")
    splits = [s.strip() for s in (raw if isinstance(raw, list) else str(raw).split(",")) if s.strip()]
    bad = [s for s in splits if s not in PROTOCOLS]
    if bad or not splits:
        raise CorpusError(f"asvspoof5: splits {raw!r}: valid: {', '.join(PROTOCOLS)}")
    root = require_root("asvspoof5", root, EXPECTED)
    utts = [u for s in splits for u in read_split(root, s)]
    manifest = Manifest("asvspoof5", root, tuple(utts))
    check_cm_manifest(manifest, where=f"asvspoof5 {root}")
    return manifest


register(
    CorpusAdapter(
        name="asvspoof5",
        description="ASVspoof 5 Track 1: bona fide vs spoof (attacks A01–A32), official train/dev/eval, gender",
        prepare=prepare_asvspoof5,  # type: ignore[arg-type]
        expects=EXPECTED,
        attributes=("gender", "label", "split", "attack", "attack_tag", "codec", "codec_q", "codec_seed"),
    )
)
