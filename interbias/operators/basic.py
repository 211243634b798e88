"""The identity operator: the explicit clean condition."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from interbias.operators import OpContext, Operator, register_operator


@register_operator
@dataclass(frozen=True)
class Identity(Operator):
    """Returns its input unchanged (and is skipped in chain fingerprints)."""

    name = "identity"
    recorded = ()  # its record stays in the realised column
    is_identity = True

    def apply(self, x: np.ndarray, ctx: OpContext) -> tuple[np.ndarray, dict[str, Any]]:
        return x, {}
