"""How the measured speedups of a collected folder depend on how many times a parallel region is entered.

A parallel loop below other loops forks and joins once per iteration of the loops around it; the cost model's
features tag the parallel loop and give every loop's extent, but not that product.  For each row this reads the
featurized tree (a training run's features cache, `train`'s OUT/features.pkl, or featurizes afresh) and buckets the
rows by log2 of the product of (1 + trips) of the loops enclosing the first parallel loop (the features' squashed
extents, so a little above the entries; the largest over the row's computations; "none" without a parallel loop), with each bucket's median speedup and its rows under 0.25x
and 0.05x.  "fork_load" buckets the same rows by `features.fork_load` (the parallel view's forks per iteration of
the untransformed program, what the fork term multiplies) with each bucket's median of (1/speedup - 1) / load:
the fork cost C that bucket implies, were the rest of the time unchanged.

    python scripts/costmodel_fork_count.py data/poly-costmodel-fcaa-5ms --cache runs/s49/sc-s0/features.pkl
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from llmopt.poly.costmodel.data import load_rows  # noqa: E402
from llmopt.poly.costmodel.features import (  # noqa: E402
    LOOP_EXTENT,
    LOOP_FEATURES,
    LOOP_PARALLEL,
    LOOP_PRESENT,
    MAX_LOOPS,
    fork_load,
)
from llmopt.poly.costmodel.train import TrainConfig, featurize_rows  # noqa: E402

BUCKETS = ((0, 1), (1, 8), (8, 14), (14, float("inf")))  # log2 of the forks
LOAD_BUCKETS = ((0, 1e-4), (1e-4, 1e-3), (1e-3, 1e-2), (1e-2, 1e-1), (1e-1, float("inf")))  # forks per iteration


def log2_forks(comps: np.ndarray) -> float | None:
    """log2 of how many times the first parallel loop of a computation is entered (the largest over them)."""
    best = None
    for comp in comps:
        acc = 0.0
        for level in range(MAX_LOOPS):
            loop = comp[level * LOOP_FEATURES:(level + 1) * LOOP_FEATURES]
            if loop[LOOP_PRESENT] < 0.5:  # no loop at this level
                break
            if loop[LOOP_PARALLEL] > 0.5:
                best = max(best or 0.0, acc)
                break
            acc += 16.0 * loop[LOOP_EXTENT]  # squash(x) = log2(1 + x) / 16
    return best


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("data", help="a collected folder")
    p.add_argument("--cache", help="features cache of a training run (features.pkl)")
    args = p.parse_args()
    rows = load_rows(args.data)
    sets = featurize_rows(rows, TrainConfig(fractions=(1.0, 0.0)), False, cache=args.cache)["train"]
    forks = [log2_forks(np.asarray(t.comps)) for t in sets.trees]
    y = np.asarray(sets.speedups)
    out = {}
    for name, sel in [("none", [f is None for f in forks])] + [
            (f"[{lo}, {hi})", [f is not None and lo <= f < hi for f in forks]) for lo, hi in BUCKETS]:
        if (row := bucket(y, np.asarray(sel, dtype=bool))) is not None:
            out[name] = row
    load = np.array([fork_load(t) for t in sets.trees])
    by_load = {}
    for name, sel in [("none", load == 0)] + [(f"[{lo:g}, {hi:g})", (load > 0) & (load >= lo) & (load < hi))
                                              for lo, hi in LOAD_BUCKETS]:
        if (row := bucket(y, sel)) is not None:
            by_load[name] = row if name == "none" else {
                **row, "median_implied_C": round(float(np.median((1.0 / y[sel] - 1.0) / load[sel])), 1)}
    print(json.dumps({"rows": int(len(y)), "log2_forks": out, "fork_load": by_load}, indent=1))
    return 0


def bucket(y: np.ndarray, sel: np.ndarray) -> dict | None:
    """The rows, median speedup and rows under 0.25x and 0.05x of the speedups `y[sel]`; None when there are none."""
    part = y[sel]
    if not len(part):
        return None
    return {"rows": int(len(part)), "median_speedup": round(float(np.median(part)), 3),
            "under_0.25x": int((part < 0.25).sum()), "under_0.05x": int((part < 0.05).sum())}


if __name__ == "__main__":
    sys.exit(main())
