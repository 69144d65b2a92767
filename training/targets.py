"""Which pass list a training row teaches, when several reach the best count (the `good_lists` column).

Most functions have many optimal lists (`default<O1>` and `default<O1>,early-cse` often tie), and the
autotuner's pick among them is close to arbitrary.  Three policies:

* `best`     -- the row's `passes` column (the autotuner's tie-break: shortest, then -Oz, then by name);
* `frequent` -- among the shortest tying lists, the one that ties on the most training functions, so
                equivalent functions get the same label and the model's probability mass is not split
                over lists that are interchangeable (better for Priority Sampling's unique samples);
* `random`   -- a tying list drawn afresh every epoch (up to `MAX_VARIANTS`), teaching the whole set.

Only `best` can keep the optimized IR in the answer: the dataset stores the IR of that list alone.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

POLICIES = ("best", "frequent", "random")
MAX_VARIANTS = 8  # tying lists taught per function under `random`


def tying_lists(row: dict[str, Any]) -> list[tuple[str, ...]]:
    """The row's own list first, then every other stored list that reaches its best count."""
    own = tuple(row["passes"])
    best = row.get("instcount_best")
    ties = [tuple(g["passes"]) for g in row.get("good_lists") or [] if g["instcount"] == best]
    return [own] + [t for t in dict.fromkeys(ties) if t != own]


def win_counts(rows: Sequence[dict[str, Any]]) -> Counter:
    """How many rows each list ties for the best on."""
    wins: Counter = Counter()
    for row in rows:
        wins.update(tying_lists(row))
    return wins


def choose_targets(rows: Sequence[dict[str, Any]], policy: str) -> list[list[list[str]]]:
    """Per row, the pass lists to teach (one, or several variants for `random`)."""
    if policy not in POLICIES:
        raise ValueError(f"unknown target policy {policy!r} (one of {', '.join(POLICIES)})")
    if policy == "best":
        return [[list(row["passes"])] for row in rows]
    if policy == "random":
        return [[list(t) for t in tying_lists(row)[:MAX_VARIANTS]] for row in rows]
    wins = win_counts(rows)
    out = []
    for row in rows:
        ties = tying_lists(row)
        shortest = min(len(t) for t in ties)
        # Most frequent first; equal frequency keeps the autotuner's order (own list first).
        pick = max((t for t in ties if len(t) == shortest), key=lambda t: wins[t])
        out.append([list(pick)])
    return out


def variant_for(n_variants: int, seed: int, epoch: int, row_index: int) -> int:
    """Which variant of a row an epoch teaches: a pure function of (seed, epoch, row), so resumed runs
    see exactly the targets an uninterrupted run would."""
    if n_variants <= 1:
        return 0
    mixed = (seed * 1_000_003 + epoch * 7_919 + row_index * 104_729) & 0xFFFFFFFF
    mixed = (mixed ^ (mixed >> 16)) * 0x45D9F3B & 0xFFFFFFFF
    return (mixed ^ (mixed >> 16)) % n_variants
