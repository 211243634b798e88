"""What a report says about the data a run measured, from its run.json and resolved definition.

"About this run" states the experiment's description (a manifest run carries the experiment's
own, never a variant's that names another corpus), the corpus actually used — a manifest by
file name, path and the file's sha256, else the corpus by name — its speakers and utterances
per stratum, how the speakers were split into evaluation and dev, what the trial draw could
not give, and the levels left out for recordings the user did not give. Provenance names the
corpus by its manifest's sha256 and the checkpoint sha256 of every countermeasure that scored
the run's trials.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from interbias.analysis.reporting.document import Report
from interbias.experiments.sections import LeftOut
from interbias.trials.sampler import shortfall


def about_corpus(run_json: dict[str, Any], resolved: dict[str, Any], rep: Report) -> None:
    """The description and :func:`corpus_lines`, one paragraph each."""
    if resolved.get("description"):
        rep.para(str(resolved["description"]).strip())
    for line in corpus_lines(run_json, resolved):
        rep.para(line)


def corpus_lines(run_json: dict[str, Any], resolved: dict[str, Any]) -> list[str]:
    """The corpus, its strata, the split, the trials' shortfall and the left-out levels (module
    docstring); lines for what run.json does not record are left out."""
    corpus = run_json.get("corpus") or {}
    lines = []
    if corpus.get("manifest"):
        path = str(corpus["manifest"])
        head = f"Corpus: manifest {Path(path).name} ({path}, sha256 {corpus.get('manifest_file_sha256', 'unknown')})"
    elif corpus.get("name"):
        head = f"Corpus: {corpus['name']}" + (f" ({corpus['root']})" if corpus.get("root") else "")
    else:
        head = ""
    if head:
        lines.append(f"{head}, {corpus.get('n_utterances', 'unknown')} utterances.")
    if strata := corpus.get("strata"):
        lines.append(
            "Per stratum, after the population filter: "
            + "; ".join(f"{k} {v['speakers']} speakers, {v['utterances']} utterances" for k, v in strata.items())
            + "."
        )
    trials = run_json.get("trials") or {}
    groups = (trials.get("split") or {}).get("groups") or {}
    if groups:
        lines.append(
            "Speakers split (speaker-disjoint): "
            + "; ".join(f"{k} {v['eval']} evaluation + {v['dev']} dev" for k, v in groups.items())
            + "."
        )
    if note := shortfall(trials):
        lines.append(note[0].upper() + note[1:] + ".")
    lines += [f"{LeftOut.from_record(r).line()}." for r in resolved.get("left_out") or ()]
    return lines


def provenance_lines(run_json: dict[str, Any]) -> list[str]:
    """Provenance of the data and the CMs: the corpus by the sha256 of its manifest (the file's,
    for a manifest file, and of its records), then one line per countermeasure that scored the
    run's trials with its checkpoint and sha256."""
    corpus = run_json.get("corpus") or {}
    lines = []
    if corpus.get("manifest"):
        lines.append(
            f"Corpus: manifest {Path(str(corpus['manifest'])).name}, file sha256 "
            f"{corpus.get('manifest_file_sha256', 'unknown')}; records sha256 {corpus.get('manifest_sha256', 'unknown')}."
        )
    elif corpus.get("manifest_sha256"):
        lines.append(f"Corpus: {corpus.get('name', 'unknown')}, manifest records sha256 {corpus['manifest_sha256']}.")
    models = (run_json.get("countermeasures") or {}).get("models") or {}
    return lines + [
        f"Countermeasure {label}: checkpoint {m.get('checkpoint', 'unknown')}, sha256 {m.get('checkpoint_sha256')}."
        for label, m in models.items()
    ]
