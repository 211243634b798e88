"""The black-box protocol (TRIAD/ORCA, Section IV) for verification systems that only return scores.

``prepare``: from a manifest with speaker, text and style (and voice-level group attributes),
matched trial families. A family is a *base* trial (enrolment: the speaker's utterance of the
first text in the reference style; test: one utterance in the reference style of another text —
the same speaker for a target, another speaker for a non-target) and its *variants*, each
changing exactly one attribute of the test utterance: ``style`` (same speaker and text, each
other style), ``text`` (same speaker and style, ``--text-variants`` other texts) or ``noise``
(the base test itself with Gaussian noise at each ``--noise-snr`` dB, rendered to FLAC), and with
``--voice-variants N`` ``voice`` (only the speaker changes: :mod:`interbias.audits.blackbox_voice`).
The label never changes within a family, nor the enrolment except in a target family's voice
variant, so a system invariant to an attribute gives its variants the decision of their base. Draws come from ``derive_rng("blackbox", seed, ...)``.

``analyze``: the system's scores (or accept/reject decisions) per ``trial_id``:

- decisions: ``score ≥ threshold``, with the threshold given or the EER threshold of the base
  trials (:func:`interbias.metrics.verification.eer_from_sweep`);
- invariance-violation ratio per axis ``R_a`` = share of axis-``a`` variants whose decision
  differs from their base trial's; ``mean_abs_shift_a`` = mean |score − base score|;
- per group of each attribute (the enrolled speaker's): accuracy (share of correct decisions)
  and EER (scores only) on the base trials; gap = max − min over groups, with a speaker-level
  permutation p-value: the attribute's values shuffled across speakers (group sizes kept),
  ``p = (1 + #{gap_perm ≥ gap}) / (1 + n_perm)``;
- per group and axis, the ratio with a speaker-bootstrap interval and the worst-to-best ratio
  (:func:`interbias.audits.blackbox_voice.group_invariance_rows`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from interbias.audits.blackbox_voice import (
    check_voice_axis,
    group_invariance_rows,
    joint_groups,
    voice_rows,
    voice_rows_overall,
)
from interbias.utils.errors import AnalysisError
from interbias.utils.seeding import derive_rng

AXES = ("style", "text", "noise")
PROTOCOL_COLUMNS = (
    "trial_id",
    "family",
    "axis",
    "level",
    "label",
    "enrol",
    "test",
    "enrol_path",
    "test_path",
    "enrol_speaker",
    "test_speaker",
    "text",
    "style",
)
RESULT_COLUMNS = (
    "metric",
    "axis",
    "attribute",
    "group",
    "value",
    "n",
    "p_value",
    "n_perm",
    "threshold",
    "note",
    "ci_low",
    "ci_high",
)


@dataclass(frozen=True)
class ProtocolOptions:
    reference_style: str = "neutral"
    nontargets: int = 2
    text_variants: int = 2
    seed: int = 0
    #: Gaussian-noise variants of the base test (SNR in dB on active speech), rendered to FLAC.
    noise_snr_db: tuple[float, ...] = (15.0,)
    #: Voice variants per family within and across groups (:mod:`interbias.audits.blackbox_voice`).
    voice_variants: int = 0


def _index(manifest: Any) -> tuple[dict[tuple[str, str, str], Any], list[str], list[str], list[str]]:
    from interbias.analysis.geometry.noise import text_label

    index: dict[tuple[str, str, str], Any] = {}
    for u in manifest:
        text, style = text_label(u), u.style
        if not text or not style:
            raise AnalysisError(f"blackbox prepare: utterance {u.id!r} has no text or style label")
        index.setdefault((u.speaker, str(text), style), u)
    speakers = sorted({k[0] for k in index})
    texts = sorted({k[1] for k in index})
    styles = sorted({k[2] for k in index})
    return index, speakers, texts, styles


def prepare(manifest: Any, groups: Sequence[str], options: ProtocolOptions) -> pd.DataFrame:
    """The protocol table (:data:`PROTOCOL_COLUMNS` + one column per group attribute)."""
    index, speakers, texts, styles = _index(manifest)
    ref = options.reference_style
    if ref not in styles:
        raise AnalysisError(f"blackbox prepare: reference style {ref!r} not in the manifest's styles {styles}")
    if len(speakers) < 2 or len(texts) < 2:
        raise AnalysisError("blackbox prepare: needs at least 2 speakers and 2 texts")
    group_of = {}
    for attr in groups:
        vals = {u.speaker: u.get(attr) for u in manifest}
        if any(v is None for v in vals.values()):
            raise AnalysisError(f"blackbox prepare: group attribute {attr!r} is missing for some speakers")
        group_of[attr] = vals
    joint = joint_groups(manifest, groups) if options.voice_variants > 0 else {}
    if joint:
        check_voice_axis(joint, groups)
    rows: list[dict[str, Any]] = []
    for spk in speakers:
        enrol = index.get((spk, texts[0], ref))
        if enrol is None:
            continue
        rng = derive_rng("blackbox", options.seed, spk)
        others = [s for s in speakers if s != spk]
        picks = [others[i] for i in rng.permutation(len(others))[: options.nontargets]]
        for test_spk in [spk, *picks]:
            before = len(rows)
            _family(rows, index, enrol, test_spk, texts, styles, options, rng)
            if joint and len(rows) > before:  # rows[before] is the family's base trial
                rows += voice_rows(rows[before], index, joint, texts[0], options.voice_variants, rng)
    if not rows:
        raise AnalysisError(f"blackbox prepare: no speaker has an utterance of {texts[0]!r} in style {ref!r}")
    frame = pd.DataFrame(rows)
    frame.insert(0, "trial_id", [f"t{i:06d}" for i in range(len(frame))])
    for attr, vals in group_of.items():
        frame[attr] = [str(vals[s]) for s in frame["enrol_speaker"]]
    return frame


def shortfalls(frame: pd.DataFrame, options: ProtocolOptions) -> list[str]:
    """One line per count of :class:`ProtocolOptions` that the manifest could not give in full
    (``prepare`` draws at most what exists): how many units got fewer than asked, and the most
    any got. Empty when every count was met."""
    base = frame[frame["axis"] == "base"]
    per_speaker = base[base["label"] == "nontarget"].groupby("enrol").size()
    per_speaker = per_speaker.reindex(base["enrol"].unique(), fill_value=0)
    text = frame[frame["axis"] == "text"].groupby("family").size().reindex(base["family"], fill_value=0)
    counts = [("--nontargets", "", options.nontargets, per_speaker, "speakers")]
    counts.append(("--text-variants", "", options.text_variants, text, "families"))
    if options.voice_variants > 0:
        voice = frame[frame["axis"] == "voice"]
        kinds = voice["level"].astype(str).str.split(":").str[0]
        for kind in ("within", "across"):
            got = voice[kinds == kind].groupby("family").size().reindex(base["family"], fill_value=0)
            counts.append(("--voice-variants", f" ({kind})", options.voice_variants, got, "families"))
    lines = []
    for option, where, asked, got, unit in counts:
        short = int((got < asked).sum())
        if short:
            lines.append(
                f"{option} {asked}{where}: {short} of {len(got)} {unit} got fewer "
                f"(at most {int(got.max())}; the manifest has no more)"
            )
    return lines


def _family(
    rows: list[dict[str, Any]],
    index: dict[tuple[str, str, str], Any],
    enrol: Any,
    test_spk: str,
    texts: list[str],
    styles: list[str],
    options: ProtocolOptions,
    rng: np.random.Generator,
) -> None:
    """Append one base trial and its one-attribute variants."""
    ref = options.reference_style
    candidates = [t for t in texts[1:] if (test_spk, t, ref) in index]
    if not candidates:
        return
    text = candidates[int(rng.integers(len(candidates)))]
    family = f"{enrol.id}|{test_spk}|{text}"
    label = "target" if test_spk == enrol.speaker else "nontarget"

    def add(axis: str, level: str, utt: Any) -> None:
        rows.append(
            {
                "family": family,
                "axis": axis,
                "level": level,
                "label": label,
                "enrol": enrol.id,
                "test": utt.id,
                "enrol_path": "",
                "test_path": "",
                "enrol_speaker": enrol.speaker,
                "test_speaker": test_spk,
                "text": index_text(utt),
                "style": utt.style,
                "_enrol": enrol,
                "_test": utt,
            }
        )

    add("base", "", index[(test_spk, text, ref)])
    for snr in options.noise_snr_db:
        add("noise", f"gaussian_{snr:g}", index[(test_spk, text, ref)])
    for style in styles:
        if style != ref and (test_spk, text, style) in index:
            add("style", style, index[(test_spk, text, style)])
    others = [t for t in texts[1:] if t != text and (test_spk, t, ref) in index]
    for i in rng.permutation(len(others))[: options.text_variants]:
        add("text", others[int(i)], index[(test_spk, others[int(i)], ref)])


def index_text(u: Any) -> str:
    from interbias.analysis.geometry.noise import text_label

    return str(text_label(u))


def with_paths(frame: pd.DataFrame, manifest: Any, audio_dir: Path | None = None) -> pd.DataFrame:
    """Fill ``enrol_path``/``test_path`` with absolute paths and drop the helper columns. Noise
    variants are rendered into ``audio_dir`` (:func:`render_noise`); their ``test`` id gets a
    ``+<level>`` suffix."""
    out = frame.copy()
    out["enrol_path"] = [str(manifest.resolve(u)) for u in frame["_enrol"]]
    out["test_path"] = [str(manifest.resolve(u)) for u in frame["_test"]]
    noisy = (out["axis"] == "noise").to_numpy()
    if noisy.any():
        if audio_dir is None:
            raise AnalysisError("blackbox prepare: noise variants need a folder for their audio")
        for i in np.flatnonzero(noisy):
            utt, level = frame["_test"].iloc[i], str(out["level"].iloc[i])
            out.iloc[i, out.columns.get_loc("test_path")] = str(render_noise(manifest, utt, level, audio_dir))
            out.iloc[i, out.columns.get_loc("test")] = f"{utt.id}+{level}"
    return out.drop(columns=["_enrol", "_test"])


def render_noise(manifest: Any, utt: Any, level: str, audio_dir: Path) -> Path:
    """``utt`` through the ``noise`` operator (``gaussian_<snr>``), written as 16-bit FLAC at
    16 kHz under ``audio_dir``; the draw is the operator's derived seed (utterance sha256, chain)."""
    from interbias.audio.frontend import FrontEnd, load, write_flac16
    from interbias.operators import OpContext, parse_chain
    from interbias.utils.paths import slug

    snr = float(level.removeprefix("gaussian_"))
    chain = parse_chain([{"op": "noise", "kind": "gaussian", "snr_db": snr}], where="blackbox noise")
    wave = load(manifest.resolve(utt), FrontEnd(), span=utt.span).samples
    sample_rate_hz = FrontEnd().sample_rate_hz

    def ctx(rng: np.random.Generator) -> OpContext:
        return OpContext(sample_rate_hz=sample_rate_hz, utterance_id=utt.id, speaker=utt.speaker, rng=rng)

    noisy, _ = chain.apply(wave, utterance_sha256=utt.sha256 or utt.id, make_ctx=ctx)
    path = Path(audio_dir).resolve() / f"{slug(utt.id)}-{level}.flac"
    write_flac16(path, noisy, sample_rate_hz)
    return path


# ---- analysis ---------------------------------------------------------------------------------------


def read_answers(path: Path, protocol: pd.DataFrame) -> pd.DataFrame:
    """The system's answers joined to the protocol: a CSV with ``trial_id`` and ``score`` (a number)
    or ``decision`` (1/0, accept/reject, true/false); every protocol trial must be answered once,
    and only protocol trials."""
    path = Path(path)
    if not path.is_file():
        raise AnalysisError(f"scores file {path} does not exist")
    try:
        ans = pd.read_csv(path, dtype={"trial_id": str})
    except (pd.errors.ParserError, UnicodeDecodeError, pd.errors.EmptyDataError) as exc:
        raise AnalysisError(f"{path}: not a readable CSV ({exc})") from exc
    answer = "score" if "score" in ans.columns else "decision" if "decision" in ans.columns else None
    if "trial_id" not in ans.columns or answer is None:
        raise AnalysisError(f"{path}: needs columns trial_id and score (or decision); found {', '.join(ans.columns)}")
    dup = ans["trial_id"][ans["trial_id"].duplicated()]
    if len(dup):
        raise AnalysisError(f"{path}: trial {dup.iloc[0]!r} is answered more than once")
    unknown = ans["trial_id"][~ans["trial_id"].isin(protocol["trial_id"])]
    if len(unknown):
        raise AnalysisError(
            f"{path}: {len(unknown)} answer(s) for trial ids not in the protocol (an answers file of another "
            f"protocol?); first: {unknown.iloc[0]!r}"
        )
    merged = protocol.merge(ans[["trial_id", answer]], on="trial_id", how="left", validate="one_to_one")
    missing = merged[answer].isna()
    if missing.any():
        raise AnalysisError(
            f"{path}: {int(missing.sum())} of {len(merged)} protocol trials have no answer; first: "
            f"{merged['trial_id'][missing].iloc[0]!r}"
        )
    if answer == "score":
        merged["score"] = pd.to_numeric(merged["score"], errors="coerce")
        if not np.isfinite(merged["score"]).all():
            raise AnalysisError(f"{path}: score values must be finite numbers")
    else:
        lookup = {"1": True, "0": False, "accept": True, "reject": False, "true": True, "false": False}
        vals = merged["decision"].astype(str).str.strip().str.lower()
        bad = sorted(set(vals) - set(lookup))
        if bad:
            raise AnalysisError(f"{path}: decision values are 1/0, accept/reject or true/false; got {bad[0]!r}")
        merged["decision"] = vals.map(lookup).astype(bool)
    return merged


@dataclass(frozen=True)
class BlackboxResult:
    table: pd.DataFrame
    threshold: float


def analyze(
    answers: pd.DataFrame, groups: Sequence[str], *, threshold: float | None, n_perm: int, seed: int
) -> BlackboxResult:
    """Invariance-violation ratios, group accuracies/EERs, gaps and permutation p-values."""
    from interbias.metrics.verification import eer_from_sweep, threshold_sweep

    if n_perm < 1:
        raise AnalysisError(f"--permutations must be >= 1; got {n_perm}")
    has_scores = "score" in answers.columns
    base = answers[answers["axis"] == "base"]
    target = (answers["label"] == "target").to_numpy()
    if has_scores:
        if threshold is None:
            if base["label"].nunique() < 2:
                raise AnalysisError("blackbox analyze: the base trials need targets and non-targets for a threshold")
            threshold = eer_from_sweep(threshold_sweep(base["score"], base["label"] == "target"))[1]
        decision = answers["score"].to_numpy() >= threshold
    else:
        decision = answers["decision"].to_numpy(dtype=bool)
        threshold = math.nan
    frame = answers.assign(decision=decision, correct=decision == target)
    rows = _invariance_rows(frame, has_scores)
    if (frame["axis"] == "voice").any():
        rows += voice_rows_overall(frame, has_scores)
    base = frame[frame["axis"] == "base"]
    for attr in groups:
        if attr not in base.columns:
            raise AnalysisError(f"blackbox analyze: group attribute {attr!r} is not a protocol column")
        rows += _group_rows(base, attr, has_scores, n_perm, derive_rng("blackbox-permutation", seed, attr))
    rows += group_invariance_rows(frame, groups, seed=seed)
    table = pd.DataFrame(rows, columns=list(RESULT_COLUMNS))
    table["threshold"] = threshold
    return BlackboxResult(table, float(threshold))


def _invariance_rows(frame: pd.DataFrame, has_scores: bool) -> list[dict[str, Any]]:
    base = frame[frame["axis"] == "base"].set_index("family")
    rows = []
    for axis in AXES + (("voice",) if (frame["axis"] == "voice").any() else ()):
        var = frame[frame["axis"] == axis]
        ref = base.loc[var["family"]]
        flips = var["decision"].to_numpy() != ref["decision"].to_numpy()
        n = len(var)
        rows.append(_row("invariance_violation", axis=axis, value=flips.mean() if n else math.nan, n=n))
        if has_scores:
            shift = np.abs(var["score"].to_numpy() - ref["score"].to_numpy())
            rows.append(_row("mean_abs_shift", axis=axis, value=shift.mean() if n else math.nan, n=n))
    return rows


def group_metric(base: pd.DataFrame, groups: np.ndarray, metric: str) -> dict[str, float]:
    """Accuracy (share of correct decisions) or EER of the base trials per group value."""
    from interbias.metrics.verification import eer

    out = {}
    correct = base["correct"].to_numpy(dtype=float)
    target = (base["label"] == "target").to_numpy()
    score = base["score"].to_numpy(dtype=float) if metric == "eer" else None
    for g in sorted(set(groups)):
        rows = groups == g
        if score is None:
            out[g] = float(correct[rows].mean())
        else:
            lab = target[rows]
            out[g] = float(eer(score[rows], lab)) if 0 < lab.sum() < len(lab) else math.nan
    return out


def _group_rows(
    base: pd.DataFrame, attr: str, has_scores: bool, n_perm: int, rng: np.random.Generator
) -> list[dict[str, Any]]:
    speakers = base["enrol_speaker"].to_numpy()
    of_speaker = dict(zip(speakers, base[attr].astype(str), strict=True))
    names = sorted(of_speaker)
    labels = np.asarray([of_speaker[s] for s in names])
    pos = {s: i for i, s in enumerate(names)}
    row_spk = np.asarray([pos[s] for s in speakers])
    rows = []
    for metric in ("accuracy", "eer") if has_scores else ("accuracy",):

        def gap(lab: np.ndarray, metric: str = metric) -> float:
            vals = list(group_metric(base, lab[row_spk], metric).values())
            return math.nan if any(math.isnan(v) for v in vals) else max(vals) - min(vals)

        by_group = group_metric(base, labels[row_spk], metric)
        for g, v in by_group.items():
            n = int((labels[row_spk] == g).sum())
            rows.append(_row(metric, attribute=attr, group=g, value=v, n=n))
        observed = gap(labels)
        perms = [gap(labels[rng.permutation(len(labels))]) for _ in range(n_perm)]
        finite = [p for p in perms if not math.isnan(p)]
        p = (1 + sum(p >= observed - 1e-12 for p in finite)) / (1 + len(finite)) if finite else math.nan
        rows.append(
            _row(
                f"gap_{metric}",
                attribute=attr,
                group=f"{len(by_group)} groups",
                value=observed,
                n=len(base),
                p_value=p,
                n_perm=len(finite),
                note="max − min over groups; speaker-level permutation p",
            )
        )
    return rows


def _row(metric: str, **kw: Any) -> dict[str, Any]:
    return {**dict.fromkeys(RESULT_COLUMNS, ""), "metric": metric, **kw}


def score_with(protocol: pd.DataFrame, embed: Callable[[str], np.ndarray]) -> pd.DataFrame:
    """``trial_id, score``: cosine of ``embed(path)`` of enrolment and test (each path embedded once)."""
    cache: dict[str, np.ndarray] = {}

    def vec(path: str) -> np.ndarray:
        if path not in cache:
            v = np.asarray(embed(path), dtype=np.float64).reshape(-1)
            cache[path] = v / np.linalg.norm(v)
        return cache[path]

    scores = [float(vec(e) @ vec(t)) for e, t in zip(protocol["enrol_path"], protocol["test_path"], strict=True)]
    return pd.DataFrame({"trial_id": protocol["trial_id"], "score": scores})


def encoder_embedder(label: str, device: str = "cpu") -> Callable[[str], np.ndarray]:
    """``embed(path)`` with a local encoder (the stand-in for a closed system): audio through
    the default front end (16 kHz mono), then ``encoder.embed``."""
    from interbias.audio.frontend import load
    from interbias.encoders import load_encoder, restore_threads

    encoder = load_encoder(label, device=device)
    restore_threads()
    return lambda path: encoder.embed([load(Path(path)).samples])[0]


def read_protocol(path: Path) -> pd.DataFrame:
    """A protocol.csv written by ``interbias audit blackbox prepare`` (its columns checked)."""
    path = Path(path)
    if not path.is_file():
        raise AnalysisError(f"protocol file {path} does not exist")
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, UnicodeDecodeError, pd.errors.EmptyDataError) as exc:
        raise AnalysisError(f"{path}: not a readable CSV ({exc})") from exc
    missing = [c for c in PROTOCOL_COLUMNS if c not in frame.columns]
    if missing:
        raise AnalysisError(f"{path}: not a blackbox protocol (missing column(s) {', '.join(missing)})")
    return frame
