"""LoopTune's matmul benchmark set: every (M, N, K) in 64..256 step 16 (13^3 = 2,197 nests).

The split is deterministic: a permutation seeded with 0, the first 1,757 shapes train, the last
440 test (the paper's 80/20 sizes).  `subset` picks a seeded sample for the 2-core machine.
"""

from __future__ import annotations

import numpy as np

DIMS = tuple(range(64, 257, 16))
N_TRAIN = 1757

Shape = tuple[int, int, int]


def all_shapes() -> list[Shape]:
    """All 2,197 (M, N, K) in lexicographic order."""
    return [(m, n, k) for m in DIMS for n in DIMS for k in DIMS]


def split(seed: int = 0) -> dict[str, list[Shape]]:
    """{"train": 1,757 shapes, "test": 440 shapes}, disjoint, deterministic."""
    shapes = all_shapes()
    order = np.random.default_rng(seed).permutation(len(shapes))
    return {"train": [shapes[i] for i in order[:N_TRAIN]], "test": [shapes[i] for i in order[N_TRAIN:]]}


def subset(name: str, n: int, seed: int = 0) -> list[Shape]:
    """The first `n` shapes of split `name` (already in a seeded random order)."""
    return split(seed)[name][:n]
