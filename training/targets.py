"""Which pass list a training row teaches, when several reach the best count (the `good_lists` column).

Most functions have many optimal lists (`default<O1>` and `default<O1>,early-cse` often tie), and the
autotuner's pick among them is close to arbitrary.  Four policies:

* `best`     -- the row's `passes` column (the autotuner's tie-break: shortest, then -Oz, then by name);
* `frequent` -- among the shortest tying lists, the one that ties on the most training functions, so
                equivalent functions get the same label and the model's probability mass is not split
                over lists that are interchangeable (better for Priority Sampling's unique samples);
* `random`   -- a tying list drawn afresh every epoch (up to `MAX_VARIANTS`), teaching the whole set;
* `beyond_oz` -- `frequent`, but never the bare `default<Oz>` when another list ties: -Oz is always
                compiled as the backup (predict, eval with -Oz backup), so a sample spent on it is
                wasted, and a function -Oz already solves teaches the most common list that also does.

Only `best` can keep the optimized IR in the answer: the dataset stores the IR of that list alone.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from llmopt.llvm.passes import OZ

POLICIES = ("best", "frequent", "random", "beyond_oz")
OZ_ONLY = (OZ,)  # the bare -Oz list
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
        if policy == "beyond_oz" and len(ties) > 1:
            ties = [t for t in ties if t != OZ_ONLY]
        shortest = min(len(t) for t in ties)
        # Most frequent first; equal frequency keeps the autotuner's order (own list first).
        pick = max((t for t in ties if len(t) == shortest), key=lambda t: wins[t])
        out.append([list(pick)])
    return out


def improves_on_oz(row: dict[str, Any]) -> bool:
    """True when the row's best list beats `default<Oz>` (the functions a model can win on)."""
    return row["instcount_best"] < row["instcount_oz"]


def keep_unimproved(rows: Sequence[dict[str, Any]], fraction: float, seed: int,
                    improved: set[str] | frozenset[str] = frozenset()) -> list[dict[str, Any]]:
    """Every row whose best beats -Oz, and a seeded `fraction` of the others (whose label a model under
    -Oz backup cannot win anything on: they cost training time and teach mostly the -Oz prior).
    `improved`: the `ir_hash`es of rows that some other list beats -Oz on (a list matrix's hits)."""
    if fraction >= 1.0:
        return list(rows)
    import random

    rng = random.Random(seed)
    return [r for r in rows if improves_on_oz(r) or r.get("ir_hash") in improved or rng.random() < fraction]


def variant_for(n_variants: int, seed: int, epoch: int, row_index: int) -> int:
    """Which variant of a row an epoch teaches: a pure function of (seed, epoch, row), so resumed runs
    see exactly the targets an uninterrupted run would."""
    if n_variants <= 1:
        return 0
    mixed = (seed * 1_000_003 + epoch * 7_919 + row_index * 104_729) & 0xFFFFFFFF
    mixed = (mixed ^ (mixed >> 16)) * 0x45D9F3B & 0xFFFFFFFF
    return (mixed ^ (mixed >> 16)) % n_variants
