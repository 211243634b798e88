"""``trials: {speakers_per_stratum: N}``: draw exactly N speakers per stratum (e.g. what
``interbias plan`` asked for), or refuse in one line saying how many the corpus has.

The N speakers are drawn without replacement from the stratum's speakers that have both enrol
and test utterances, with a generator derived from the stratum's own sampling seed parts; only
their utterances enter the stratum's pools.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from interbias.errors import TrialError
from interbias.seeding import derive_rng

V = TypeVar("V")


def keep_speakers(
    pools: tuple[Mapping[str, V], Mapping[str, V]], n: int, parts: tuple[Any, ...], where: str
) -> tuple[dict[str, V], dict[str, V]]:
    """(enrol, test) pools restricted to ``n`` speakers drawn from those in both."""
    enrol, test = pools
    paired = sorted(set(enrol) & set(test))
    if len(paired) < n:
        raise TrialError(
            f"{where} has {len(paired)} speaker(s) with usable enrol and test utterances; "
            f"trials.speakers_per_stratum asks for {n}"
        )
    rng = derive_rng(*parts, "speakers_per_stratum", n)
    chosen = sorted(paired[i] for i in rng.choice(len(paired), size=n, replace=False).tolist())
    return {s: enrol[s] for s in chosen}, {s: test[s] for s in chosen}
