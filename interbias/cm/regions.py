"""``interbias cm score LCNN-LFCC-frames --regions FILE``: a frame detector's located fake regions
as a segment file ``cm-eval location`` reads.

Each file is loaded at 16 kHz (no duration limits), optionally degraded (the ``cm score``
operator rules, :mod:`interbias.cm.score_files`), scored whole (the network is fully
convolutional, nothing is padded or cut), and its per-frame P(fake) turned into regions by
:class:`~interbias.cm.lcnn_frames.RegionRule` (threshold + minimum length). The line is
:func:`interbias.corpora.splice.segment_line`: the utterance label is 0 (fake) exactly when a
region remains. A file that cannot be scored is one line in ``failed`` and has no line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from interbias.cm.lcnn_frames import FrameDetector, RegionRule, regions_from_posteriors
from interbias.corpora.splice import segment_line
from interbias.utils.errors import AudioError, OperatorError

SAMPLE_RATE_HZ = 16000


def locate(detector: FrameDetector, wave: np.ndarray, rule: RegionRule) -> list[tuple[int, int]]:
    """Fake regions (samples) of one 16 kHz waveform."""
    return regions_from_posteriors(detector.posteriors(wave), len(wave), rule)


def region_lines(detector: FrameDetector, items: list[tuple[str, np.ndarray]], rule: RegionRule) -> list[str]:
    """Segment-file lines of (id, waveform) pairs, in the order given."""
    return [segment_line(uid, locate(detector, w, rule), len(w), SAMPLE_RATE_HZ) for uid, w in items]


def score_region_files(detector: FrameDetector, job: Any, rule: RegionRule, out: Path) -> tuple[int, list[str]]:
    """Write ``out`` for a :class:`~interbias.cm.score_files.ScoreJob`; returns (lines, failures)."""
    from interbias.audio.frontend import FrontEnd
    from interbias.cm.score_files import chain_for, load_one
    from interbias.utils import atomic

    fe = FrontEnd(sample_rate_hz=SAMPLE_RATE_HZ, min_duration_s=0.0, max_duration_s=None)
    chain = chain_for(job.op, job.params, job.chain)
    lines, failed = [], []
    for path, uid, _, _ in job.items:
        try:
            x = load_one(Path(path), fe, chain, job.seed)
        except (AudioError, OperatorError) as exc:
            msg = str(exc)
            failed.append(msg if msg.startswith(str(path)) else f"{path}: {msg}")
            continue
        lines.append(segment_line(uid, locate(detector, x, rule), len(x), SAMPLE_RATE_HZ))
    atomic.write_text(out, "".join(line + "\n" for line in lines))
    return len(lines), failed


def score_regions_cli(
    model: str, job: Any, checkpoint: Path | None, out: Path | None, threshold: float, min_region_s: float
) -> None:
    """``cm score LCNN-LFCC-frames --regions FILE``: write the segment file, one summary line."""
    import typer

    from interbias.cm.lcnn_frames import LABEL, load_frame_detector
    from interbias.utils.errors import ConfigError

    if model != LABEL:
        raise ConfigError(f"cm score --regions: only the frame detector {LABEL} locates regions, not {model}")
    if out is None:
        raise ConfigError(f"cm score {LABEL}: give --regions FILE (the segment file to write)")
    rule = RegionRule(threshold, min_region_s).check()
    n, failed = score_region_files(load_frame_detector(checkpoint), job, rule, out)
    typer.echo(
        f"{LABEL}: {n} file(s) located into {out} (frame P(fake) > {rule.threshold:g}, regions of at least "
        f"{rule.min_frames} frame(s) of 10 ms)",
        err=True,
    )
    for line in failed:
        typer.echo(line, err=True)
    if failed:
        raise typer.Exit(1)
