"""Latency percentiles, computed as the `stats` command computes them.

When `wiredump.dissect.stats` offers its `percentile(sorted_values, q)` helper (q a
fraction in [0, 1]), that one
is used so that `check` and `stats` never disagree on a number. Otherwise the
nearest-rank method: the p-th percentile of n sorted values is the value at rank
ceil(p/100 · n) (1-based), so it is always a latency that was actually measured
(p50 of [1, 2, 3, 4] is 2; p99 of 10 values is the largest).
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def nearest_rank(sorted_values: Sequence[float], p: float) -> float | None:
    """The p-th percentile (0 < p ≤ 100) of already sorted values; None when there are none."""
    n = len(sorted_values)
    if n == 0:
        return None
    rank = max(1, math.ceil(p / 100.0 * n))
    return sorted_values[min(rank, n) - 1]


def percentile(sorted_values: Sequence[float], p: float) -> float | None:
    """The p-th percentile the way `wiredump stats` computes it."""
    try:
        from wiredump.dissect import stats  # written concurrently; may not exist yet
    except ImportError:
        return nearest_rank(sorted_values, p)
    fn = getattr(stats, "percentile", None)
    if fn is None:
        return nearest_rank(sorted_values, p)
    return fn(sorted_values, p / 100.0)
