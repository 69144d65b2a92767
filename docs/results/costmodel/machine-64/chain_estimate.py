"""A cycles-per-iteration estimate of each computation that knows a dependence chain from a stream, and what the
core's reorder window does to short chains, as inputs for the trees (the sixty-third session's next step 3).

The sixty-third session found the trees' worst rows where the dominant computation's vectorizer loop goes from
carrying an accumulation to free, or back (MAPE 0.48 / 0.42), and a flag for "a chain of at least T trips" too
crude either as a formula or as an input: chains of a few dozen trips under an outer loop overlap in the reorder
window.  Here, per computation, from the columns the featurizer already writes (`features.COMPILER_NAMES`, the
operation counts):

- s: IR instructions of one iteration of the vectorizer's loop (the unrolled size over the innermost trips, or the
  unrolled body when the innermost loop is unrolled away), from `features._iteration_size`'s estimate;
- a chain (the loop carries a dependence and the write stays put: `x += ...`): each iteration waits LATENCY
  cycles for the one before, but a run of the loop is trips x s micro-ops, and when that fits the window ROB
  several runs (successive outer iterations, independent) are in flight at once: cycles per iteration
  max(LATENCY / overlap, s / WIDTH), overlap = ROB / (trips x s) at least 1;
- a free loop the vectorizer takes (`vector_ok`) with unit strides: s / WIDTH / lanes (4 doubles, 8 floats);
- anything else: s / WIDTH.

Per row: the work-weighted (`features.work_shares`) sum for the transformed and the untransformed tree, their log
ratio (an estimated log speedup of the arithmetic alone), and the share of each tree's estimated cycles spent
waiting on chains.  Written to runs/s64/chainest.SPLIT.npy (3 columns: log ratio, waiting share transformed,
untransformed), in the order of the matrices (matrices.py)."""

import sys
from pathlib import Path

import numpy as np

sys.path[:0] = ["."]
from matrices import META  # noqa: E402  (this folder: on the path as the script's own)

from llmopt.poly.costmodel.boosted import _parts  # noqa: E402
from llmopt.poly.costmodel.features import (  # noqa: E402
    ACCESS_FEATURES,
    COMPILER_NAMES,
    LOOP_FEATURES,
    MAX_ACCESSES,
    MAX_LOOPS,
    PLAIN_FEATURES,
    _unsquash,
    work_shares,
)

LATENCY = 4.0  # cycles of a floating-point add or multiply-add, the chain's step
ROB = 200.0  # micro-ops the core keeps in flight (Skylake 224, Zen 2 224, Zen 3 256)
WIDTH = 4.0  # instructions issued a cycle
OPS = MAX_LOOPS * LOOP_FEATURES + MAX_ACCESSES * ACCESS_FEATURES  # the operation counts' first column


def cycles(comps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each computation's estimated cycles per iteration, and whether it is a chain (module docstring)."""
    col = {n: comps[:, PLAIN_FEATURES + i].astype(np.float64) for i, n in enumerate(COMPILER_NAMES)}
    trips = np.maximum(_unsquash(col["inner_trips"]), 1.0)
    size = _unsquash(col["inner_unrolled_size"])  # trips x one iteration's size (the unroller's cost)
    s = np.where(col["inner_unrolled"] > 0.5, size, size / trips)
    s = np.maximum(s, 1.0) + 2.0  # the latch (`features.LATCH_SIZE`)
    vtrips = np.maximum(_unsquash(col["vector_trips"]), 1.0)
    chain = (col["vector_loop"] > 0.5) & (col["vector_carried"] > 0.5) & (col["vector_write_moves"] < 0.5)
    overlap = np.maximum(ROB / (vtrips * s), 1.0)
    double = comps[:, OPS + 8] > 0.5
    lanes = np.where(double, 4.0, 8.0)
    vector = (col["vector_ok"] > 0.5) & (col["vector_unit_strides"] > 0.5)
    issue = s / WIDTH
    out = np.where(chain, np.maximum(LATENCY / overlap, issue), np.where(vector, issue / lanes, issue))
    return out, chain


def columns(tree) -> list[float]:
    w = work_shares(tree.anchor.comps)
    ct, kt = cycles(tree.comps)
    ca, ka = cycles(tree.anchor.comps)
    t, a = w @ ct, w @ ca
    return [float(np.log(a / t)), float(w @ (ct * kt) / t), float(w @ (ca * ka) / a)]


def main() -> None:
    train, held = _parts([sys.argv[1]], META, Path("runs/s62/invariance.features.pkl"), 0.0, 5.0)
    Path("runs/s64").mkdir(parents=True, exist_ok=True)
    for name, (trees, y, _) in {"train": train, **held}.items():
        x = np.array([columns(t) for t in trees], dtype=np.float32)
        np.save(f"runs/s64/chainest.{name}.npy", x)
        corr = np.corrcoef(x[:, 0], np.log(y))[0, 1]
        print(name, x.shape, "mean", x.mean(0).round(3), "corr(log ratio, log speedup)", round(float(corr), 3),
              flush=True)


if __name__ == "__main__":
    main()
