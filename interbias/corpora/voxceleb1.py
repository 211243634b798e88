"""VoxCeleb1 (Nagrani et al. 2017): 1,251 celebrities in YouTube interviews.

Layout (dev and test archives extracted into one ``wav/`` folder, metadata beside it)::

    ROOT/vox1_meta.csv     tab-separated: VoxCeleb1 ID, VGGFace1 ID, Gender (m/f), Nationality, Set
    ROOT/wav/id10001/1zcIwhmdeo4/00001.wav
    ROOT/veri_test2.txt, list_test_hard2.txt, list_test_all2.txt, veri_test.txt   (optional)

Utterance ids are ``idXXXXX/<video>/NNNNN`` — the official trial lists' paths without
``.wav`` — and ``session`` is the video. The official trial lists found in the root are
named by :func:`official_trial_lists` (``interbias data prepare`` prints them); reading
them as a run's trial list is the job of ``interbias run --trials``.

VoxCeleb1 carries no recording dates or ages. Two optional files the user supplies add them:

- ``video_dates.csv`` (columns ``video,date``; ``date`` is ``YYYY`` or ``YYYY-MM-DD``, e.g.
  the YouTube publication date) gives ``year`` and ``years_from_first`` (the video's year
  minus the speaker's earliest dated video's year) — the drift labels of E07/E17/E20;
- ``speaker_birth_years.csv`` (columns ``speaker,birth_year``) with the dates gives ``age``
  (year − birth year) and ``age_band``.

Both are proxies (publication is not recording; age is estimated): ``attrs['proxy']`` says
so on every utterance that has them.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path
from typing import Any

from interbias.corpora import Conditional, CorpusAdapter, register
from interbias.corpora.common import (
    HeaderCache,
    age_band,
    check_options,
    describe_dir,
    layout_error,
    normalise_gender,
    require_root,
)
from interbias.corpora.manifest import Manifest, Utterance
from interbias.utils.errors import CorpusError

EXPECTED = "vox1_meta.csv and wav/idXXXXX/<video>/NNNNN.wav"
META_COLUMNS = ("VoxCeleb1 ID", "Gender", "Nationality", "Set")
TRIAL_LISTS = ("veri_test2.txt", "list_test_hard2.txt", "list_test_all2.txt", "veri_test.txt", "list_test_hard.txt")
DATES_FILE = "video_dates.csv"
BIRTH_FILE = "speaker_birth_years.csv"
_ID = re.compile(r"id\d{5}")
_CLIP = re.compile(r"\d{5}\.wav")


def official_trial_lists(root: Path) -> list[Path]:
    """The official VoxCeleb1 trial lists present in ``root`` (for ``run --trials``)."""
    return [root / name for name in TRIAL_LISTS if (root / name).is_file()]


def _read_meta(root: Path) -> dict[str, dict[str, str]]:
    path = root / "vox1_meta.csv"
    text = path.read_text(encoding="utf-8-sig")
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        raise layout_error("voxceleb1", root, f"{path.name} with a header {', '.join(META_COLUMNS)}", "an empty file")
    delimiter = "\t" if "\t" in lines[0] else ","
    reader = csv.DictReader(lines, delimiter=delimiter)
    columns = [c.strip() for c in reader.fieldnames or []]
    missing = [c for c in META_COLUMNS if c not in columns]
    if missing:
        raise layout_error(
            "voxceleb1", root, f"{path.name} columns {', '.join(META_COLUMNS)}", f"columns {', '.join(columns)}"
        )
    out = {}
    for row in reader:
        row = {(k or "").strip(): (v or "").strip() for k, v in row.items()}
        out[row["VoxCeleb1 ID"]] = row
    return out


def _read_two_columns(path: Path, key: str, value: str) -> dict[str, str]:
    with path.open(newline="", encoding="utf-8-sig") as fh:
        reader = csv.DictReader(fh)
        cols = [c.strip() for c in reader.fieldnames or []]
        if key not in cols or value not in cols:
            raise CorpusError(f"voxceleb1: {path} needs columns {key},{value}; found {', '.join(cols) or '(none)'}")
        return {(r[key] or "").strip(): (r[value] or "").strip() for r in reader if (r[key] or "").strip()}


def _year(text: str, where: str) -> int:
    m = re.fullmatch(r"(\d{4})(?:-\d\d(?:-\d\d)?)?", text)
    if not m:
        raise CorpusError(f"voxceleb1: {where}: date {text!r} is not YYYY or YYYY-MM-DD")
    return int(m.group(1))


def prepare_voxceleb1(root: Path, cache: Path | None = None, options: dict[str, Any] | None = None) -> Manifest:
    """The manifest of VoxCeleb1 under ``root`` (dev and test speakers found in ``wav/``)."""
    check_options("voxceleb1", options or {}, ())
    root = require_root("voxceleb1", root, EXPECTED)
    wav = root / "wav"
    if not (root / "vox1_meta.csv").is_file() or not wav.is_dir():
        raise layout_error("voxceleb1", root, EXPECTED, describe_dir(root))
    meta = _read_meta(root)
    speakers = sorted(p for p in wav.iterdir() if p.is_dir())
    bad = [p.name for p in speakers if not _ID.fullmatch(p.name)]
    if bad or not speakers:
        raise layout_error("voxceleb1", root, "wav/ holding speaker folders idXXXXX", describe_dir(wav))
    unknown = [p.name for p in speakers if p.name not in meta]
    if unknown:
        raise layout_error("voxceleb1", root, "every wav/ speaker listed in vox1_meta.csv", f"{unknown[0]} not listed")
    dates: dict[str, int] = {}
    if (root / DATES_FILE).is_file():
        raw = _read_two_columns(root / DATES_FILE, "video", "date")
        dates = {v: _year(d, f"{DATES_FILE} video {v}") for v, d in raw.items() if d}
    births: dict[str, int] = {}
    if (root / BIRTH_FILE).is_file():
        raw = _read_two_columns(root / BIRTH_FILE, "speaker", "birth_year")
        births = {s: _year(b, f"{BIRTH_FILE} speaker {s}") for s, b in raw.items() if b}
    headers = HeaderCache(cache, "voxceleb1", root)
    utts = []
    for sdir in speakers:
        info_row = meta[sdir.name]
        videos = sorted(p for p in sdir.iterdir() if p.is_dir())
        years = [dates[v.name] for v in videos if v.name in dates]
        first = min(years) if years else None
        for vdir in videos:
            for path in sorted(p for p in vdir.iterdir() if p.is_file() and p.suffix.lower() == ".wav"):
                if not _CLIP.fullmatch(path.name):
                    raise layout_error("voxceleb1", root, "clip files NNNNN.wav", path.relative_to(root).as_posix())
                r = path.relative_to(root).as_posix()
                info = headers.info(r)
                attrs = {
                    "nationality": info_row["Nationality"],
                    "set": info_row["Set"],
                    "vggface1_id": info_row.get("VGGFace1 ID", ""),
                }
                attrs = {k: v for k, v in attrs.items() if v}
                age = None
                band = None
                if vdir.name in dates and first is not None:
                    year = dates[vdir.name]
                    attrs.update({"year": str(year), "years_from_first": str(year - first)})
                    proxy = ["year,years_from_first (publication date)"]
                    if sdir.name in births:
                        age = float(year - births[sdir.name])
                        if not 0 <= age <= 120:
                            raise CorpusError(
                                f"voxceleb1: {sdir.name}/{vdir.name}: age {age:g} from {year} (video date) "
                                f"minus {births[sdir.name]} ({BIRTH_FILE}) is not in 0..120"
                            )
                        band = age_band(age)
                        proxy.append("age,age_band (publication year - birth year)")
                    attrs["proxy"] = "; ".join(proxy)
                utts.append(
                    Utterance(
                        id=f"{sdir.name}/{vdir.name}/{path.stem}",
                        path=r,
                        speaker=sdir.name,
                        gender=normalise_gender(info_row["Gender"]),
                        age=age,
                        age_band=band,
                        session=vdir.name,
                        duration_s=info.duration_s,
                        sample_rate_hz=info.sample_rate_hz,
                        attrs=attrs,
                    )
                )
    headers.save()
    if not utts:
        raise layout_error("voxceleb1", root, "NNNNN.wav clips in wav/idXXXXX/<video>/", "no clips")
    # age and its band are the speaker's age at each video's date: they vary within a speaker
    return Manifest("voxceleb1", root, tuple(utts), utterance_level=frozenset({"age", "age_band"}))


register(
    CorpusAdapter(
        name="voxceleb1",
        description="VoxCeleb1: 1,251 celebrities, YouTube interviews; official trial lists veri_test2.txt etc.",
        prepare=prepare_voxceleb1,  # type: ignore[arg-type]
        expects=EXPECTED,
        attributes=("gender", "session", "nationality", "set", "vggface1_id"),
        conditional=(
            Conditional("year", DATES_FILE, "video,date per video: the publication date proxy of drift"),
            Conditional("years_from_first", DATES_FILE, "video,date per video: the publication date proxy of drift"),
            Conditional("age", DATES_FILE, "video,date per video, to date each clip"),
            Conditional("age", BIRTH_FILE, "speaker,birth_year per speaker, for age at publication"),
            Conditional("age_band", DATES_FILE, "video,date per video, to date each clip"),
            Conditional("age_band", BIRTH_FILE, "speaker,birth_year per speaker, for age at publication"),
        ),
    )
)
