"""LoopTune's state vector: 20 numbers per loop, 10 loops, computed from the index expressions.

Per loop: [cursor flag, size, tail, 1 if compute else 0 (write-back), 16-bin stride histogram].
The histogram counts the loop's memory accesses by their stride (elements moved in a tensor
when the loop advances one iteration = coefficient * dimension stride * loop step) in bins
2^0 .. 2^15 (bin = floor(log2 stride), clamped to 15); accesses the loop does not move
(stride 0) are not counted.  Each loop's histogram is normalized to sum to 1, because all the
accesses of one loop run equally often (its size and tail already say how often).
"""

from __future__ import annotations

import math

import numpy as np

from llmopt.loops.actions import MAX_LOOPS
from llmopt.loops.nest import Access, Loop, Nest, steps

N_FEATURES = 20
N_BINS = 16


def _bin(stride: int) -> int:
    return min(int(math.log2(stride)), N_BINS - 1)


def _loop_rows(nest: Nest, loops: tuple[Loop, ...], accesses: list[Access], compute: bool, offset: int) -> list:
    rows = []
    for p, (lp, step) in enumerate(zip(loops, steps(loops), strict=True)):
        hist = np.zeros(N_BINS)
        for acc in accesses:
            stride = abs(nest.op.iterator_stride(acc, lp.iterator)) * step
            if stride:
                hist[_bin(stride)] += 1
        if hist.sum():
            hist /= hist.sum()
        row = [1.0 if nest.cursor == offset + p else 0.0, lp.size, lp.tail, 1.0 if compute else 0.0]
        rows.append(row + hist.tolist())
    return rows


def loop_features(nest: Nest) -> np.ndarray:
    """Raw features, zero rows after the last loop. Shape: [MAX_LOOPS, 20], float64."""
    op = nest.op
    temp = op.output  # the compute nest accumulates into T, laid out like the output
    rows = _loop_rows(nest, nest.compute, [temp, *op.inputs], True, 0)
    rows += _loop_rows(nest, nest.writeback, [temp, op.output], False, len(nest.compute))
    out = np.zeros((MAX_LOOPS, N_FEATURES))
    out[: len(rows)] = np.array(rows)
    return out


def observation(nest: Nest) -> np.ndarray:
    """The env's observation: `loop_features` with size and tail squashed to [0, 1] by
    log2(1 + x) / 16 so that a network sees comparable magnitudes. Shape: [200], float32."""
    feats = loop_features(nest)
    feats[:, 1:3] = np.log2(1.0 + feats[:, 1:3]) / 16.0
    return np.clip(feats, 0.0, 1.0).astype(np.float32).reshape(-1)
