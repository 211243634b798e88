"""The operations record (:data:`interbias.run.rundir.OPERATIONS`): what each operator chain realised on each (utterance, side, chain).

The embedding stage keeps, per (utterance, chain fingerprint), the list of records the chain
returned (the front end's first, then one per operator: :meth:`interbias.operators.Chain.apply`).
This module flattens them into one row per (utterance, side, chain) — the side (``enrol`` or
``test``) from the cells that use the chain there — with the values a reader checks a cell's
condition by (achieved SNR on active speech, crop, clipped share, saturation, loss, codec delay,
RIR id, noise file and offset, draw index) and the full records as JSON. The columns are
documented in docs/outputs.md.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import pandas as pd

from interbias.trials.enrolment import enrol_columns, first_enrolment
from interbias.utils.seeding import canonical_json

if TYPE_CHECKING:
    from interbias.experiments.schema import Cell
    from interbias.operators import Chain

#: Columns every row has before the operators' own (see docs/outputs.md).
FIRST = ["utterance", "speaker", "side", "chain", "chain_fp", "draw", "operators"]
#: Columns every row has after the operators' own.
LAST = ["source_rate_hz", "realised"]
#: The order the operators' columns (:attr:`interbias.operators.Operator.recorded`) have in
#: the file as written so far; a column no operator here declares follows them, in the order
#: the operators register.
WRITTEN_ORDER = [
    "snr_db_requested", "snr_db_achieved", "noise_kind", "noise_file", "noise_offset_s", "noise_talkers",
    "crop_start_s", "crop_length_s", "crop_kept_whole",
    "clipped_share", "gain_saturated_samples", "loss_rate_realised",
    "codec", "codec_delay_samples", "rir_id", "pitch_ratio", "echo_delay_samples",
    "agc_level_range_in_db", "agc_level_range_out_db", "resample_rate_hz",
]  # fmt: skip


def operator_columns() -> list[str]:
    """Every registered operator's columns, in :data:`WRITTEN_ORDER`, then the rest as the
    operators register."""
    from interbias.operators import OPERATORS

    declared = [c for cls in OPERATORS.registered() for c in cls.recorded]
    return [c for c in WRITTEN_ORDER if c in declared] + [c for c in dict.fromkeys(declared) if c not in WRITTEN_ORDER]


#: Columns of the operations record, in order.
COLUMNS = FIRST + operator_columns() + LAST


def flatten(chain: Chain, records: list[dict[str, Any]]) -> dict[str, Any]:
    """One row's operator columns from a chain and its realised records (front end first).
    When a chain holds an operator twice, the later one's values are the row's."""
    row: dict[str, Any] = {c: None for c in COLUMNS}
    has_front = bool(records) and "frontend" in records[0]
    front = records[0]["frontend"] if has_front else {}
    ops_records = records[1:] if has_front else records
    row["source_rate_hz"] = front.get("source_rate_hz")
    for op, rec in zip(chain.effective, ops_records, strict=False):
        row.update(op.columns(rec))
    row["operators"] = "+".join(op.name for op in chain.effective) or "clean"
    row["chain"] = chain.label
    row["chain_fp"] = chain.fingerprint
    row["draw"] = chain.draw
    row["realised"] = canonical_json(records)
    return row


def sides(
    cells: Iterable[Cell], trials_for_stratum: Callable[[str], pd.DataFrame]
) -> dict[tuple[str, str, str], Chain]:
    """(utterance, side, chain fp) -> chain for every item the cells score."""
    out: dict[tuple[str, str, str], Chain] = {}
    for cell in {c.id: c for c in cells}.values():
        sub = first_enrolment(trials_for_stratum(cell.stratum), cell.enrol_utterances)
        for enrol_chain, test_chain in cell.draws():
            enrol_ids = sub[enrol_columns(sub)].to_numpy().ravel()
            for side, chain, ids in (("enrol", enrol_chain, enrol_ids), ("test", test_chain, sub["test"])):
                for uid in set(ids):
                    out[(str(uid), side, chain.fingerprint)] = chain
    return out


def operations_frame(
    cells: Iterable[Cell],
    trials_for_stratum: Callable[[str], pd.DataFrame],
    realised: Mapping[tuple[str, str], list[dict[str, Any]]],
    speakers: Mapping[str, str],
) -> pd.DataFrame:
    """One row per (utterance, side, chain) whose chain ran (or came from the cache) in this
    invocation, sorted by (side, chain fp, utterance); items that failed before any record
    are absent (their failures are counted in run.json)."""
    rows = []
    for (uid, side, fp), chain in sides(cells, trials_for_stratum).items():
        records = realised.get((uid, fp))
        if records is None:
            continue
        rows.append({**flatten(chain, records), "utterance": uid, "speaker": speakers.get(uid), "side": side})
    frame = pd.DataFrame(rows, columns=COLUMNS)
    return frame.sort_values(["side", "chain_fp", "draw", "utterance"], kind="stable").reset_index(drop=True)


def merge_operations(earlier: pd.DataFrame | None, new: pd.DataFrame) -> pd.DataFrame:
    """A resumed run's rows: this invocation's, plus the earlier file's rows it did not redo
    (a ``vad`` column, where cells have their own front ends, is part of the key)."""
    if earlier is None or earlier.empty:
        return new
    vad = ["vad"] if "vad" in new.columns or "vad" in earlier.columns else []
    key = vad + ["utterance", "side", "chain_fp", "draw"]
    both = pd.concat([new, earlier[[c for c in COLUMNS + vad if c in earlier.columns]]], ignore_index=True)
    both = both.drop_duplicates(key, keep="first")
    return both.sort_values(vad + ["side", "chain_fp", "draw", "utterance"], kind="stable").reset_index(drop=True)


def snr_summary(ops: pd.DataFrame) -> pd.DataFrame:
    """Achieved active-speech SNR per (noise kind, requested SNR): n, mean, min, max and the
    largest |achieved − requested|, dB."""
    noisy = ops.dropna(subset=["snr_db_requested"])
    cols = ["noise_kind", "snr_db_requested", "n", "mean_db", "min_db", "max_db", "max_abs_error_db"]
    if noisy.empty:
        return pd.DataFrame(columns=cols)
    err = (noisy["snr_db_achieved"] - noisy["snr_db_requested"]).abs()
    g = noisy.assign(err=err).groupby(["noise_kind", "snr_db_requested"], sort=True)
    out = g.agg(
        n=("snr_db_achieved", "size"),
        mean_db=("snr_db_achieved", "mean"),
        min_db=("snr_db_achieved", "min"),
        max_db=("snr_db_achieved", "max"),
        max_abs_error_db=("err", "max"),
    )
    return out.reset_index()[cols]


def kept_whole_summary(ops: pd.DataFrame) -> pd.DataFrame:
    """Per (side, chain) with a crop: utterances cropped, kept whole (no longer than the crop),
    and the mean length kept, s."""
    cropped = ops.dropna(subset=["crop_length_s"])
    cols = ["side", "chain", "n", "n_kept_whole", "mean_length_s"]
    if cropped.empty:
        return pd.DataFrame(columns=cols)
    g = cropped.assign(kept=cropped["crop_kept_whole"].astype(bool)).groupby(["side", "chain"], sort=True)
    out = g.agg(n=("kept", "size"), n_kept_whole=("kept", "sum"), mean_length_s=("crop_length_s", "mean"))
    return out.reset_index()[cols]


def operation_notices(ops: pd.DataFrame, cells: Iterable[Cell]) -> list[str]:
    """One line per (chain, operator) that did less than it was asked on some utterances
    (:meth:`interbias.operators.Operator.notice`: a crop that kept files whole, an echo whose
    delay reached past the end of a file)."""
    chains = {c.fingerprint: c for cell in cells for pair in cell.draws() for c in pair}
    lines = []
    for fp, rows in ops.drop_duplicates(["chain_fp", "draw", "utterance"]).groupby("chain_fp", sort=True):
        chain = chains.get(str(fp))
        if chain is None:
            continue
        records = [json.loads(r) for r in rows["realised"]]
        for i, op in enumerate(chain.effective):
            done = [recs[i + 1] for recs in records if len(recs) > i + 1 and recs[0].get("frontend") is not None]
            line = op.notice(chain.label, done)
            if line is not None:
                lines.append(line)
    return lines
