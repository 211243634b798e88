"""Trial lists: drawn once per experiment from derived seeds, saved, and scored by every cell.

Trials are drawn per stratum (one combination of population-factor levels). Genuine trials
pair two different utterances of one speaker; impostor trials pair utterances of two
different speakers of the same stratum. Every stratum gets the same number of target and
non-target trials (the smallest stratum's supply, capped by the spec), each from its own
generator ``derive_rng("trials", experiment, seed, stratum, spec)`` so no stratum's draw
depends on another's.

With ``trials.enrol_utterances`` K > 1 each trial model holds K enrolment utterances
(:mod:`interbias.trials.enrolment`): a speaker gives target trials when it has K + 1 utterances
(K enrolment utterances and a test utterance, all different) and enrols non-target and spoof
trials when it has K; the extra enrolment utterances are drawn after the pairs, from
``derive_rng(*stratum parts, "enrol", K)``, so the matched counts hold as for K = 1.

An external trial list (``trials: {list: FILE}`` or ``interbias run --trials FILE``) is read
instead by :func:`interbias.trials.external.read_trial_list`: VoxCeleb or Kaldi/WeSpeaker format, names matched to
manifest entries, each trial assigned to the stratum its two utterances' attributes select.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from interbias.corpora.manifest import Manifest, Utterance
from interbias.experiments.requirements import dev_count
from interbias.experiments.schema import Experiment, Stratum
from interbias.trials.enrolment import (
    check_enrolment,
    enrol_columns,
    enrolment_ids,
    expand,
    extra_enrolment,
    with_models,
)
from interbias.trials.impostors import draw_nontargets, nontarget_pools, nontargets_available
from interbias.trials.speaker_budget import keep_speakers, split_speakers_per_stratum
from interbias.trials.text_pairs import text_mode
from interbias.utils.errors import TrialError
from interbias.utils.seeding import derive_rng, derive_seed

if TYPE_CHECKING:
    from interbias.corpora.attacks import AttackSet

COLUMNS = ["trial_id", "stratum", "enrol", "test", "label", "enrol_speaker", "test_speaker"]
#: Optional columns: ``split`` (dev|eval) with ``trials.dev_share``; ``trial_type``
#: (target|nontarget|spoof) when the experiment has spoofing. Absent otherwise.
SPLITS = ("dev", "eval")
TRIAL_TYPES = ("target", "nontarget", "spoof")


@dataclass
class StratumStats:
    name: str
    n_speakers: int
    n_enrol_utterances: int
    n_test_utterances: int
    targets_available: int
    nontargets_available: int
    n_target: int = 0
    n_nontarget: int = 0
    seed: int = 0


@dataclass
class TrialList:
    frame: pd.DataFrame
    strata: dict[str, StratumStats] = field(default_factory=dict)
    source: str = "sampled"
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def sha256(self) -> str:
        """sha256 of the canonical rows ``stratum\\tenrol\\ttest\\tlabel\\n`` in trial order
        (``\\tsplit``, ``\\ttrial_type`` and ``\\tenrol_2`` … ``\\tenrol_K`` before the newline when
        those columns exist)."""
        f = self.frame
        body = (
            f["stratum"].astype(str)
            + "\t"
            + f["enrol"].astype(str)
            + "\t"
            + f["test"].astype(str)
            + "\t"
            + f["label"].astype(int).astype(str)
        )
        for col in ("split", "trial_type", *enrol_columns(f)[1:]):
            if col in f.columns:
                body = body + "\t" + f[col].astype(str)
        body = body + "\n"
        return hashlib.sha256("".join(body.tolist()).encode("utf-8")).hexdigest()

    def for_stratum(self, name: str) -> pd.DataFrame:
        return self.frame[self.frame["stratum"] == name]

    def utterance_ids(self) -> set[str]:
        return enrolment_ids(self.frame) | set(self.frame["test"])

    def meta(self) -> dict[str, Any]:
        """What the run directory stores beside the frame: the sha256, source, counts, strata and info."""
        return {
            "sha256": self.sha256,
            "source": self.source,
            "n_trials": len(self.frame),
            "strata": {k: asdict(v) for k, v in self.strata.items()},
            **self.info,
        }

    @classmethod
    def from_meta(cls, frame: pd.DataFrame, meta: dict[str, Any], where: str) -> TrialList:
        """The list from its frame and :meth:`meta`; a :class:`TrialError` naming ``where`` when
        the frame does not match the recorded sha256 (the run directory reads both files)."""
        missing = [c for c in ("stratum", "enrol", "test", "label") if c not in frame.columns]
        if missing:
            raise TrialError(f"{where}: no column(s) {', '.join(missing)}: not a trial list a run wrote")
        strata = {k: StratumStats(**v) for k, v in meta.get("strata", {}).items()}
        info = {k: v for k, v in meta.items() if k not in ("sha256", "source", "n_trials", "strata")}
        tl = cls(frame, strata, meta.get("source", "sampled"), info)
        if tl.sha256 != meta["sha256"]:
            raise TrialError(f"{where}: the trials do not match the sha256 recorded beside them")
        return tl


def matches_selectors(u: Utterance, selectors: dict[str, tuple[str, ...] | None]) -> bool:
    """Whether ``u`` has, for every attribute of ``selectors``, one of the listed values (``None``: any)."""
    for attr, values in selectors.items():
        if values is None:
            continue
        if u.get(attr) not in values:
            return False
    return True


def eligible_utterances(exp: Experiment, manifest: Manifest) -> tuple[list[Utterance], dict[str, int]]:
    """Utterances passing the population filter and the front end's known-duration minimum."""
    kept, short = [], 0
    for u in manifest:
        if not matches_selectors(u, exp.population):
            continue
        if u.duration_s is not None and u.duration_s < exp.frontend.min_duration_s:
            short += 1
            continue
        kept.append(u)
    return kept, {"n_population": len(kept) + short, "n_excluded_short": short}


def _triangular(k: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Decode flat indices ``k`` into pairs i < j of ``n`` items (row-major over i)."""
    k = k.astype(np.float64)
    nf = n.astype(np.float64)
    i = nf - 2 - np.floor(np.sqrt(-8 * k + 4 * nf * (nf - 1) - 7) / 2.0 - 0.5)
    i = i.astype(np.int64)
    before = i * n - i * (i + 1) // 2
    j = (k.astype(np.int64) - before) + i + 1
    return i, j


def _target_pairs(
    stratum: Stratum,
    enrol: dict[str, list[str]],
    test: dict[str, list[str]],
    k: int,
    rng: np.random.Generator,
    n_enrol: int = 1,
) -> list[tuple[str, str]]:
    speakers = sorted(set(enrol) & set(test))
    if stratum.symmetric:
        sizes = np.array([len(enrol[s]) for s in speakers], dtype=np.int64)
        counts = np.where(sizes >= n_enrol + 1, sizes * (sizes - 1) // 2, 0)
        total = int(counts.sum())
        if k == 0 or total == 0:
            return []
        flat = np.sort(rng.choice(total, size=k, replace=False))
        cum = np.cumsum(counts)
        spk = np.searchsorted(cum, flat, side="right")
        local = flat - (cum[spk] - counts[spk])
        i, j = _triangular(local, sizes[spk])
        swap = rng.random(k) < 0.5
        out = []
        for s_idx, a, b, sw in zip(spk, i, j, swap, strict=True):
            utts = enrol[speakers[s_idx]]
            e, t = (utts[b], utts[a]) if sw else (utts[a], utts[b])
            out.append((e, t))
        return out
    cands = []
    for s in speakers:
        usable = _usable_tests(enrol[s], test[s], n_enrol)
        cands += [(e, t) for e in enrol[s] for t in usable if e != t]
    if k == 0:
        return []
    pick = np.sort(rng.choice(len(cands), size=k, replace=False))
    return [cands[p] for p in pick]


def _usable_tests(enrol: list[str], test: list[str], n_enrol: int) -> list[str]:
    """A speaker's test utterances that leave ``n_enrol`` enrolment utterances besides themselves."""
    inside = set(enrol)
    return [t for t in test if len(enrol) - (t in inside) >= n_enrol]


def _count_targets(stratum: Stratum, enrol: dict[str, list[str]], test: dict[str, list[str]], n_enrol: int = 1) -> int:
    total = 0
    for s in set(enrol) & set(test):
        if stratum.symmetric:
            n = len(enrol[s])
            total += n * (n - 1) // 2 if n >= n_enrol + 1 else 0
        else:
            inside = set(enrol[s])
            total += sum(len(enrol[s]) - (t in inside) for t in _usable_tests(enrol[s], test[s], n_enrol))
    return total


def _pools(
    stratum: Stratum, utts: list[Utterance], per_speaker: int | None, rng_parts: tuple[Any, ...]
) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    enrol: dict[str, list[str]] = {}
    test: dict[str, list[str]] = {}
    for u in utts:
        if matches_selectors(u, stratum.enrol):
            enrol.setdefault(u.speaker, []).append(u.id)
        if matches_selectors(u, stratum.test):
            test.setdefault(u.speaker, []).append(u.id)
    if per_speaker:
        for side, pool in (("enrol", enrol), ("test", test)):
            for spk in sorted(pool):
                ids = sorted(pool[spk])
                if len(ids) > per_speaker:
                    r = derive_rng(*rng_parts, "subset", side, spk)
                    pool[spk] = sorted(r.choice(ids, size=per_speaker, replace=False).tolist())
                else:
                    pool[spk] = ids
        if stratum.symmetric:
            test = enrol
    else:
        enrol = {s: sorted(v) for s, v in enrol.items()}
        test = {s: sorted(v) for s, v in test.items()}
    return enrol, test


def population_attributes(exp: Experiment) -> tuple[str, ...]:
    """The manifest attributes the experiment's population factors select by (in order)."""
    return tuple(dict.fromkeys(f.attribute for f in exp.population_factors if f.attribute))


def split_speakers(
    utts: list[Utterance], dev_share: float, by: tuple[str, ...], rng_parts: tuple[Any, ...]
) -> tuple[dict[str, str], dict[str, Any]]:
    """Assign every speaker to ``dev`` or ``eval`` (speaker-disjoint), stratified by ``by``.

    Speakers are grouped by their profile (the sorted set of values each attribute of ``by``
    takes over their utterances); each group is permuted by ``derive_rng(*rng_parts, profile)``
    and its first round(dev_share · n) speakers go to dev, kept within [1, n − 1] when n ≥ 2
    (a lone speaker goes to eval). Returns the assignment and a record of it.
    """
    values: dict[str, dict[str, set[str]]] = {}
    for u in utts:
        slot = values.setdefault(u.speaker, {a: set() for a in by})
        for a in by:
            slot[a].add(u.get(a) or "")
    groups: dict[str, list[str]] = {}
    for spk in sorted(values):
        profile = ";".join(f"{a}={'|'.join(sorted(values[spk][a]))}" for a in by) or "all"
        groups.setdefault(profile, []).append(spk)
    assign: dict[str, str] = {}
    record: dict[str, dict[str, int]] = {}
    for profile, speakers in sorted(groups.items()):
        order = derive_rng(*rng_parts, profile).permutation(len(speakers))
        n = len(speakers)
        n_dev = dev_count(n, dev_share)
        for rank, idx in enumerate(order.tolist()):
            assign[speakers[idx]] = "dev" if rank < n_dev else "eval"
        record[profile] = {"dev": n_dev, "eval": n - n_dev}
    info = {
        "dev_share": dev_share,
        "split_by": list(by),
        "seed": derive_seed(*rng_parts),
        "groups": record,
        "n_dev_speakers": sum(v == "dev" for v in assign.values()),
        "n_eval_speakers": sum(v == "eval" for v in assign.values()),
        "dev_speakers": sorted(s for s, v in assign.items() if v == "dev"),
    }
    return assign, info


def draw_trials(
    exp: Experiment, manifest: Manifest, *, max_trials: int | None = None, attacks: AttackSet | None = None
) -> TrialList:
    """Draw the experiment's trial list (targets and non-targets matched across strata).

    With ``trials.dev_share`` the speakers are first split into speaker-disjoint dev and eval
    sets (:func:`split_speakers`) and each split is drawn on its own (column ``split``). With
    an attack set, each stratum (of eval) also gets spoof trials pairing a genuine enrolment of
    a speaker with an attack imitating that speaker (label 0, column ``trial_type``).
    """
    utts, pop_info = eligible_utterances(exp, manifest)
    if not utts:
        raise TrialError(
            f"{exp.name}: no utterances of corpus {manifest.name!r} pass the population filter "
            f"{format_selectors(exp.population)} (corpus has {len(manifest)} utterances)"
        )
    spec = exp.trials
    cap_t, cap_n, cap_s = spec.targets, spec.n_nontargets, spec.n_spoofs
    if max_trials is not None:
        if max_trials < 2:
            raise TrialError("--max-trials must be at least 2 (one target and one non-target per stratum)")
        cap_t, cap_n = min(cap_t, max_trials // 2), min(cap_n, max_trials - max_trials // 2)
        cap_s = min(cap_s, max_trials // 2)
    spec_key: dict[str, Any] = {
        "targets": cap_t,
        "nontargets": cap_n,
        "min_speakers": spec.min_speakers,
        "utterances_per_speaker": spec.utterances_per_speaker,
    }
    if spec.speakers_per_stratum is not None:  # only when set: other trial lists keep their hashes
        spec_key["speakers_per_stratum"] = spec.speakers_per_stratum
    if spec.text not in (None, "any"):  # likewise: "any" draws as without the key
        spec_key["text"] = spec.text
    if spec.enrol_utterances > 1:  # likewise
        spec_key["enrol_utterances"] = spec.enrol_utterances
        check_enrolment(exp.name, spec.enrol_utterances, utts)
    split_info: dict[str, Any] | None = None
    blocks: list[tuple[str | None, list[Utterance]]] = [(None, utts)]
    if spec.dev_share is not None:
        by = spec.split_by if spec.split_by is not None else population_attributes(exp)
        spec_key["dev_share"] = spec.dev_share
        spec_key["split_by"] = list(by)
        assign, split_info = split_speakers(utts, spec.dev_share, by, ("trials-split", exp.name, exp.seed, spec_key))
        blocks = [(name, [u for u in utts if assign[u.speaker] == name]) for name in SPLITS]
    rows: list[tuple[Any, ...]] = []
    stats: dict[str, StratumStats] = {}
    info: dict[str, Any] = {}
    for split, part in blocks:
        b_rows, b_stats, pools, matched = _draw_block(exp, part, spec_key, cap_t, cap_n, split)
        rows += b_rows
        if split == "dev":
            info["dev_strata"] = {k: asdict(v) for k, v in b_stats.items()}
            info["dev_matched"] = matched
        else:
            stats, main_matched = b_stats, matched
            if attacks is not None:
                s_rows, info["spoof"] = _draw_spoofs(exp, pools, attacks, cap_s, split, {u.id: u for u in part})
                rows += s_rows
    order = {s.name: i for i, s in enumerate(exp.strata())}
    extra = (["split"] if split_info else []) + (["trial_type"] if attacks is not None else [])
    frame = pd.DataFrame(rows, columns=[*COLUMNS[1:], "split", "trial_type", "_extra"])
    frame["_o"] = frame["stratum"].map(order)
    frame["_s"] = [SPLITS.index(v) if v else -1 for v in frame["split"]]
    frame["_t"] = [TRIAL_TYPES.index(v) for v in frame["trial_type"]]
    frame = frame.sort_values(["_o", "_s", "_t", "enrol", "test"], kind="stable")
    frame = frame.drop(columns=["_o", "_s", "_t", *(c for c in ("split", "trial_type") if c not in extra)])
    frame = expand(frame.reset_index(drop=True), spec.enrol_utterances)
    frame.insert(0, "trial_id", np.arange(len(frame), dtype=np.int64))
    frame["label"] = frame["label"].astype(np.int8)
    info = {
        "experiment": exp.name,
        "seed": exp.seed,
        "spec": spec_key,
        "population": pop_info,
        "matched": main_matched,
        **({"split": split_info} if split_info else {}),
        **({"text_pairs": spec.text} if spec.text is not None else {}),
        **info,
    }
    return TrialList(frame, stats, "sampled", info)


def _draw_block(
    exp: Experiment, utts: list[Utterance], spec_key: dict[str, Any], cap_t: int, cap_n: int, split: str | None
) -> tuple[list[tuple[Any, ...]], dict[str, StratumStats], dict[str, Any], dict[str, int]]:
    """Targets and non-targets of one split (or of all speakers), matched across strata."""
    spec = exp.trials
    where = "" if split is None else f" ({split} split)"
    pools = {}
    stats: dict[str, StratumStats] = {}
    texts, mode = text_mode(exp.name, spec.text, utts)
    for st in exp.strata():
        parts = ("trials", exp.name, exp.seed, st.name, spec_key, *(() if split is None else (split,)))
        enrol, test = _pools(st, utts, spec.utterances_per_speaker, parts)
        n_keep = split_speakers_per_stratum(exp, split)  # the dev split: dev_speakers(N)
        if n_keep is not None:
            enrol, test = keep_speakers((enrol, test), n_keep, parts, f"{exp.name}: stratum {st.name}{where}")
        speakers = sorted(set(enrol) | set(test))
        paired = set(enrol) & set(test)
        if len(paired) < spec.min_speakers:
            raise TrialError(
                f"{exp.name}: stratum {st.name}{where} has {len(paired)} speaker(s) with usable enrol and test "
                f"utterances (enrol side {len(enrol)}, test side {len(test)}); at least {spec.min_speakers} are needed"
            )
        pools[st.name] = (st, enrol, test, parts)
        stats[st.name] = StratumStats(
            name=st.name,
            n_speakers=len(speakers),
            n_enrol_utterances=sum(map(len, enrol.values())),
            n_test_utterances=sum(map(len, test.values())),
            targets_available=_count_targets(st, enrol, test, spec.enrol_utterances),
            nontargets_available=nontargets_available(
                st, *nontarget_pools(st, enrol, test, spec.enrol_utterances), texts, mode
            ),
            seed=derive_seed(*parts),
        )
    n_t = min(cap_t, *(s.targets_available for s in stats.values()))
    n_n = min(cap_n, *(s.nontargets_available for s in stats.values()))
    if n_t == 0:
        worst = min(stats.values(), key=lambda s: s.targets_available)
        need = spec.enrol_utterances + 1
        raise TrialError(
            f"{exp.name}: stratum {worst.name}{where} has no genuine pairs (each speaker needs {need} utterances"
            + (f": {need - 1} to enrol, one to test)" if need > 2 else ")")
        )
    if n_n == 0:
        raise TrialError(f"{exp.name}: a stratum{where} has no impostor pairs")
    rows = []
    k = spec.enrol_utterances
    by_id = {u.id: u for u in utts}
    for st_name, (st, enrol, test, parts) in pools.items():
        rng = derive_rng(*parts)
        spk_of = {u: s for pool in (enrol, test) for s, ids in pool.items() for u in ids}
        tg = _target_pairs(st, enrol, test, n_t, rng, k)
        nt = draw_nontargets(st, *nontarget_pools(st, enrol, test, k), n_n, rng, texts, mode)
        more = derive_rng(*parts, "enrol", k) if k > 1 else rng
        for label, kind, pairs in ((1, "target", tg), (0, "nontarget", nt)):
            for e, t in pairs:
                extra = extra_enrolment(enrol[spk_of[e]], (e, t), k, by_id, more)
                rows.append((st_name, e, t, label, spk_of[e], spk_of[t], split, kind, extra))
        stats[st_name].n_target, stats[st_name].n_nontarget = len(tg), len(nt)
    return rows, stats, pools, {"n_target_per_stratum": n_t, "n_nontarget_per_stratum": n_n}


def _draw_spoofs(
    exp: Experiment,
    pools: dict[str, Any],
    attacks: AttackSet,
    cap_s: int,
    split: str | None,
    by_id: dict[str, Utterance],
) -> tuple[list[tuple[Any, ...]], dict[str, Any]]:
    """Spoof trials: (genuine enrolment of speaker S, an attack imitating S), matched across
    strata, drawn from ``derive_rng(*stratum parts, "spoof", cap)`` — the bona fide draw does
    not depend on the attacks; an attack joins a stratum when the speaker it imitates has
    enrolment utterances there."""
    by_target = attacks.by_target()
    cands: dict[str, list[tuple[str, str, str]]] = {}
    for st_name, (_st, enrol, _test, _parts) in pools.items():
        cands[st_name] = [
            (e, a, spk)
            for spk in sorted(with_models(enrol, exp.trials.enrol_utterances))
            for e in enrol[spk]
            for a in by_target.get(spk, [])
        ]
    n_s = min(cap_s, *(len(c) for c in cands.values()))
    if n_s == 0:
        worst = min(cands, key=lambda k: len(cands[k]))
        raise TrialError(
            f"{exp.name}: stratum {worst} has no spoof pairs: no attack of {attacks.source} imitates a speaker "
            f"with enrolment utterances there ({len(by_target)} speaker(s) are attacked)"
        )
    rows = []
    per_stratum = {}
    k = exp.trials.enrol_utterances
    for st_name, (_st, enrol, _test, parts) in pools.items():
        rng = derive_rng(*parts, "spoof", cap_s)
        pick = np.sort(rng.choice(len(cands[st_name]), size=n_s, replace=False))
        more = derive_rng(*parts, "spoof-enrol", k) if k > 1 else rng
        for p in pick.tolist():
            e, a, spk = cands[st_name][p]
            rows.append((st_name, e, a, 0, spk, spk, split, "spoof", extra_enrolment(enrol[spk], (e,), k, by_id, more)))
        per_stratum[st_name] = {
            "spoofs_available": len(cands[st_name]),
            "n_spoof": n_s,
            "seed": derive_seed(*parts, "spoof", cap_s),
        }
    record = {
        "attacks": attacks.source,
        "attacks_sha256": attacks.sha256,
        "n_attacks": len(attacks),
        "spoofs": cap_s,
        "n_spoof_per_stratum": n_s,
        "strata": per_stratum,
    }
    return rows, record


def format_selectors(sel: dict[str, tuple[str, ...]]) -> str:
    return "{" + ", ".join(f"{k}: {list(v)}" for k, v in sel.items()) + "}" if sel else "{}"


def partners(frame: pd.DataFrame) -> dict[str, frozenset[str]]:
    """Per utterance id: its own speaker and every speaker it is paired with in ``frame``
    (operators that mix in other talkers must avoid all of them)."""
    out: dict[str, set[str]] = {}
    for col in enrol_columns(frame):
        for e_id, t_id, e_spk, t_spk in frame[[col, "test", "enrol_speaker", "test_speaker"]].itertuples(index=False):
            out.setdefault(e_id, {e_spk}).add(t_spk)
            out.setdefault(t_id, {t_spk}).add(e_spk)
    return {k: frozenset(v) for k, v in out.items()}


def drawn_per_stratum(info: dict[str, Any]) -> tuple[int, int] | None:
    """(target, non-target) trials per stratum a sampled trial list drew (its ``matched``
    counts: at most what its spec asked for, fewer where the smallest stratum has no more;
    what ``run`` and ``validate`` say it drew), None for a list without them (not sampled)."""
    got = info.get("matched") or {}
    if "n_target_per_stratum" not in got or "n_nontarget_per_stratum" not in got:
        return None
    return int(got["n_target_per_stratum"]), int(got["n_nontarget_per_stratum"])


def shortfall(info: dict[str, Any]) -> str | None:
    """One line when a sampled trial list holds fewer targets or non-targets per stratum than
    its spec asked for (too few speakers or utterances), else ``None``."""
    spec, got = info.get("spec") or {}, info.get("matched") or {}
    short = [
        f"{got[key]} {word} per stratum of the {spec[ask]} asked for"
        for ask, key, word in (
            ("targets", "n_target_per_stratum", "target trials"),
            ("nontargets", "n_nontarget_per_stratum", "non-target trials"),
        )
        if ask in spec and key in got and got[key] < spec[ask]
    ]
    if not short:
        return None
    return (
        f"{info.get('experiment', 'trials')}: drew " + " and ".join(short) + " (the smallest stratum has no more; "
        "more speakers or utterances per speaker give more)"
    )
