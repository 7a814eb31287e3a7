"""Text rendering that ``demo`` and ``inspect`` share: the utilization line and its summary."""

from __future__ import annotations

from collections.abc import Sequence

SPARK = " ▁▂▃▄▅▆▇█"


def sparkline(values: Sequence[float], width: int = 72) -> str:
    """Utilization per call as one line of block characters (1.0 = full block).

    Longer series are bucketed, each column showing its bucket's maximum: a
    peak never disappears between columns.
    """
    if not values:
        return ""
    step = max(1, -(-len(values) // width))
    buckets = [max(values[i : i + step]) for i in range(0, len(values), step)]
    return "".join(SPARK[min(len(SPARK) - 1, round(v * (len(SPARK) - 1)))] for v in buckets)


def zone_counts(zones: Sequence[str]) -> str:
    """``zones: green 12, yellow 3, red 1``."""
    return "zones: " + ", ".join(f"{z} {zones.count(z)}" for z in ("green", "yellow", "red"))
