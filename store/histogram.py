"""Median and p95 from a duration histogram of the statistics roll-up (store/rollup.py):
the estimate of a value lies in its bin, so within 2^(1/4) - 1 (19 %) of it."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from itertools import accumulate

from store.rollup import BINS

__all__ = ["estimate"]


def estimate(counts: Sequence[int], *ps: float) -> list[float | None]:
    """The continuous percentiles ``ps`` of the values a duration histogram counts: each
    value ranked inside its bin, spread geometrically over the bin's integers."""
    ends = list(accumulate(counts))  # ends[i]: the values in bins <= i
    n = ends[-1] if ends else 0
    if n <= 0:
        return [None for _ in ps]

    def value(rank: int) -> float:
        i = bisect_right(ends, rank)  # the first bin whose end passes the rank
        if i >= len(ends):
            return float(BINS[-1])
        low = BINS[i - 1] if i > 0 else 0
        high = BINS[i] - 1 if i < len(BINS) else low
        if i == 0 or high <= low:
            return float(low)
        before = ends[i - 1]
        return float(low * (high / low) ** ((rank - before + 0.5) / (ends[i] - before)))

    out: list[float | None] = []
    for p in ps:
        position = p * (n - 1)
        low = int(position)
        fraction = position - low
        result = value(low)
        if fraction > 0:
            result = result * (1 - fraction) + value(low + 1) * fraction
        out.append(result)
    return out
