"""``interbias scores cm-eval``: countermeasure metrics of ADD 2023."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from interbias.cli import guarded
from interbias.cli.numeric import check_numbers
from interbias.cli.options import JsonOpt, json_flag
from interbias.cli.scores import scores_app
from interbias.cli.tables import echo_wrapped, print_frame

cm_app = typer.Typer(
    help="Countermeasure metrics of ADD 2023: EER and weighted EER over rounds, DSR, "
    "manipulated-region location, open-set algorithm recognition; ASVspoof 5's Track 1 set (min DCF, "
    "actDCF, Cllr, EER; per attack or codec), a-DCF, min t-DCF and t-EER.",
    no_args_is_help=True,
    epilog="Example: interbias scores cm-eval eer round1.csv round2.csv",
)
scores_app.add_typer(cm_app, name="cm-eval")


@cm_app.command("eer", epilog="Example: interbias scores cm-eval eer round1.csv round2.csv --weights 0.4,0.6")
@guarded
def eer(
    scores: Annotated[
        list[Path],
        typer.Argument(help="One score file per round: CSV score,label or 'ID SCORE LABEL'; bonafide|spoof labels."),
    ],
    weights: Annotated[
        str | None, typer.Option(help="Round weights, comma-separated (default 0.4,0.6 for two rounds).")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """EER of each round (higher score = bona fide) and, for several rounds, the weighted EER."""
    from interbias.analysis.security.cm_eval import round_eers
    from interbias.analysis.security.cm_track1 import json_ready

    out = round_eers(scores, weights)
    rounds = out["rounds"]
    if as_json:
        typer.echo(json.dumps(json_ready(out)))
        return
    for r in rounds:
        eer = "undefined" if r["eer_undefined"] else f"{r['eer']:.6f} at threshold {r['threshold']:.6f}"
        typer.echo(f"{r['file']}: eer {eer} ({r['n_bonafide']} bona fide, {r['n_spoof']} spoof)")
    if "weer" in out:
        weer = "undefined" if out["weer"] != out["weer"] else f"{out['weer']:.6f}"
        typer.echo(f"weer {weer} (weights {', '.join(f'{x:g}' for x in out['weights'])})")
    notes = [r for r in rounds if r["eer_undefined"]]
    for r in notes:
        echo_wrapped(f"note: EER undefined in {r['file']}: {r['eer_undefined']}")
    if notes and "weer" in out:
        echo_wrapped(f"note: weer undefined: {len(notes)} of {len(rounds)} rounds have no EER")


@cm_app.command("track1", epilog="Example: interbias scores cm-eval track1 cm_scores.csv --by attack --by codec")
@guarded
def track1(
    scores: Annotated[
        Path,
        typer.Argument(help="CM score file: CSV with score,label (and any other columns) or 'ID SCORE LABEL'."),
    ],
    by: Annotated[
        list[str] | None, typer.Option(help="Break the metrics down by this column (repeatable): attack, codec, ...")
    ] = None,
    score_column: Annotated[
        str | None, typer.Option(help="Score with this column instead of score (e.g. log_odds of `cm score`).")
    ] = None,
    p_spoof: Annotated[float, typer.Option(help="Prior of a spoof.")] = 0.05,
    c_miss: Annotated[float, typer.Option(help="Cost of rejecting a bona fide sample.")] = 1.0,
    c_fa: Annotated[float, typer.Option(help="Cost of accepting a spoof.")] = 10.0,
    as_json: JsonOpt = False,
) -> None:
    """ASVspoof 5 Track 1 metrics of a countermeasure (higher score = bona fide): min DCF
    (primary), actual DCF, C_llr and EER as its evaluation package computes them; actDCF and
    C_llr read the scores as natural-log likelihood ratios (docs/countermeasures.md)."""
    check_numbers("scores cm-eval track1", p_spoof=p_spoof, c_miss=c_miss, c_fa=c_fa)
    from interbias.analysis.security.cm_track1 import json_ready, track1_of_file, undefined_notes
    from interbias.metrics.spoof import Track1Cost

    out = track1_of_file(scores, list(by or []), Track1Cost(p_spoof, c_miss, c_fa), score_column)
    if as_json:
        typer.echo(json.dumps(json_ready(out)))
        return
    p = out["pooled"]
    eer = "undefined" if p["eer_undefined"] else f"{p['eer']:.6f}"
    typer.echo(
        f"{scores}: min DCF {p['min_dcf']:.6f}  actDCF {p['act_dcf']:.6f}  Cllr {p['cllr']:.6f} bits  "
        f"EER {eer} ({p['n_bonafide']} bona fide, {p['n_spoof']} spoof)"
    )
    import pandas as pd

    for col, rows in out["tables"].items():
        print_frame(pd.DataFrame(rows).drop(columns=["group", "note"]), f"by {col}")
    for line in undefined_notes(out):
        echo_wrapped(f"note: {line}")


@cm_app.command("dsr", epilog="Example: interbias scores cm-eval dsr aasist.csv rawgat.csv --json")
@guarded
def dsr(
    scores: Annotated[
        list[Path], typer.Argument(help="One score file per detection model, all on one evaluation set.")
    ],
    attack: Annotated[
        str | None,
        typer.Option(help="COLUMN=VALUE selecting the attack samples (default: every spoof sample)."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Deception success rate DSR = W / (A × N): attack samples each detector accepts at its own
    EER threshold, over A samples and N detectors."""
    from interbias.analysis.security.cm_eval import dsr_of_files

    res = dsr_of_files(scores, attack)
    if as_json:
        typer.echo(json.dumps(res))
    else:
        typer.echo(
            f"dsr {res['dsr']:.6f} (W = {sum(res['wrong'])} of A = {res['n_samples']} attack samples × N = {res['n_models']} models)"
        )


@cm_app.command("wdsr", epilog="Example: interbias scores cm-eval wdsr --r1 r1_dsr.json --r2 0.31 --r2-baseline 0.52")
@guarded
def wdsr(
    r1: Annotated[str, typer.Option(help="Round 1 DSR: a number, or the JSON of `cm-eval dsr --json`.")],
    r2: Annotated[str, typer.Option(help="Round 2 DSR against the detectors.")],
    r2_baseline: Annotated[str, typer.Option(help="Round 2 DSR against the baseline detectors.")],
    gamma: Annotated[float, typer.Option(help="Weight of round 1.")] = 0.4,
    delta: Annotated[float, typer.Option(help="Weight of round 2.")] = 0.6,
    alpha: Annotated[float, typer.Option(help="Weight of the round 2 baseline DSR.")] = 0.4,
    beta: Annotated[float, typer.Option(help="Weight of the round 2 DSR.")] = 0.6,
    as_json: JsonOpt = False,
) -> None:
    """ADD 2023's weighted deception success rate of a generation team: WDSR = γ·DSR_R1 +
    δ·(α·DSR_R2,baseline + β·DSR_R2) (ADD 2023, Eqs. 2–3; defaults its weights)."""
    check_numbers("scores cm-eval wdsr", gamma=gamma, delta=delta, alpha=alpha, beta=beta)
    from interbias.analysis.security.cm_eval import read_dsr
    from interbias.analysis.security.spoofing import weighted_dsr

    d1, d2, d2b = read_dsr(r1, "--r1"), read_dsr(r2, "--r2"), read_dsr(r2_baseline, "--r2-baseline")
    value = weighted_dsr(d1, d2, d2b, gamma=gamma, delta=delta, alpha=alpha, beta=beta)
    if as_json:
        weights = {"gamma": gamma, "delta": delta, "alpha": alpha, "beta": beta}
        typer.echo(json.dumps({"wdsr": value, "dsr_r1": d1, "dsr_r2": d2, "dsr_r2_baseline": d2b, "weights": weights}))
    else:
        typer.echo(f"wdsr {value:.6f} (DSR R1 {d1:.6f}, R2 {d2:.6f}, R2 baseline {d2b:.6f})")


@cm_app.command(
    "location", epilog="Example: interbias scores cm-eval location reference.txt prediction.txt --resolution 10ms"
)
@guarded
def location(
    reference: Annotated[Path, typer.Argument(help="Reference segment labels: 'UTT S-E-T/S-E-F/... LABEL' per line.")],
    prediction: Annotated[Path, typer.Argument(help="Predicted segment labels, same layout.")],
    resolution: Annotated[
        str,
        typer.Option(
            help="seconds (continuous time) or a frame length, e.g. 10ms or 0.01: a frame counts as fake "
            "when its centre lies in a fake segment."
        ),
    ] = "seconds",
    as_json: JsonOpt = False,
) -> None:
    """Manipulated-region location: sentence accuracy over all utterances, segment
    precision/recall/F1 over reference-fake utterances (at the stated resolution) and score =
    0.3·accuracy + 0.7·F1."""
    from interbias.analysis.security.cm import location_scores, parse_resolution, read_segment_labels

    res = location_scores(
        read_segment_labels(reference, reference=True),
        read_segment_labels(prediction, reference=False),
        resolution_s=parse_resolution(resolution),
    )
    d = res.as_dict()
    if as_json:
        typer.echo(json.dumps(d))
        return
    for k, v in d.items():
        if v != "":
            typer.echo(f"{k:18s} {v:.6f}" if isinstance(v, float) else f"{k:18s} {v}")


@cm_app.command(
    "recognition", epilog="Example: interbias scores cm-eval recognition reference.txt prediction.txt --unknown unknown"
)
@guarded
def recognition(
    reference: Annotated[Path, typer.Argument(help="Reference labels: 'UTT LABEL' per line.")],
    prediction: Annotated[Path, typer.Argument(help="Predicted labels: 'UTT LABEL' per line.")],
    known: Annotated[str | None, typer.Option(help="Known classes, comma-separated.")] = None,
    unknown: Annotated[
        str | None, typer.Option(help="The reference's unknown-class label(s), comma-separated; known = the rest.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Open-set algorithm recognition: macro precision and recall over the known classes (the
    unknown class counted in FP/FN) and their harmonic mean F1."""
    from interbias.analysis.security.cm_eval import recognition_of_files
    from interbias.metrics.cm import recognition_record

    res, classes = recognition_of_files(reference, prediction, known, unknown)
    if as_json:
        typer.echo(json.dumps(recognition_record(res, classes)))
        return
    print_frame(res.per_class, "known classes")
    typer.echo(f"macro precision {res.precision:.6f}  macro recall {res.recall:.6f}  f1 {res.f1:.6f}")
    typer.echo(f"{res.n_samples} samples, {res.n_unknown} of the unknown class")
    for note in res.notes:
        typer.echo(f"note: {note}")


@cm_app.command(
    "adcf",
    epilog="Example: interbias scores cm-eval adcf sasv_scores.txt --json",
)
@guarded
def adcf(
    scores: Annotated[
        list[Path],
        typer.Argument(
            help="Verification score files: 'ENROL TEST SCORE KEY' (ASVspoof 5) or CSV score,key; "
            "KEY target|nontarget|spoof."
        ),
    ],
    p_spf: Annotated[float, typer.Option(help="Prior of a spoof trial.")] = 0.05,
    p_non: Annotated[float, typer.Option(help="Prior of a non-target (zero-effort impostor) trial.")] = 0.05,
    p_tar: Annotated[float, typer.Option(help="Prior of a target trial.")] = 0.9,
    c_miss: Annotated[float, typer.Option(help="Cost of rejecting a target.")] = 1.0,
    c_fa_asv: Annotated[float, typer.Option(help="Cost of accepting a non-target.")] = 10.0,
    c_fa_cm: Annotated[float, typer.Option(help="Cost of accepting a spoof.")] = 20.0,
    as_json: JsonOpt = False,
) -> None:
    """a-DCF of ASVspoof 5 for a verification score alone: the minimum over thresholds of the
    normalised cost of misses, accepted non-targets and accepted spoofs (defaults: ASVspoof 5's
    cost model)."""
    check_numbers(
        "scores cm-eval adcf", p_spf=p_spf, p_non=p_non, p_tar=p_tar, c_miss=c_miss, c_fa_asv=c_fa_asv, c_fa_cm=c_fa_cm
    )
    from interbias.analysis.security.sasv import a_dcf_of_file
    from interbias.metrics.sasv import ADCFCost

    cost = ADCFCost(p_spf, p_non, p_tar, c_miss, c_fa_asv, c_fa_cm)
    rows = [a_dcf_of_file(path, cost) for path in scores]
    if as_json:
        typer.echo(json.dumps({"cost": vars(cost), "files": rows}))
        return
    for r in rows:
        typer.echo(
            f"{r['file']}: a-DCF {r['a_dcf']:.6f} at threshold {r['threshold']:.6f} "
            f"({r['n_target']} target, {r['n_nontarget']} nontarget, {r['n_spoof']} spoof)"
        )


@cm_app.command(
    "tdcf",
    epilog="Example: interbias scores cm-eval tdcf asv_scores.txt cm_scores.txt --json",
)
@guarded
def tdcf(
    asv: Annotated[Path, typer.Argument(help="ASV score file: 'ENROL TEST SCORE KEY', KEY target|nontarget|spoof.")],
    cm: Annotated[Path, typer.Argument(help="CM score file: CSV score,label or 'ID SCORE LABEL'; bonafide|spoof.")],
    asv_threshold: Annotated[
        str,
        typer.Option(
            help="The ASV's EER threshold: interpolated (the interpolated crossing, default) or package "
            "(the ASVspoof 5 package's sorted score, to reproduce its numbers)."
        ),
    ] = "interpolated",
    as_json: JsonOpt = False,
) -> None:
    """Minimum tandem detection cost (t-DCF) of a countermeasure in front of an ASV system, with
    the ASVspoof 5 package's cost model; the ASV's error rates are taken at its EER threshold."""
    from interbias.analysis.security.sasv import min_t_dcf_of_files
    from interbias.metrics.sasv import TDCFCost

    cost = TDCFCost()
    out = min_t_dcf_of_files(asv, cm, cost, asv_threshold)
    if as_json:
        typer.echo(json.dumps({"cost": vars(cost), **out}))
        return
    typer.echo(
        f"min t-DCF {out['min_t_dcf']:.6f} at CM threshold {out['cm_threshold']:.6f} "
        f"(ASV at {out['asv_threshold']:.6f}, {out['asv_threshold_rule']}: "
        f"P_miss {out['pmiss_asv']:.4f}, P_fa {out['pfa_asv']:.4f}, P_fa,spoof {out['pfa_spoof_asv']:.4f})"
    )


@cm_app.command("teer", epilog="Example: interbias scores cm-eval teer asv_scores.txt cm_scores.txt --json")
@guarded
def teer(
    asv: Annotated[Path, typer.Argument(help="ASV score file: 'ENROL TEST SCORE KEY', KEY target|nontarget|spoof.")],
    cm: Annotated[Path, typer.Argument(help="CM score file: CSV score,label or 'ID SCORE LABEL'; bonafide|spoof.")],
    as_json: JsonOpt = False,
) -> None:
    """Concurrent tandem equal error rate (t-EER, ASVspoof 5 track 2) of a countermeasure in front of
    an ASV system: the point where the tandem's miss rate, non-target and spoof false-accept rates
    are equal, over every pair of thresholds; no cost parameters (docs/calibration.md)."""
    from interbias.analysis.security.sasv import t_eer_of_files

    out = t_eer_of_files(asv, cm)
    if as_json:
        typer.echo(json.dumps(out))
        return
    typer.echo(
        f"t-EER {out['t_eer']:.6f} at ASV threshold {out['asv_threshold']:.6f}, CM threshold {out['cm_threshold']:.6f} "
        f"(tandem P_miss {out['pmiss']:.4f}, P_fa non-target {out['pfa_nontarget']:.4f}, P_fa spoof {out['pfa_spoof']:.4f})"
    )


@cm_app.command(
    "sasv-fusion", epilog="Example: interbias scores cm-eval sasv-fusion trials.csv --by condition --by gender"
)
@guarded
def sasv_fusion(
    trials: Annotated[
        Path, typer.Argument(help="CSV: asv_llr, cm_llr (calibrated natural-log LLRs), key target|nontarget|spoof.")
    ],
    by: Annotated[
        list[str] | None, typer.Option(help="Break down by this column (repeatable): condition, gender…")
    ] = None,
    as_json: Annotated[bool, json_flag("Print JSON.")] = False,
) -> None:
    """ASV + CM fusion as ASVspoof 5's SASV baselines: the sum of calibrated LLRs and the product
    of posteriors, each scored by a-DCF (ASVspoof 5 costs), with the concurrent t-EER of the ASV
    and CM scores in tandem, per slice of the --by columns (docs/calibration.md)."""
    from interbias.metrics.sasv_fusion import read_fusion_trials, sasv_table

    cols = list(by or [])
    frame = read_fusion_trials(trials, cols)
    if not cols:
        frame = frame.assign(all="all")
        cols = ["all"]
    table = sasv_table(frame, cols)
    if as_json:
        typer.echo(table.to_json(orient="records"))
        return
    print_frame(table, f"ASV + CM fusion of {trials}")
