"""Degrading one audio file with one operator so a condition can be heard (``interbias
degrade``), and the listing of every registered operator (``interbias data operators``)."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from interbias.utils import atomic
from interbias.utils.errors import AudioError, OperatorError
from interbias.utils.keyvalue import parse_key_values
from interbias.utils.seeding import sha256_file


def parse_params(items: list[str]) -> dict[str, str]:
    """``--param KEY=VALUE`` strings as a mapping (:func:`interbias.utils.keyvalue.parse_key_values`)."""
    return parse_key_values(items, option="--param", error=OperatorError)


def refuse_overwrite(src: Path, dst: Path) -> None:
    """Refuse an output that is the input file (same path, a symbolic or hard link to it):
    writing it would destroy the user's audio."""
    same = src.resolve() == dst.resolve()
    if not same and dst.exists() and src.exists():
        same = dst.samefile(src)
    if same:
        raise AudioError(
            f"{dst}: the output is the input file; writing it would overwrite your audio (choose another OUT)"
        )


def chain_op(spec: str) -> Any:
    """The operator of one ``--op`` spec ``NAME`` or ``NAME:KEY=VALUE[,KEY=VALUE...]``
    (:mod:`interbias.operators.spec`); every error names the spec."""
    from interbias.operators import make_operator
    from interbias.operators.spec import parse_op_spec

    where = f"--op {spec!r}"
    try:
        name, params = parse_op_spec(spec)
        return make_operator(name, params, where=where)
    except OperatorError as exc:
        msg = str(exc)
        raise OperatorError(msg if msg.startswith(where) else f"{where}: {msg}") from None


def degrade_file(
    src: Path,
    dst: Path,
    op_name: str | None,
    params: dict[str, str],
    *,
    seed: int = 0,
    talkers: Callable[[], Any] | None = None,
    chain_specs: list[str] | tuple[str, ...] = (),
) -> dict[str, Any]:
    """Apply one operator (or, given ``chain_specs``, the chain of those ``--op`` specs in
    order, as ``cm score`` does) to an audio file at its own rate and write the result. ``talkers``
    returns the manifest whose talkers babble/crosstalk draw, called only when the operator
    mixes in other talkers (the caller loads the corpus, so operators stay below corpora).
    Input that ``run`` refuses (non-finite, far over full scale) is refused; the output is 16-bit
    PCM with its clipped samples counted (:func:`write_pcm16`)."""
    from interbias.audio import frontend as audio
    from interbias.operators import Chain, OpContext, make_operator
    from interbias.utils.paths import cache_dir

    refuse_overwrite(Path(src), Path(dst))
    if chain_specs:
        chain = Chain(tuple(chain_op(s) for s in chain_specs))
    elif op_name is not None:
        chain = Chain((make_operator(op_name, params, where="--op"),))
    else:
        raise OperatorError("--op: give an operator (see interbias data operators)")
    data, sample_rate_hz = audio.decode(src)
    if data.shape[0] == 0:
        raise AudioError(f"{src}: file holds no samples")
    audio.check_range(data, src)  # what ``run`` refuses, refused here too
    loaded = audio.prepare(
        data.mean(axis=1) if data.shape[1] > 1 else data[:, 0],
        sample_rate_hz,
        audio.FrontEnd(sample_rate_hz=sample_rate_hz, min_duration_s=0.0, max_duration_s=None),
        where=str(src),
        channels=data.shape[1],
        require_signal=False,
    )
    manifest = None
    if chain.draws_talkers:
        if talkers is None:
            raise OperatorError(
                f"--op {chain.label}: this operator mixes in other talkers; name a corpus to draw them from"
            )
        manifest = talkers()
    sha = sha256_file(src)
    key = f"{chain.fingerprint}~seed{seed}"
    y, realised = chain.apply(
        loaded.samples,
        utterance_sha256=sha,
        key=key,
        make_ctx=lambda rng: OpContext(
            sample_rate_hz=sample_rate_hz,
            utterance_id=src.stem,
            speaker="",
            rng=rng,
            corpus=manifest,
            frontend=audio.FrontEnd(sample_rate_hz=sample_rate_hz),
            cache_dir=cache_dir(),
        ),
    )
    written = write_pcm16(dst, y, sample_rate_hz)
    if len(chain.ops) == 1 and realised and "snr_db_achieved" in realised[0]:
        realised[0]["snr_db_in_file"] = snr_in_file(loaded.samples, dst, sample_rate_hz)
    return {
        "input": str(src),
        "output": str(dst),
        "sample_rate_hz": sample_rate_hz,
        "channels_in": int(data.shape[1]),
        "seed": seed,
        "operator": chain.ops[0].to_record() if len(chain.ops) == 1 else [o.to_record() for o in chain.ops],
        "label": chain.label,
        **written,
        "realised": realised,
    }


def snr_in_file(speech: np.ndarray, dst: Path, sample_rate_hz: int) -> float:
    """The SNR the written file holds (dB): the input's active-speech power against the power of
    everything the file adds to it (the noise, and the 16-bit quantisation and clipping of the
    file), over the input's active samples, as the noise operator measures its own."""
    import soundfile as sf

    from interbias.audio.level import active_mask, active_power

    out, _ = sf.read(dst, dtype="float64", always_2d=True)
    mask = active_mask(speech, sample_rate_hz)
    added = active_power(out[: len(speech), 0] - speech.astype(np.float64), mask)
    return float(10 * np.log10(active_power(speech, mask) / added)) if added > 0 else float("inf")


def write_pcm16(dst: Path, y: np.ndarray, sample_rate_hz: int) -> dict[str, Any]:
    """Write ``y`` as 16-bit PCM (the format's own subtype where 16-bit PCM is not one, e.g. Ogg),
    samples past full scale clipped to it; ``peak`` (before clipping), ``subtype`` and
    ``clipped_samples`` (how many were clipped: a listener hears what was written)."""
    import soundfile as sf

    fmt = dst.suffix.lstrip(".").upper()
    if fmt not in sf.available_formats():
        raise AudioError(f"{dst}: cannot write audio (unknown extension {dst.suffix!r})")
    peak = float(np.abs(y).max()) if len(y) else 0.0
    over = np.abs(y) > 1.0
    subtype = "PCM_16" if sf.check_format(fmt, "PCM_16") else sf.default_subtype(fmt)
    buf = io.BytesIO()
    try:
        sf.write(buf, np.clip(y, -1.0, 1.0), sample_rate_hz, format=fmt, subtype=subtype)
    except Exception as exc:  # libsndfile: unwritable format or subtype
        raise AudioError(f"{dst}: cannot write audio ({exc})") from exc
    atomic.write_bytes(dst, buf.getvalue())
    return {"peak": peak, "subtype": subtype, "clipped_samples": int(over.sum())}


def operator_entries() -> list[dict[str, Any]]:
    """Every registered operator: parameters, availability here, and codec details."""
    from interbias.operators import OPERATORS
    from interbias.operators.codec import CODECS, availability, fixed_bitrate

    out = []
    for name, cls in OPERATORS.items():
        ok, why = cls.available()
        entry: dict[str, Any] = {
            "name": name,
            "description": " ".join((cls.__doc__ or "").strip().split("\n\n")[0].split()),
            "parameters": cls.describe_params(),
            "available": ok,
        }
        if why:
            entry["why_not"] = why
        if name == "codec":
            problems = availability()
            entry["codecs"] = [
                {
                    "codec": codec,
                    "available": problems[codec] is None,
                    **({"why_not": problems[codec]} if problems[codec] else {}),
                    "backend": spec.backend,
                    "rate_hz": spec.rate_hz,
                    "rates_hz": list(spec.rates_hz),
                    "default_bitrate": spec.default_bitrate if fixed_bitrate(codec, 1) is None else None,
                    "bitrates": spec.allowed_bitrates() if fixed_bitrate(codec, 1) is None else "fixed by the rate",
                    "description": spec.description,
                }
                for codec, spec in CODECS.items()
            ]
        out.append(entry)
    return out
