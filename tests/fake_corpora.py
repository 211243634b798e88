"""Tiny fake corpora in each corpus's real published layout, with short synthetic audio."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import soundfile as sf


def tone(
    path: Path, *, seconds: float = 1.5, sample_rate_hz: int = 16000, freq: float = 220.0, fmt: str | None = None
) -> None:
    """Write a short sine (plus a little deterministic noise) to ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    t = np.arange(int(seconds * sample_rate_hz)) / sample_rate_hz
    noise = np.random.default_rng(int(freq)).standard_normal(len(t))
    x = (0.3 * np.sin(2 * np.pi * freq * t) + 0.01 * noise).astype(np.float32)
    sf.write(str(path), x, sample_rate_hz, format=fmt or path.suffix.lstrip(".").upper())


def ravdess(root: Path, actors: tuple[int, ...] = (1, 2, 3), nested: bool = False) -> Path:
    """Actor_XX folders; every emotion at normal intensity, statement 01/02, repetition 01."""
    base = root / "Audio_Speech_Actors_01-24" if nested else root
    for a in actors:
        for emo in range(1, 9):
            for stmt in ("01", "02"):
                tone(base / f"Actor_{a:02d}" / f"03-01-{emo:02d}-01-{stmt}-01-{a:02d}.wav", freq=100 + 10 * a + emo)
        # one strong-intensity file and one song file (song must be left out)
        tone(base / f"Actor_{a:02d}" / f"03-01-05-02-01-02-{a:02d}.wav", freq=300 + a)
        tone(base / f"Actor_{a:02d}" / f"03-02-03-01-01-01-{a:02d}.wav", freq=400 + a)
    return root


def torgo(root: Path) -> Path:
    """F01 and M01 (dysarthria), FC01 and MC01 (controls, MC01 inside an MC/ group folder)."""
    for spk, where in (("F01", root), ("M01", root), ("FC01", root), ("MC01", root / "MC")):
        for session in ("Session1", "Session2"):
            for i in (1, 2):
                name = f"{i:04d}"
                for mic in ("wav_arrayMic", "wav_headMic"):
                    tone(where / spk / session / mic / f"{name}.wav", freq=150 + i + len(spk))
                prompt = where / spk / session / "prompts" / f"{name}.txt"
                prompt.parent.mkdir(parents=True, exist_ok=True)
                prompt.write_text(f"prompt {spk} {session} {i}\n")
        (where / spk / "Notes").mkdir(exist_ok=True)
    return root


EARS_FILES = (
    "emo_anger_sentences",
    "emo_neutral_sentences",
    "emo_adoration_freeform",
    "rainbow_01_regular",
    "rainbow_01_whisper",
    "sentences_02_highpitch",
    "freeform_speech_01",
    "nonverbal_laughing",
)


def ears(root: Path) -> Path:
    stats = {
        "p001": {"age": "36-45", "gender": "male", "native language": "german", "height": "6' - 6'3"},
        "p002": {"age": "18-25", "gender": "female", "native language": "american english"},
        "p003": {"age": "66-75", "gender": "female", "native language": "english"},
        "p107": {"age": "26-35", "gender": "male", "native language": "spanish"},
    }
    (root).mkdir(parents=True, exist_ok=True)
    (root / "speaker_statistics.json").write_text(json.dumps(stats, indent=2))
    (root / "transcripts.json").write_text(json.dumps({"rainbow_01_regular": "When the sunlight strikes raindrops."}))
    for i, spk in enumerate(("p001", "p002", "p003")):
        for j, name in enumerate(EARS_FILES):
            tone(root / spk / f"{name}.wav", sample_rate_hz=48000, seconds=1.2, freq=120 + 30 * i + j)
    return root


CV_HEADER = [
    "client_id",
    "path",
    "sentence_id",
    "sentence",
    "sentence_domain",
    "up_votes",
    "down_votes",
    "age",
    "gender",
    "accents",
    "variant",
    "locale",
    "segment",
]
CV_ROWS = [
    ("aaa111", "common_voice_en_1.mp3", "twenties", "female_feminine", "United States English"),
    ("aaa111", "common_voice_en_2.mp3", "twenties", "female_feminine", "United States English"),
    ("bbb222", "common_voice_en_3.mp3", "sixties", "male_masculine", "England English"),
    ("bbb222", "common_voice_en_4.mp3", "sixties", "male_masculine", "England English"),
    ("ccc333", "common_voice_en_5.mp3", "fourties", "", "Scottish English|England English"),
    ("ddd444", "common_voice_en_6.mp3", "", "non-binary", "Kenyan English"),
]


def commonvoice(root: Path, *, durations: bool = True) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    lines = ["\t".join(CV_HEADER)]
    dur = ["clip\tduration[ms]"]
    for k, (client, clip, age, gender, accents) in enumerate(CV_ROWS):
        tone(root / "clips" / clip, sample_rate_hz=48000, seconds=1.0 + 0.25 * k, freq=200 + 20 * k, fmt="MP3")
        fields = [client, clip, f"s{k}", f"sentence {k}", "", "2", "0", age, gender, accents, "", "en", ""]
        lines.append("\t".join(fields))
        dur.append(f"{clip}\t{int(1000 + 250 * k)}")
    (root / "validated.tsv").write_text("\n".join(lines) + "\n")
    (root / "test.tsv").write_text("\n".join(lines[:3]) + "\n")
    if durations:
        (root / "clip_durations.tsv").write_text("\n".join(dur) + "\n")
    return root


def l2arctic(root: Path) -> Path:
    for spk in ("ABA", "SKA", "HJK"):
        for i in (1, 2, 3):
            stem = f"arctic_a{i:04d}"
            tone(root / spk / "wav" / f"{stem}.wav", sample_rate_hz=44100, freq=180 + i)
            t = root / spk / "transcript" / f"{stem}.txt"
            t.parent.mkdir(parents=True, exist_ok=True)
            t.write_text(f"Author of the danger trail {i}")
        (root / spk / "annotation").mkdir(exist_ok=True)
    tone(root / "suitcase_corpus" / "wav" / "aba.wav", sample_rate_hz=44100)
    (root / "README.md").write_text("L2-ARCTIC\n")
    return root


VOX_META = (
    "VoxCeleb1 ID\tVGGFace1 ID\tGender\tNationality\tSet\n"
    "id10001\tA.J._Buckley\tm\tIreland\tdev\n"
    "id10002\tA.R._Rahman\tm\tIndia\tdev\n"
    "id10270\tEminem\tm\tUSA\ttest\n"
    "id10309\tVanessa_Redgrave\tf\tUK\ttest\n"
)


def voxceleb1(root: Path, *, dates: bool = False, births: bool = False) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "vox1_meta.csv").write_text(VOX_META)
    videos = {
        "id10001": ("1zcIwhmdeo4", "7gWzIy6yIIk"),
        "id10270": ("5r0dWxy17C8", "x6uYqmx31kE"),
        "id10309": ("0cmPWVALMXM", "Zw9Xh0lDGEY"),
    }
    for spk, vids in videos.items():
        for v in vids:
            for n in (1, 2):
                tone(root / "wav" / spk / v / f"{n:05d}.wav", freq=100 + n + len(v))
    (root / "veri_test2.txt").write_text("1 id10270/x6uYqmx31kE/00001.wav id10270/5r0dWxy17C8/00002.wav\n")
    if dates:
        (root / "video_dates.csv").write_text(
            "video,date\n1zcIwhmdeo4,2010-05-01\n7gWzIy6yIIk,2014\n5r0dWxy17C8,2012-01-30\nx6uYqmx31kE,2012\n"
        )
    if births:
        (root / "speaker_birth_years.csv").write_text("speaker,birth_year\nid10001,1977\nid10270,1972\n")
    return root


#: ASVspoof 5 protocol lines per split: speaker, file, gender, codec, codec_q, seed, tag, attack, key.
ASVSPOOF5 = {
    "train": [
        ("T_0001", "T_0000000001", "F", "-", "-", "-", "-", "bonafide", "bonafide"),
        ("T_0001", "T_0000000002", "F", "-", "-", "-", "AC3", "A05", "spoof"),
        ("T_0002", "T_0000000003", "M", "-", "-", "-", "-", "bonafide", "bonafide"),
        ("T_0002", "T_0000000004", "M", "-", "-", "-", "AC1", "A01", "spoof"),
    ],
    "dev": [
        ("D_0001", "D_0000000001", "M", "-", "-", "-", "-", "bonafide", "bonafide"),
        ("D_0001", "D_0000000002", "M", "-", "-", "-", "AC2", "A11", "spoof"),
        ("D_0002", "D_0000000003", "F", "-", "-", "-", "-", "bonafide", "bonafide"),
    ],
    "eval": [
        ("E_0001", "E_0000000001", "F", "C05", "4", "1", "-", "bonafide", "bonafide"),
        ("E_0001", "E_0000000002", "F", "C05", "4", "2", "AC3", "A17", "spoof"),
        ("E_0002", "E_0000000003", "M", "-", "-", "-", "AC1", "A32", "spoof"),
    ],
}


def asvspoof5(root: Path, *, in_protocol_folder: bool = True) -> Path:
    """The Zenodo layout: ASVspoof5_protocols/*.tsv and flac_T/, flac_D/, flac_E_eval/."""
    names = {"train": "ASVspoof5.train.tsv", "dev": "ASVspoof5.dev.track_1.tsv", "eval": "ASVspoof5.eval.track_1.tsv"}
    folders = {"train": "flac_T", "dev": "flac_D", "eval": "flac_E_eval"}
    proto_dir = root / "ASVspoof5_protocols" if in_protocol_folder else root
    proto_dir.mkdir(parents=True, exist_ok=True)
    for k, (split, rows) in enumerate(ASVSPOOF5.items()):
        (proto_dir / names[split]).write_text("".join(" ".join((*r, "-")) + "\n" for r in rows))
        for i, r in enumerate(rows):  # a tone of its own per file: splits share no audio
            tone(root / folders[split] / f"{r[1]}.flac", seconds=0.5, freq=200 + 10 * i + 100 * k)
    return root
