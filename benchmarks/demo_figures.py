"""The demo figures the README and the guides quote, generated from a `make demo` run.

    python benchmarks/demo_figures.py results/<run_id>          # or: make demo-figures RUN=results/<run_id>

runs `interbias analyze` on the run (the defaults, as `make demo`: the findings are those of
the code as it is now), reads findings.csv, macro.csv, results.csv, trials.json and run.json
(the design: voices, speakers and trials per gender), writes the figures to
``docs/demo_figures.json`` (the committed reference)
and rewrites every marked region of the documents below from it. A region is

    <!-- demo:NAME -->
    ...generated text...
    <!-- /demo:NAME -->

``tests/test_demo_prose.py`` renders the regions from the committed JSON and fails when a
document's region differs, so prose and reference cannot drift apart; rerun this script after
a change to the demo's statistics.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "docs" / "demo_figures.json"
DOCUMENTS = ("README.md", "docs/guide/getting-started.md", "docs/guide/analysis.md")
NOISE_COLUMNS = {
    "clean": "clean",
    "gaussian_25": "gauss 25 dB",
    "gaussian_15": "gauss 15 dB",
    "gaussian_5": "gauss 5 dB",
    "crosstalk_25": "xtalk 25 dB",
    "crosstalk_15": "xtalk 15 dB",
    "crosstalk_5": "xtalk 5 dB",
}


def f3(v: float, sign: bool = False) -> str:
    text = f"{v:+.3f}" if sign else f"{v:.3f}"
    return text.replace("-0.000", "0.000").replace("+-", "-")


def figures(run: Path) -> dict:
    """The quoted numbers of one demo run: analyse it, then read findings.csv, macro.csv, results.csv."""
    code = "import sys; from interbias.cli import main; sys.argv = ['interbias', 'analyze', sys.argv[1], '-q']; main()"
    subprocess.run([sys.executable, "-c", code, str(run)], check=True, stdout=subprocess.DEVNULL)
    f = pd.read_csv(run / "findings.csv")
    macro = pd.read_csv(run / "macro.csv")
    macro = macro[macro["scope"] == "macro"]
    res = f[f["resolved"].astype(str) == "True"]
    harms = res[res["kind"].isin(["main", "simple"])] if len(res) else res
    top = harms.loc[harms["estimate"].astype(float).idxmax()] if len(harms) else None
    gap = f[(f["kind"] == "gap") & (f["model"] == "CAM++") & (f["condition"] == "noise=clean")]
    results = pd.read_csv(run / "results.csv")
    cells = {f"{r.model}|{r.level_a}|{r.level_b}": round(float(r.eer), 6) for r in results.itertuples(index=False)}
    return {
        "run": json.loads((run / "run.json").read_text()).get("run_id", run.name),
        "design": design(run),
        "cam_gap_answer": cam_gap_answer(run, f),
        "macro_eer": {r.model: round(float(r.value), 6) for r in macro.itertuples(index=False)},
        "n_effects": len(f),
        "n_resolved": len(res),
        "kinds": {k: int((f["kind"] == k).sum()) for k in dict.fromkeys(f["kind"])},
        "resolved_by_model": {m: int(len(res[res["model"] == m])) for m in dict.fromkeys(f["model"])},
        "n_boot": int(f["n_boot"].iloc[0]) if "n_boot" in f else None,
        "top": None
        if top is None
        else {
            k: (
                ("" if pd.isna(top[k]) else str(top[k]))
                if k in ("model", "condition", "group", "effect", "label")
                else round(float(top[k]), 6)
            )
            for k in (
                "model",
                "effect",
                "label",
                "condition",
                "group",
                "value_from",
                "value_to",
                "estimate",
                "lo",
                "hi",
                "p_adjusted",
            )
        },
        "cam_clean_gap_mde": round(float(gap["mde"].iloc[0]), 6) if len(gap) else None,
        "cam_clean_gap_need": int(gap["speakers_per_stratum_needed"].iloc[0]) if len(gap) else None,
        "eer": cells,
    }


def design(run: Path) -> dict[str, int]:
    """The run's voices (evaluation + dev), and per gender its evaluation and dev speakers and
    its target and non-target trials (the smallest stratum's: the sampler matches them)."""
    info = json.loads((run / "trials.json").read_text())
    strata = info["strata"].values()
    dev = (info.get("dev_strata") or {}).values()
    return {
        "voices": sum(s["n_speakers"] for s in strata) + sum(s["n_speakers"] for s in dev),
        "eval_speakers": min(s["n_speakers"] for s in strata),
        "dev_speakers": min((s["n_speakers"] for s in dev), default=0),
        "targets": int(info["matched"]["n_target_per_stratum"]),
        "nontargets": int(info["matched"]["n_nontarget_per_stratum"]),
    }


def cam_gap_answer(run: Path, f: pd.DataFrame) -> str:
    """``analyze``'s answer line for CAM++'s gender gap (:func:`interbias.analysis.reporting.answer.key_brief`):
    how many are resolved and the largest, by its one name, in words."""
    from interbias.analysis.reporting.answer import key_brief

    resolved = json.loads((run / "experiment.resolved.json").read_text())
    return next(line for line in key_brief(f, resolved, "eer") if line.startswith("gender gap, CAM++: "))


def _design(d: dict, word: str) -> str:
    g = d["design"]
    return (
        f"{g['eval_speakers']} evaluation {word} per gender, {g['targets']} target and {g['nontargets']} non-target "
        f"trials per gender, the same trials in every cell; {g['dev_speakers']} more {word} per gender in the dev "
        f"split the calibration is fitted on; {g['voices']} voices in all"
    )


def _top_sentence(d: dict) -> str:
    t = d["top"]
    if t is None:
        return "no main effect is resolved"
    return (
        f"the largest resolved harm: {t['label']} raises {t['model']}'s EER from {f3(t['value_from'])} to "
        f"{f3(t['value_to'])} ({f3(t['estimate'], True)}, 95 % CI [{f3(t['lo'], True)}, {f3(t['hi'], True)}])"
    )


def _counts(d: dict) -> str:
    by = ", ".join(f"{m} {n}" for m, n in d["resolved_by_model"].items())
    return f"Of the {d['n_effects']} effects {d['n_resolved']} are resolved after Holm ({by})"


def _macro(d: dict) -> str:
    return ", ".join(f"{m} {f3(v)}" for m, v in d["macro_eer"].items())


def _table(d: dict) -> str:
    head = "| model | gender | " + " | ".join(NOISE_COLUMNS.values()) + " |"
    rows = [head, "|---|---|" + "---|" * len(NOISE_COLUMNS)]
    for model in d["macro_eer"]:
        for gender in ("female", "male"):
            vals = [f3(d["eer"][f"{model}|{gender}|{n}"]) for n in NOISE_COLUMNS]
            rows.append(f"| {model} | {gender} | " + " | ".join(vals) + " |")
    return "\n".join(rows)


def regions(d: dict) -> dict[str, str]:
    """Region name -> its text, rendered from the reference ``d``."""
    return {
        "readme-summary": (
            f"On this run ({_design(d, 'voices')}) the macro EER is {_macro(d)}. {_counts(d)}; {_top_sentence(d)}. `interbias plan` says "
            "how many speakers a one-point gap would need ([analysis and uncertainty](docs/guide/analysis.md))."
        ),
        "guide-design": (f"What E16 shows on the embedded corpus ({_design(d, 'speakers')}; EER as a fraction):"),
        "guide-table": _table(d),
        "guide-summary": (
            f"Macro EER: {_macro(d)}. {_counts(d)}; {_top_sentence(d)}. For CAM++ the run's minimum detectable "
            f"gender gap in clean speech is {f3(d['cam_clean_gap_mde'])}, and `interbias plan` says a gap of 0.010 "
            f"would need about {d['cam_clean_gap_need']} speakers per gender at power 0.8. `interbias analyze` ends with "
            f'the answer, for CAM++: "{d["cam_gap_answer"]}" See '
            '[Analysis and uncertainty](analysis.md) for what "resolved" means.'
        ),
        "analysis-summary": (
            f"On `make demo`'s run of E16, {_counts(d)[0].lower() + _counts(d)[1:]}; {_top_sentence(d)}. The run's "
            f"minimum detectable gender gap in clean speech for CAM++ is {f3(d['cam_clean_gap_mde'])}."
        ),
    }


PATTERN = re.compile(r"(<!-- demo:(?P<name>[a-z-]+) -->\n)(?P<body>.*?)(\n<!-- /demo:(?P=name) -->)", re.S)


def found_regions(text: str) -> dict[str, str]:
    return {m.group("name"): m.group("body") for m in PATTERN.finditer(text)}


def rewrite(text: str, texts: dict[str, str]) -> str:
    return PATTERN.sub(lambda m: m.group(1) + texts[m.group("name")] + m.group(4), text)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__)
        return 2
    d = figures(Path(argv[0]))
    REFERENCE.write_text(json.dumps(d, indent=1, sort_keys=True) + "\n")
    texts = regions(d)
    for name in DOCUMENTS:
        path = ROOT / name
        path.write_text(rewrite(path.read_text(), texts))
    print(f"wrote {REFERENCE} and the demo regions of {', '.join(DOCUMENTS)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
