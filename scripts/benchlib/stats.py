"""Small statistics helpers: nearest-rank percentiles and medians."""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["median", "percentile", "summary"]


def percentile(values: Sequence[float], q: float) -> float | None:
    """The nearest-rank ``q`` percentile (0 < q <= 100); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def median(values: Sequence[float]) -> float | None:
    return percentile(values, 50)


def summary(values: Sequence[float]) -> dict[str, float | int | None]:
    """count, p50, p99 and max of ``values``."""
    return {
        "count": len(values),
        "p50": percentile(values, 50),
        "p99": percentile(values, 99),
        "max": max(values) if values else None,
    }
