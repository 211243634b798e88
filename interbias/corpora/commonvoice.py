"""Mozilla Common Voice (Ardila et al. 2020): one locale folder of a release.

Layout (``cv-corpus-<version>/<locale>/`` of a release)::

    ROOT/validated.tsv       client_id, path, sentence, …, age, gender, accents (or accent), locale
    ROOT/train.tsv, dev.tsv, test.tsv, other.tsv, invalidated.tsv   (other row sets, same columns)
    ROOT/clip_durations.tsv  (recent releases) clip, duration[ms]
    ROOT/clips/common_voice_en_123.mp3

Clips are MP3 and are decoded in process (libsndfile). The speaker is the ``client_id``.
Normalised attributes: ``gender`` (``female_feminine`` → female, ``male_masculine`` → male);
``age_band`` from the age bin by its midpoint (teens, twenties → young; thirties … fifties →
adult; sixties and older → elderly), the bin itself in ``attrs['age_bin']``; ``accent`` from
a single self-reported accent mapped to a short code (``United States English`` → us,
``England English`` → gb, …; other single accents lower-cased), the raw text in
``attrs['accents']``. Option ``split`` picks the TSV (default ``validated``).
"""

from __future__ import annotations

import csv
import re
from pathlib import Path
from typing import Any

from interbias.corpora import CorpusAdapter, register
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

EXPECTED = "a Common Voice locale folder: validated.tsv (client_id, path, age, gender, accents) and clips/*.mp3"
REQUIRED_COLUMNS = ("client_id", "path")
#: Age bins -> midpoint in years.
AGE_BINS = {
    "teens": 15,
    "twenties": 25,
    "thirties": 35,
    "fourties": 45,
    "forties": 45,
    "fifties": 55,
    "sixties": 65,
    "seventies": 75,
    "eighties": 85,
    "nineties": 95,
}
#: Self-reported accents (old codes and release labels) -> the shared accent codes.
ACCENTS = {
    "us": "us",
    "united states english": "us",
    "england": "gb",
    "england english": "gb",
    "scotland": "sc",
    "scottish english": "sc",
    "bermuda": "wi",
    "west indies and bermuda (bahamas, bermuda, jamaica, trinidad)": "wi",
    "indian": "in",
    "india and south asia (india, pakistan, sri lanka)": "in",
    "canada": "ca",
    "canadian english": "ca",
    "australia": "au",
    "australian english": "au",
    "ireland": "ie",
    "irish english": "ie",
    "newzealand": "nz",
    "new zealand english": "nz",
    "african": "za",
    "southern african (south africa, zimbabwe, namibia)": "za",
    "wales": "wales",
    "welsh english": "wales",
    "hongkong": "hk",
    "hong kong english": "hk",
    "philippines": "ph",
    "filipino": "ph",
    "singapore": "sg",
    "singaporean english": "sg",
    "malaysia": "my",
    "malaysian english": "my",
}


def normalise_accent(raw: str) -> str | None:
    """The shared code of one self-reported accent; ``None`` for none or several."""
    parts = [p.strip() for p in raw.split("|") if p.strip()]
    if len(parts) != 1:
        return None
    key = parts[0].lower()
    return ACCENTS.get(key, re.sub(r"\s+", "_", key))


def _durations(root: Path) -> dict[str, float]:
    path = root / "clip_durations.tsv"
    if not path.is_file():
        return {}
    out = {}
    with path.open(newline="", encoding="utf-8") as fh:
        reader = csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)
        header = next(reader, [])
        if len(header) < 2 or header[0] != "clip":
            raise layout_error("commonvoice", root, "clip_durations.tsv with columns clip, duration[ms]", str(header))
        for row in reader:
            if len(row) >= 2:
                try:
                    out[row[0]] = int(row[1]) / 1000.0
                except ValueError:
                    raise CorpusError(
                        f"commonvoice: {path}: duration {row[1]!r} of {row[0]} is not an integer"
                    ) from None
    return out


def prepare_commonvoice(root: Path, cache: Path | None = None, options: dict[str, Any] | None = None) -> Manifest:
    """The manifest of one Common Voice locale folder (rows of ``split``.tsv)."""
    options = options or {}
    check_options("commonvoice", options, ("split",))
    split = str(options.get("split", "validated"))
    root = require_root("commonvoice", root, EXPECTED)
    tsv = root / f"{split}.tsv"
    clips = root / "clips"
    if not tsv.is_file() or not clips.is_dir():
        raise layout_error("commonvoice", root, EXPECTED.replace("validated.tsv", f"{split}.tsv"), describe_dir(root))
    with tsv.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)
        columns = reader.fieldnames or []
        missing = [c for c in REQUIRED_COLUMNS if c not in columns]
        if missing:
            raise layout_error(
                "commonvoice",
                root,
                f"{tsv.name} columns {', '.join(REQUIRED_COLUMNS)}",
                f"columns {', '.join(columns)}",
            )
        rows = list(reader)
    if not rows:
        raise layout_error("commonvoice", root, f"clips listed in {tsv.name}", "no rows")
    accent_col = "accents" if "accents" in columns else ("accent" if "accent" in columns else None)
    durations = _durations(root)
    headers = HeaderCache(cache, "commonvoice", root)
    missing_clips = [r["path"] for r in rows if not (clips / r["path"]).is_file()]
    if missing_clips:
        raise CorpusError(
            f"commonvoice: {len(missing_clips)} clip(s) listed in {tsv} are not in {clips}; first: {missing_clips[0]}"
        )
    utts = []
    for row in rows:
        name = row["path"]
        relpath = f"clips/{name}"
        if name in durations:
            duration, sample_rate_hz = durations[name], None
        else:
            info = headers.info(relpath)
            duration, sample_rate_hz = info.duration_s, info.sample_rate_hz
        attrs: dict[str, str] = {}
        age_bin = (row.get("age") or "").strip().lower()
        band = None
        if age_bin:
            attrs["age_bin"] = age_bin
            if age_bin not in AGE_BINS:
                raise CorpusError(f"commonvoice: {tsv}: unknown age bin {age_bin!r} for {name}")
            band = age_band(AGE_BINS[age_bin])
        accent = None
        if accent_col and (row.get(accent_col) or "").strip():
            attrs["accents"] = row[accent_col].strip()
            accent = normalise_accent(row[accent_col])
        for col in ("locale", "variant", "sentence_id", "segment"):
            if (row.get(col) or "").strip():
                attrs[col] = row[col].strip()
        gender_raw = (row.get("gender") or "").strip()
        if gender_raw:
            attrs["gender_label"] = gender_raw
        utts.append(
            Utterance(
                id=Path(name).stem,
                path=relpath,
                speaker=row["client_id"],
                gender=normalise_gender(gender_raw),
                age_band=band,
                accent=accent,
                text=(row.get("sentence") or None),
                duration_s=duration,
                sample_rate_hz=sample_rate_hz,
                attrs=attrs,
            )
        )
    headers.save()
    return Manifest("commonvoice", root, tuple(utts))


register(
    CorpusAdapter(
        name="commonvoice",
        description="Common Voice locale folder: crowd-sourced MP3 clips with self-reported age, gender, accent",
        prepare=prepare_commonvoice,  # type: ignore[arg-type]
        expects=EXPECTED,
        attributes=(
            "gender",
            "age_band",
            "accent",
            "text",
            "age_bin",
            "accents",
            "locale",
            "variant",
            "gender_label",
        ),
    )
)
