"""``interbias validate`` for countermeasure and tracks experiments: what their run scores,
counted from the manifest and the grid. Nothing is loaded, trained or built.

- **countermeasure** (``countermeasures:``, e.g. E19;
  :func:`interbias.run.tasks.countermeasure.score_all`): in the reference cell each CM scores the
  CM manifest's dev and eval utterances. In every other cell it scores the eval utterances.
  CM scorings = (dev + eval + (cells − 1) × eval) × CMs. ``results.csv`` has one row per
  CM × cell. The run also needs every CM's checkpoint file; a missing one means it does not run
  here.
- **tracks** (``tracks:``, e.g. E23; :mod:`interbias.run.tasks.tracks`): each track trains its
  detector on the train and dev splits (once; a rerun reuses it). It then scores every eval
  utterance in every cell. Track scorings = eval × cells, per track. Track 3 reads its own
  manifest when the item names ``corpus`` options, or when the corpus is ``synthetic`` (the
  offline CM corpus).

The manifest is read when it is here: a ``manifest:`` file, or the offline corpus
(``synthetic-cm``, ``synthetic-had``) already built in the cache. Otherwise the counts are
unknown, and the estimate states the rule instead. No time is estimated: CM scoring and
training have no throughput figure.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from interbias.run.estimate import Estimate

NO_TIME = "time not estimated (no throughput figure for CM scoring or training)"


def split_counts(manifest: Any) -> dict[str, int]:
    """Utterances per split (``train``, ``dev``, ``eval``) of a CM manifest."""
    out = {"train": 0, "dev": 0, "eval": 0}
    for u in manifest:
        split = str(u.get("split"))
        out[split] = out.get(split, 0) + 1
    return out


def built_manifest(folder: Path, name: str) -> tuple[Any, str]:
    """The manifest of an offline corpus when it is built in ``folder``, else None; and where."""
    from interbias.corpora.manifest import Manifest

    path = folder / "manifest.jsonl"
    if path.is_file():
        return Manifest.read(path, name=name), f"the {name} corpus built in the cache"
    return None, f"the {name} corpus is built at run time"


def manifest_here(spec: Any, cache: Path, offline: dict[str, Any]) -> tuple[Any, str]:
    """The manifest of the corpus ``spec`` as far as it is here. A ``manifest:`` file is read
    as ``run`` reads it. ``offline`` maps a corpus name to a function giving the folder of its
    built corpus from its options."""
    from interbias.corpora import load_corpus

    if spec.manifest:
        path = Path(spec.manifest).expanduser()
        if not path.exists():
            return None, f"manifest {path} is not here"
        return load_corpus(spec, cache=cache), f"manifest {path.name}"
    if spec.name in offline:
        name, folder = offline[spec.name](dict(spec.options))
        return built_manifest(folder, name)
    return None, f"the {spec.name} manifest is prepared at run time"


def cm_estimate(exp: Any, encoders: Sequence[str], cache: Path, default_encoders: Sequence[str]) -> Estimate:
    """What a countermeasure run of ``exp`` scores (module docstring)."""
    from interbias.cm.models import missing_checkpoints
    from interbias.corpora.cm_corpus import check_cm_manifest, cm_corpus_folder, cm_spec_from_options
    from interbias.run.preflight import availability
    from interbias.run.tasks.countermeasure import choose_models, cm_spec, grid

    spec = cm_spec(exp)
    assert spec is not None  # the caller checked the kind
    models = choose_models(spec, list(encoders), tuple(default_encoders))
    cells = exp.cells()
    _, ref, _ = grid(exp)
    est = _base(exp, "countermeasure", len(cells))
    est.n_rows = len(cells) * len(models)
    why = availability(exp, models=False)  # the CMs this run loads are judged below
    missing = missing_checkpoints(models)
    est.runs_here = runs_here_text(why, missing)
    est.headline = (
        f"{est.label}: corpus {est.corpus}, countermeasure experiment: {len(cells)} cells × {len(models)} CM(s) "
        f"({', '.join(models)}) → {est.n_rows} results rows; {est.runs_here}"
    )
    synthetic_cm = lambda o: ("synthetic-cm", cm_corpus_folder(cache, cm_spec_from_options(o)))  # noqa: E731
    manifest, est.utterances_from = manifest_here(
        exp.corpus, cache, {"synthetic": synthetic_cm, "synthetic-cm": synthetic_cm}
    )
    others = sum(c.id != ref for c in cells)
    if manifest is None:
        est.work = [
            f"  cost: unknown ({est.utterances_from}); each CM scores the dev and eval utterances in the reference "
            f"cell and the eval utterances in each of the other {others} cells"
        ]
        return est
    check_cm_manifest(manifest)
    n = split_counts(manifest)
    per_cm = n["dev"] + n["eval"] + others * n["eval"]
    est.n_utterances, est.n_scorings = n["dev"] + n["eval"], per_cm * len(models)
    est.work = [
        f"  cost: {n['dev']} dev + {n['eval']} eval utterances in the reference cell, {n['eval']} eval in each of "
        f"the other {others} cells = {per_cm} scorings × {len(models)} CM(s) = {est.n_scorings} CM scorings, no "
        f"embeddings or trials ({est.utterances_from}); {NO_TIME}"
    ]
    return est


def tracks_estimate(exp: Any, cache: Path) -> Estimate:
    """What a tracks run of ``exp`` scores (module docstring)."""
    from interbias.corpora.cm_corpus import check_cm_manifest
    from interbias.corpora.had import had_corpus_folder, had_spec
    from interbias.run.preflight import availability
    from interbias.run.tasks.tracks import tracks_spec

    specs = tracks_spec(exp)
    cells = exp.cells()
    est = _base(exp, "tracks", len(cells))
    est.n_rows = None  # one row per track × cell × group: the groups are known only from the data
    est.runs_here = runs_here_text(availability(exp), [])
    numbers = ", ".join(str(s["track"]) for s in specs)
    est.headline = (
        f"{est.label}: corpus {est.corpus}, tracks experiment: track(s) {numbers} × {len(cells)} cells; {est.runs_here}"
    )
    had = lambda o: ("synthetic-had", had_corpus_folder(cache, had_spec(o)))  # noqa: E731
    manifest, est.utterances_from = manifest_here(exp.corpus, cache, {"synthetic": had, "synthetic-had": had})
    if manifest is not None:
        check_cm_manifest(manifest)
    total: int | None = 0
    for s in specs:
        own, where = track_manifest_here(exp, s, manifest, est.utterances_from, cache)
        line, n = track_line(s, own, where, len(cells))
        est.work.append(line)
        total = None if n is None or total is None else total + n
    est.n_scorings = total
    est.notes.append(NO_TIME)
    return est


def track_manifest_here(exp: Any, spec: dict[str, Any], manifest: Any, where: str, cache: Path) -> tuple[Any, str]:
    """The manifest a track item trains and scores on (Track 3's own, see
    :func:`interbias.cm.track3.track3_manifest`), as far as it is here; checked as the run checks it."""
    from interbias.cm.track3 import check_algorithm_labels
    from interbias.corpora.cm_corpus import cm_corpus_folder
    from interbias.corpora.had import had_spec

    if int(spec["track"]) != 3:
        return manifest, where
    corpus, extra = exp.corpus, dict(spec.get("corpus") or {})
    if corpus.name == "synthetic" and not corpus.manifest:
        folder = cm_corpus_folder(cache, had_spec({**corpus.options, **extra}).cm_spec())
        manifest, where = built_manifest(folder, "synthetic-cm")
    elif extra:
        merged = dataclasses.replace(corpus, options={**corpus.options, **extra})
        manifest, where = manifest_here(merged, cache, {})
    if manifest is not None:
        check_algorithm_labels(manifest)
    return manifest, where


def track_line(spec: dict[str, Any], manifest: Any, where: str, n_cells: int) -> tuple[str, int | None]:
    """One line for a track item and its scorings (None when the manifest is not here)."""
    from interbias.cm.lcnn_frames import LABEL

    number = int(spec["track"])
    model = str(spec.get("model", LABEL if number == 2 else "ResNet18-lfcc"))
    task = "locates the fake regions of" if number == 2 else "recognises the algorithm of"
    if manifest is None:
        return (
            f"  track {number} ({model}): unknown ({where}); trains on the train and dev splits, then {task} "
            f"every eval utterance in each of {n_cells} cells"
        ), None
    n = split_counts(manifest)
    scorings = n["eval"] * n_cells
    return (
        f"  track {number} ({model}): trains on {n['train']} train + {n['dev']} dev utterances (once; a rerun "
        f"reuses it), then {task} {n['eval']} eval utterances in each of {n_cells} cells = {scorings} scorings "
        f"({where})"
    ), scorings


def _base(exp: Any, kind: str, n_cells: int) -> Estimate:
    label = exp.name + (f" --corpus {exp.variant}" if exp.variant else "")
    est = Estimate(label, exp.corpus.name, kind=kind)
    est.n_strata, est.n_cells = len(exp.strata()), n_cells
    est.n_chains = n_cells // max(1, est.n_strata)
    est.trials_per_stratum = None
    return est


def runs_here_text(why: Any, missing: list[str]) -> str:
    """``runs here``, else ``does not run here (why)``: the data first, then the CM checkpoints."""
    if not why.runnable:
        return f"does not run here ({why.reason})"
    if len(missing) > 1:
        return f"does not run here ({len(missing)} CM checkpoints are missing; first: {missing[0]})"
    if missing:
        return f"does not run here ({missing[0]})"
    return "runs here"


def spoofing_cm_note(exp: Any) -> str | None:
    """A note on the CM work of a spoofing experiment that names countermeasures
    (:mod:`interbias.run.cm_stage`; whether their checkpoints are here is ``availability``'s);
    None for any other."""
    if not exp.spoofing_cms:
        return None
    from interbias.run.cm_stage import reference_cell

    refs = sum(reference_cell(exp, c) for c in exp.cells())
    return (
        f"countermeasures {', '.join(exp.spoofing_cms)} also score each cell's distinct eval test utterances, and in "
        f"the {refs} reference cell(s) the dev trials' test utterances and the attacks imitating dev speakers; "
        f"{NO_TIME}"
    )
