"""``interbias audit repair``: ORCA on an encoder's clean-grid embeddings, audited on held-out voices.

Steps: the geometry audit's grid (``interbias audit geometry``'s corpus/manifest/table sources and its
embedding cache) → a voice-disjoint split (:func:`interbias.repair.orca.split_voices`) → ORCA
trained on the training voices (plus, with ``--ablations``, the variants of :data:`ABLATIONS`)
→ the geometry audit (F, Λ, ℓ, Γ with jackknife half-widths and permutation p-values) on the
held-out voices, raw and through each adapter, with the mean leakage's paired change and the
clean-pair EER (:mod:`interbias.repair.heldout`).

Outputs in ``--out`` (default ``results/repair``):

- ``orca-<encoder>-<sha12>.safetensors`` (+ ``.json``, its manifest), one per variant; the
  full variant is also copied to ``<cache>/adapters/<sha256>.safetensors`` so that the label
  ``<encoder>+orca:<sha12>`` finds it;
- ``repair.csv``: the geometry.csv rows of every audit with ``variant`` and ``adapter_sha256``;
- ``repair-summary.csv``: one row per variant (see docs/outputs.md);
- ``repair.json``: provenance (split, hashes, configs, losses, timings);
- ``heldout-manifest.jsonl`` (encoder runs): the held-out voices' utterances with absolute
  paths, for ``interbias run EXP --manifest`` on speakers the adapter never saw.
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from interbias.analysis import geometry as geo
from interbias.encoders.adapter import load_adapter, save_adapter
from interbias.repair.heldout import HeldoutFigures, heldout_figures
from interbias.repair.orca import OrcaConfig, VoiceSplit, split_voices, train
from interbias.repair.reference import class_mean_reference
from interbias.utils import atomic
from interbias.utils.errors import AnalysisError
from interbias.utils.progress import Reporter
from interbias.utils.seeding import derive_seed, sha256_file

#: Variants trained with ``--ablations`` besides the full objective: (name, config change).
ABLATIONS = (
    ("no-orthogonality", {"orthogonality": False}),
    ("no-balanced-sampling", {"balanced": False}),
    ("no-verification-term", {"w_keep": 0.0}),
    ("only-sem", {"axes": ("sem",)}),
    ("only-voice", {"axes": ("voice",)}),
    ("only-expr", {"axes": ("expr",)}),
)
#: The summary row of :func:`interbias.repair.reference.class_mean_reference` (a yardstick, no adapter).
REFERENCE = "class-mean-reference"
SUMMARY_COLUMNS = (
    "variant",
    "encoder",
    "adapter_sha256",
    "Lambda_mean",
    "Lambda_mean_hw",
    "dLambda_mean",
    "dLambda_mean_hw",
    "eer_clean",
    "F_sem",
    "F_sem_hw",
    "F_voice",
    "F_voice_hw",
    "F_expr",
    "F_expr_hw",
    "Lambda_sem_voice",
    "Lambda_sem_voice_hw",
    "Lambda_sem_expr",
    "Lambda_sem_expr_hw",
    "Lambda_voice_expr",
    "Lambda_voice_expr_hw",
    "ell_sem_voice",
    "ell_sem_voice_hw",
    "ell_voice_expr",
    "ell_voice_expr_hw",
    "Gamma_acc",
    "Gamma_acc_hw",
    "Gamma_acc_p",
    "Gamma_gen",
    "Gamma_gen_hw",
    "Gamma_gen_p",
    "m",
    "chance",
    "n_voices",
    "n_rows",
)


@dataclass(frozen=True)
class RepairOptions:
    encoder: str | None = None
    embeddings: Path | None = None
    corpus: str = "synthetic"
    corpus_root: Path | None = None
    manifest: Path | None = None
    sentences: int | None = None
    groups: tuple[str, ...] = geo.DEFAULT_ATTRIBUTES
    out: Path = Path("results/repair")
    cache_dir: Path | None = None
    device: str = "cpu"
    seed: int = 0
    heldout_share: float = 0.5
    config: OrcaConfig = field(default_factory=OrcaConfig)
    ablations: bool = False
    n_perm: int = 100
    jackknife: bool = True
    quiet: bool = False
    command: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class RepairOutcome:
    out_dir: Path
    summary: pd.DataFrame
    adapter: Path
    label: str
    split: VoiceSplit
    heldout_manifest: Path | None
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Collected:
    """The grid and what it came from (for the adapter manifest)."""

    grid: geo.EmbeddingGrid
    encoder: str
    fingerprint: str
    source: str
    data: dict[str, Any]
    manifest: Any = None
    ids: tuple[str, ...] = ()


# ---- collecting the grid --------------------------------------------------------------------------


def collect(options: RepairOptions, reporter: Reporter) -> Collected:
    """The clean grid of ``--encoder`` on the corpus/manifest, or an ``--embeddings`` table."""
    from interbias.audits import source as gr

    if (options.encoder is None) == (options.embeddings is None):
        raise AnalysisError("give exactly one of --encoder LABEL or --embeddings FILE")
    if options.embeddings is not None:
        grid = gr.grid_from_table(gr.read_table(options.embeddings), options.groups, where=str(options.embeddings))
        data = {"embeddings_file": str(options.embeddings), "embeddings_file_sha256": sha256_file(options.embeddings)}
        return Collected(grid, options.embeddings.stem, "", options.embeddings.name, data)
    from interbias.encoders import load_encoder, restore_threads
    from interbias.utils.paths import cache_dir as default_cache_dir

    cache = Path(options.cache_dir) if options.cache_dir else default_cache_dir()
    encoder = load_encoder(options.encoder, device=options.device)
    restore_threads()
    manifest = gr.load_manifest(options.corpus, options.corpus_root, options.manifest, cache, reporter)
    manifest, subset = gr.select_sentences(manifest, options.sentences)
    reporter.info(f"{encoder.label}: {len(manifest)} utterances ({subset}), clean chain")
    vectors, failures, n_embedded, n_cached = gr.embed_clean(manifest, encoder, cache, reporter)
    if failures:
        raise AnalysisError(
            f"{len(failures)} utterance(s) failed to embed (ORCA needs the full grid); first: "
            f"{next(iter(failures.items()))}"
        )
    grid = gr.grid_from_manifest(manifest, vectors, options.groups)
    ids = tuple(u.id for u in manifest if u.id in vectors)
    data = {
        "corpus": options.corpus,
        "manifest": str(options.manifest or ""),
        "manifest_sha256": manifest.sha256(),
        "subset": subset,
        "n_embedded": n_embedded,
        "n_cached": n_cached,
        "encoder_provenance": encoder.provenance(),
    }
    source = options.manifest.name if options.manifest else options.corpus
    return Collected(grid, encoder.label, encoder.fingerprint, source, data, manifest, ids)


def group_of_voice(grid: geo.EmbeddingGrid, groups: tuple[str, ...]) -> dict[str, str]:
    """Each voice's joint group value (``gender|age_band|accent``), the split's strata."""
    out: dict[str, str] = {}
    for i, voice in enumerate(grid.voice):
        out[str(voice)] = "|".join(str(grid.groups[g][i]) for g in groups)
    return out


def training_hashes(col: Collected, rows: np.ndarray) -> dict[str, str]:
    """sha256 of the training matrix (float32, row order) and of its utterances
    (``id\\tsha256\\n`` lines sorted by id; corpus runs only)."""
    x = np.ascontiguousarray(col.grid.x[rows], dtype=np.float32)
    out = {"train_embeddings_sha256": hashlib.sha256(x.tobytes()).hexdigest()}
    if col.manifest is not None:
        by_id = col.manifest.by_id()
        lines = sorted(f"{uid}\t{by_id[uid].sha256 or ''}\n" for uid, keep in zip(col.ids, rows, strict=True) if keep)
        out["train_utterances_sha256"] = hashlib.sha256("".join(lines).encode()).hexdigest()
    return out


# ---- the run ----------------------------------------------------------------------------------------


def options_digest(options: RepairOptions) -> str:
    """sha256 of the options that decide a repair's outputs (source, groups, seed, split, ORCA
    configuration, ablations, audit); not ``--out``, ``--device``, ``--quiet`` or the cache."""
    decides = {
        "encoder": options.encoder,
        "embeddings": options.embeddings,
        "corpus": options.corpus,
        "corpus_root": options.corpus_root,
        "manifest": options.manifest,
        "sentences": options.sentences,
        "groups": list(options.groups),
        "seed": options.seed,
        "heldout_share": options.heldout_share,
        "config": options.config.as_dict(),
        "ablations": options.ablations,
        "n_perm": options.n_perm,
        "jackknife": options.jackknife,
    }
    return hashlib.sha256(json.dumps(decides, sort_keys=True, default=str).encode()).hexdigest()


def check_out(out: Path, digest: str) -> None:
    """Refuse an ``--out`` that holds a finished repair (``repair.json``): of other options, or of
    the same ones (a second training is not the same adapter byte for byte across processes, so
    the first audit would be replaced by another)."""
    record = out / "repair.json"
    if not record.is_file():
        return
    try:
        earlier = json.loads(record.read_text(encoding="utf-8")).get("options_sha256")
    except (OSError, ValueError, AttributeError):
        earlier = None
    if earlier != digest:
        which = f"options {earlier[:12]}" if isinstance(earlier, str) else "options not recorded"
        raise AnalysisError(
            f"{out} already holds the repair of other options ({which}; these: {digest[:12]}): its repair.json, "
            "repair.csv and repair-summary.csv would be overwritten; give another --out, or remove that folder"
        )
    raise AnalysisError(
        f"{out} already holds this repair (the same options, {digest[:12]}): it is kept as it is; a second "
        "training would replace its adapter and audit with another; give another --out, or remove that folder"
    )


def split_notes(split: VoiceSplit, heldout_share: float) -> list[str]:
    """A line when the split departs from ``--heldout-share`` (groups clamped to keep a voice
    on each side)."""
    if not split.clamped:
        return []
    n = len(split.train) + len(split.heldout)
    return [
        f"--heldout-share {heldout_share:g}: {len(split.heldout)} of {n} voices held out "
        f"({len(split.heldout) / n:.0%}); in {len(split.clamped)} group(s) the count was clamped so that "
        "training and held-out voices each keep at least one voice of the group"
    ]


def run_repair(options: RepairOptions, reporter: Reporter | None = None) -> RepairOutcome:
    """Collect, split, train (and ablate), audit raw vs repaired on held-out voices, write."""
    reporter = reporter or Reporter(quiet=options.quiet)
    options.config.check()
    if options.n_perm < 1:
        raise AnalysisError(f"--permutations must be >= 1; got {options.n_perm}")
    digest = options_digest(options)
    check_out(Path(options.out), digest)
    t0 = time.perf_counter()
    col = collect(options, reporter)
    missing = [g for g in options.groups if g not in col.grid.groups]
    if missing:
        raise AnalysisError(f"group attribute(s) {', '.join(missing)} missing from the grid")
    split = split_voices(
        group_of_voice(col.grid, options.groups), heldout_share=options.heldout_share, seed=options.seed
    )
    train_rows = np.isin(col.grid.voice, split.train)
    held = col.grid.subset(np.isin(col.grid.voice, split.heldout))
    trained = col.grid.subset(train_rows)
    if set(held.voice) & set(trained.voice):  # never evaluate on a training voice
        raise AnalysisError("ORCA split: a held-out voice is also a training voice")
    out = Path(options.out)
    out.mkdir(parents=True, exist_ok=True)
    base_manifest = {
        "base_encoder": col.encoder,
        "base_fingerprint": col.fingerprint,
        "source": col.source,
        "groups": list(options.groups),
        "seed": options.seed,
        "heldout_share": options.heldout_share,
        "train_voices": list(split.train),
        "heldout_voices": list(split.heldout),
        "train_shape": trained.shape,
        **training_hashes(col, train_rows),
        **{k: v for k, v in col.data.items() if k != "encoder_provenance"},
    }
    variants = [("orca", options.config)]
    if options.ablations:
        variants += [(name, replace(options.config, **change)) for name, change in ABLATIONS]
    timings = {"collect_s": round(time.perf_counter() - t0, 3)}
    adapters, losses = {}, {}
    for name, cfg in variants:
        t = time.perf_counter()
        adapters[name], losses[name] = _train_variant(name, cfg, col, trained, options, base_manifest, out, reporter)
        timings[f"train_{name}_s"] = round(time.perf_counter() - t, 3)
    t = time.perf_counter()
    reference, why_not = class_mean_reference(trained, held)
    frames, heldout = _audit_all(held, adapters, col, options, reporter, reference)
    timings["audit_s"] = round(time.perf_counter() - t, 3)
    table = pd.concat(frames, ignore_index=True)
    atomic.write_csv(out / "repair.csv", table)
    summary = summarise(table, heldout)
    atomic.write_csv(out / "repair-summary.csv", summary)
    main_path, main_sha = adapters["orca"]
    label = f"{col.encoder}+orca:{main_sha[:12]}"
    if col.fingerprint:
        _store(main_path, main_sha, options)
    if options.cache_dir is not None:  # labels find stored adapters in $INTERBIAS_CACHE only
        label = f"{col.encoder}+orca:{main_path.resolve()}"
    held_manifest = _write_heldout_manifest(col, split, out)
    provenance = {
        "command": options.command,
        "label": label,
        "adapter": main_path.name,
        "adapter_sha256": main_sha,
        "variants": {n: {"adapter": p.name, "sha256": s, "losses": losses[n]} for n, (p, s) in adapters.items()},
        "split": {"train": list(split.train), "heldout": list(split.heldout)},
        "audit": {"n_perm": options.n_perm, "jackknife": options.jackknife, "subset": "heldout"},
        "data": {**base_manifest, "encoder_provenance": col.data.get("encoder_provenance", {})},
        "timings": timings,
        "options_sha256": digest,
        "notes": [*split_notes(split, options.heldout_share), reference_note(heldout, len(split.train), why_not)],
    }
    atomic.write_text(out / "repair.json", json.dumps(provenance, indent=2, sort_keys=True, default=str) + "\n")
    return RepairOutcome(out, summary, main_path, label, split, held_manifest, provenance["notes"])


def _train_variant(
    name: str,
    cfg: OrcaConfig,
    col: Collected,
    trained: geo.EmbeddingGrid,
    options: RepairOptions,
    base_manifest: dict[str, Any],
    out: Path,
    reporter: Reporter,
) -> tuple[tuple[Path, str], list[dict[str, float]]]:
    """Train one variant, write its adapter (+ .json manifest); ((path, sha256), loss trace)."""
    from interbias.utils.paths import readable_slug

    labels = {"sem": trained.text, "voice": trained.voice, "expr": trained.style}
    by_voice = group_of_voice(trained, options.groups)
    strata = [by_voice[v] for v in trained.voice]
    with reporter.task(f"ORCA {name}: training", cfg.steps) as advance:
        result = train(trained.x, labels, strata, cfg, seed=options.seed, advance=advance)
    manifest = {**base_manifest, "variant": name, "config": cfg.as_dict(), "penalty_m": result.m}
    manifest["final_loss"] = result.losses[-1]
    data = save_adapter(out / "adapter.tmp.safetensors", result.tensors, manifest)
    sha = hashlib.sha256(data).hexdigest()
    path = out / f"orca-{readable_slug(col.encoder)}-{name}-{sha[:12]}.safetensors"
    (out / "adapter.tmp.safetensors").replace(path)
    check = load_adapter(path)  # the file as the repaired encoder will read it
    atomic.write_text(path.with_suffix(".json"), json.dumps(check.manifest, indent=2, sort_keys=True) + "\n")
    return (path, sha), result.losses


def _audit_all(
    held: geo.EmbeddingGrid,
    adapters: dict[str, tuple[Path, str]],
    col: Collected,
    options: RepairOptions,
    reporter: Reporter,
    reference: np.ndarray | None = None,
) -> tuple[list[pd.DataFrame], dict[str, HeldoutFigures]]:
    """The geometry audit of the held-out grid raw and through each adapter (one seed for all),
    and each variant's :class:`HeldoutFigures` (with the class-mean ``reference`` rows, when
    given, under :data:`REFERENCE`; they get no geometry audit)."""
    seed = derive_seed("repair-audit", col.encoder, col.fingerprint, col.source, options.seed)
    grids = [("raw", "", held)]
    for name, (path, sha) in adapters.items():
        grids.append((name, sha, replace(held, x=load_adapter(path).apply(held.x))))
    frames = []
    for name, sha, grid in grids:
        units = geo.work_units(grid, options.groups, options.n_perm, options.jackknife)
        with reporter.task(f"audit {name} (held-out voices)", units) as advance:
            result = geo.audit(
                grid,
                attributes=options.groups,
                n_perm=options.n_perm,
                jackknife=options.jackknife,
                seed=seed,
                advance=advance,
            )
        enc = col.encoder if name == "raw" else f"{col.encoder}+orca:{sha[:12]}"
        meta = {"encoder": enc, "encoder_fingerprint": col.fingerprint, "source": col.source, "subset": "heldout"}
        frame = geo.to_frame(result, {**meta, "layer": "", "n_failed": 0})
        frame.insert(0, "variant", name)
        frame.insert(1, "adapter_sha256", sha)
        frames.append(frame)
    with reporter.task("held-out mean leakage (paired jackknife) and clean-pair EER", 1) as advance:
        rows = {name: grid.x for name, _, grid in grids}
        figures = heldout_figures(held, rows if reference is None else {**rows, REFERENCE: reference})
        advance(1)
    return frames, figures


def summarise(table: pd.DataFrame, heldout: Mapping[str, HeldoutFigures] | None = None) -> pd.DataFrame:
    """One row per variant (:data:`SUMMARY_COLUMNS`); ``*_hw`` are 95 % jackknife half-widths;
    the ``Lambda_mean``/``dLambda_mean``/``eer_clean`` columns from ``heldout`` (nan without)."""

    def pick(sub: pd.DataFrame, metric: str, col: str = "value", **match: str) -> float:
        sel = sub[sub["metric"] == metric]
        for k, v in match.items():
            sel = sel[sel[k].astype(str) == v]
        return float(sel[col].iloc[0]) if len(sel) and str(sel[col].iloc[0]) not in ("", "nan") else math.nan

    rows = []
    for variant, sub in table.groupby("variant", sort=False):
        row: dict[str, Any] = {"variant": variant, "encoder": sub["encoder"].iloc[0]}
        row["adapter_sha256"] = sub["adapter_sha256"].iloc[0]
        fig = (heldout or {}).get(str(variant))
        row["Lambda_mean"] = fig.lambda_mean if fig else math.nan
        row["Lambda_mean_hw"] = fig.lambda_mean_hw if fig else math.nan
        row["dLambda_mean"] = fig.delta if fig else math.nan
        row["dLambda_mean_hw"] = fig.delta_hw if fig else math.nan
        row["eer_clean"] = fig.eer_clean if fig else math.nan
        for a in geo.AXES:
            row[f"F_{a}"] = pick(sub, "F", axis=a)
            row[f"F_{a}_hw"] = pick(sub, "F", "ci_half_width", axis=a)
        for metric, pairs in (("Lambda", geo.PAIRS), ("ell", (("sem", "voice"), ("voice", "expr")))):
            for a, b in pairs:
                row[f"{metric}_{a}_{b}"] = pick(sub, metric, axis=a, axis_b=b)
                row[f"{metric}_{a}_{b}_hw"] = pick(sub, metric, "ci_half_width", axis=a, axis_b=b)
        for name, attr, axis in (("Gamma_acc", "accent", "sem"), ("Gamma_gen", "gender", "expr")):
            row[name] = pick(sub, "Gamma", attribute=attr, axis=axis)
            row[f"{name}_hw"] = pick(sub, "Gamma", "ci_half_width", attribute=attr, axis=axis)
            row[f"{name}_p"] = pick(sub, "Gamma", "p_value", attribute=attr, axis=axis)
        row["m"] = pick(sub, "Lambda", "m", axis="sem", axis_b="voice")
        row["chance"] = pick(sub, "Lambda", "chance", axis="sem", axis_b="voice")
        row["n_voices"] = int(sub["n_voices"].iloc[0])
        row["n_rows"] = int(sub["n_rows"].iloc[0])
        rows.append(row)
    if heldout is not None and rows:  # the class-mean reference: held-out figures only
        fig = heldout.get(REFERENCE)
        rows.append(
            {
                **{k: rows[0][k] for k in ("encoder", "m", "chance", "n_voices", "n_rows")},
                "variant": REFERENCE,
                "adapter_sha256": "",
                "Lambda_mean": fig.lambda_mean if fig else math.nan,
                "Lambda_mean_hw": fig.lambda_mean_hw if fig else math.nan,
                "dLambda_mean": fig.delta if fig else math.nan,
                "dLambda_mean_hw": fig.delta_hw if fig else math.nan,
                "eer_clean": fig.eer_clean if fig else math.nan,
            }
        )
    return pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS))


def reference_note(heldout: Mapping[str, HeldoutFigures], n_train: int, why_not: str) -> str:
    """One line reading the class-mean reference's held-out change against its half-width."""
    fig = heldout.get(REFERENCE)
    if fig is None:
        return f"class-mean reference not formed: {why_not}"
    head = (
        f"class-mean reference (the {n_train} training voices' text and style means made orthogonal, "
        f"applied to the held-out rows): held-out mean leakage {fig.delta:+.4f}"
    )
    if not math.isfinite(fig.delta_hw):
        return head + " (no half-width: too few texts or voices for the jackknife)"
    head += f" ± {fig.delta_hw:.4f}"
    if abs(fig.delta) <= fig.delta_hw:
        return head + "; the held-out leakage these class means explain is within resampling noise on this grid"
    return head + "; read the orca row's change against it"


def _store(path: Path, sha: str, options: RepairOptions) -> Path:
    """Copy the adapter to ``<cache>/adapters/<sha256>.safetensors`` (found by its hash)."""
    from interbias.utils.paths import cache_dir as default_cache_dir

    folder = (Path(options.cache_dir) if options.cache_dir else default_cache_dir()) / "adapters"
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{sha}.safetensors"
    if not target.is_file():
        tmp = folder / f".{sha}.tmp"
        shutil.copyfile(path, tmp)
        tmp.replace(target)
    return target


def _write_heldout_manifest(col: Collected, split: VoiceSplit, out: Path) -> Path | None:
    """The held-out voices' utterances, absolute paths (corpus runs only)."""
    if col.manifest is None:
        return None
    import dataclasses

    keep = set(split.heldout)
    utts = [dataclasses.replace(u, path=str(col.manifest.resolve(u))) for u in col.manifest if u.speaker in keep]
    held = dataclasses.replace(col.manifest, utterances=tuple(utts))
    path = out / "heldout-manifest.jsonl"
    held.write(path)
    return path
