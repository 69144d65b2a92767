"""The measures every part reports the same way (DESIGN.md, Metrics): improvement over -Oz and size bins.

The runtime, the dataset card and the evaluation all import these, so "improvement" means one thing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

METRICS = ("instcount", "objsize")  # what a search minimizes: IR instructions, or .text+.data bytes
SIZE_EDGES = (25, 50, 100, 200, 400, 800)
SIZE_BINS = ("0-24", "25-49", "50-99", "100-199", "200-399", "400-799", ">=800")


def overall_improvement(oz_counts: Iterable[int], result_counts: Iterable[int]) -> float:
    """(sum -Oz - sum result) / sum -Oz, in %; 0.0 for an empty or all-zero set."""
    oz_total, result_total = sum(oz_counts), sum(result_counts)
    return 100.0 * (oz_total - result_total) / oz_total if oz_total else 0.0


def size_bin(instcount_input: int, edges: Sequence[int] = SIZE_EDGES) -> str:
    """Label of the input-size bin (unoptimized instructions) for thesis Fig. 4.9."""
    low = 0
    for edge in edges:
        if instcount_input < edge:
            return f"{low}-{edge - 1}"
        low = edge
    return f">={low}"
