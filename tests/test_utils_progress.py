"""Plain progress lines without a terminal: paced by a fake clock, silenced by --quiet."""

from __future__ import annotations

import io
import re
from types import SimpleNamespace

from interbias.utils.progress import FIRST_ESTIMATE_AFTER, INTERVAL_S, Reporter, duration, embeddings_ahead, wrapped


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _run_task(reporter: Reporter, clock: FakeClock, total: int, step_s: float) -> None:
    with reporter.task("embedding", total) as advance:
        for _ in range(total):
            clock.now += step_s
            advance(1)


def test_plain_lines_at_the_interval_with_rate_and_eta() -> None:
    clock, out = FakeClock(), io.StringIO()
    reporter = Reporter(stream=out, clock=clock, interval_s=20.0)
    _run_task(reporter, clock, total=100, step_s=1.0)  # one item a second: 100 s in all
    lines = out.getvalue().splitlines()
    assert lines[0] == "embedding: 100 to do"
    assert lines[-1] == "embedding: 100/100 in 100.0 s"
    middle = lines[1:-1]
    # the first estimate a few items after the first one, then one line per 20 s of (fake) time
    assert middle[0] == f"embedding: {FIRST_ESTIMATE_AFTER + 1}/100 (9.0 %), 1/s, about 1 min 31 s left"
    done = [int(re.match(r"embedding: (\d+)/100", ln).group(1)) for ln in middle]
    assert done == [9, 29, 49, 69, 89]
    assert middle[1] == "embedding: 29/100 (29.0 %), 1/s, about 1 min 11 s left"


def test_no_line_between_intervals_when_items_are_fast() -> None:
    clock, out = FakeClock(), io.StringIO()
    reporter = Reporter(stream=out, clock=clock, interval_s=15.0)
    _run_task(reporter, clock, total=1000, step_s=0.01)  # 10 s in all: shorter than one interval
    lines = out.getvalue().splitlines()
    assert len(lines) == 3  # start, first estimate, end
    # the first estimate waits a quarter of the interval (3.75 s) after the first item
    assert lines[1].startswith("embedding: 377/1000 (37.7 %), 100/s, about 6 s left")


def test_default_interval_is_within_15_to_30_seconds() -> None:
    assert 15 <= INTERVAL_S <= 30 and Reporter().interval_s == INTERVAL_S


def test_quiet_prints_nothing() -> None:
    clock, out = FakeClock(), io.StringIO()
    reporter = Reporter(quiet=True, stream=out, clock=clock, interval_s=1.0)
    _run_task(reporter, clock, total=50, step_s=5.0)
    reporter.info("hello")
    assert out.getvalue() == ""


def test_durations_read_as_a_person_would() -> None:
    assert [duration(s) for s in (0, 42.4, 185, 7620)] == ["0 s", "42 s", "3 min 05 s", "2 h 07 min"]


def test_embeddings_ahead_counts_per_encoder() -> None:
    encs = [SimpleNamespace(label="CAM++", fingerprint="a"), SimpleNamespace(label="GE2E", fingerprint="b")]
    todo = {"u1": {"c1": (None, ["a", "b"]), "c2": (None, ["a"])}, "u2": {"c1": (None, ["a"])}}
    assert embeddings_ahead(encs, todo, 7) == "embeddings: 7 from the cache, 4 to compute (CAM++ 3, GE2E 1)"
    assert embeddings_ahead(encs, {}, 9) == "embeddings: 9 from the cache, 0 to compute"


class TickingClock:
    """One second per reading."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def test_corpus_build_reports_rendering_progress(tmp_path) -> None:
    from interbias.corpora.synthetic import SyntheticSpec, build

    spec = SyntheticSpec.from_options(
        {"accents": ["us"], "age_bands": ["adult"], "voices_per_cell": 2, "styles": ["neutral"], "n_sentences": 2}
    )
    out = io.StringIO()
    manifest, _ = build(spec, tmp_path, workers=1, reporter=Reporter(stream=out, clock=TickingClock(), interval_s=1.0))
    n = len(manifest)
    lines = out.getvalue().splitlines()
    assert n == 8  # 2 genders × 2 voices × 2 sentences, rendered one voice (2 utterances) at a time
    assert lines[0] == f"synthetic corpus: rendering: {n} to do"
    # a line per finished voice after the first (one finished batch gives no rate yet)
    assert [ln.split()[3] for ln in lines[1:-1]] == ["4/8", "6/8"]
    assert lines[-1] == f"synthetic corpus: rendering: {n}/{n} in 5.0 s"
    again = io.StringIO()
    build(spec, tmp_path, reporter=Reporter(stream=again))  # reused: nothing to render, nothing printed
    assert again.getvalue() == ""


def _first_estimate(start_s: float, total: int, workers: int) -> str:
    """The first estimate line when workers start in ``start_s`` and then each returns a unit of
    8 items every 8 s (``workers`` items a second), all workers' units 1 ms apart."""
    clock, out = FakeClock(), io.StringIO()
    reporter = Reporter(stream=out, clock=clock, interval_s=20.0)
    with reporter.task("embedding", total) as advance:
        clock.now += start_s
        for _ in range(total // (8 * workers)):
            clock.now += 8.0
            for _ in range(workers):
                advance(8)
                clock.now += 0.001
    return out.getvalue().splitlines()[1]


def test_start_up_before_the_first_item_does_not_inflate_the_estimate() -> None:
    # one worker, 60 s to start, 1 item/s: from the first unit on, 8 items in 8 s (not 16 in 76 s)
    assert _first_estimate(60.0, 400, 1) == "embedding: 16/400 (4.0 %), 1/s, about 6 min 24 s left"


def test_units_finishing_together_in_parallel_workers_do_not_make_the_estimate_overshoot() -> None:
    # two workers, 2 items/s; a rate over the 1 ms between their first units would say 8000/s
    assert _first_estimate(30.0, 800, 2) == "embedding: 24/800 (3.0 %), 2/s, about 6 min 28 s left"


def test_wrapped_lines_fit_the_width_and_keep_words_and_paths_whole(monkeypatch) -> None:
    from interbias.utils.progress import terminal_width, wrapped

    text = "run T22: 160 trials, 8 cells × 1 encoder: 0 of 8 finished earlier (reused), 8 to score " + "/x" * 50
    lines = wrapped(text, 40).splitlines()
    assert " ".join(" ".join(lines).split()) == text and all(ln.startswith("  ") for ln in lines[1:])
    assert [ln for ln in lines if len(ln) > 40] == ["  " + "/x" * 50]  # a path longer than the width stays whole
    monkeypatch.setenv("COLUMNS", "60")
    assert terminal_width(io.StringIO()) == 60
    monkeypatch.setenv("COLUMNS", "10")
    assert terminal_width(io.StringIO()) == 40
    monkeypatch.delenv("COLUMNS")
    assert terminal_width(io.StringIO()) == 80
    out = io.StringIO()
    Reporter(stream=out).info(text, wrap=True)
    assert out.getvalue() == wrapped(text, 80) + "\n"


def test_wrapping_never_parts_a_model_from_its_value() -> None:
    from interbias.cli.run import glue_values

    line = "macro EER per model (mean over 14 cells): CAM++ 0.109, GE2E 0.226, mfcc-stats 0.356"
    out = wrapped(glue_values(line), 80)
    assert out == "macro EER per model (mean over 14 cells): CAM++ 0.109, GE2E 0.226,\n  mfcc-stats 0.356"
    assert "\u00a0" not in out and " ".join(out.split()) == line
