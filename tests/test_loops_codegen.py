"""Every generated kernel computes what numpy computes: many random schedules, small shapes."""

import numpy as np
import pytest

from llmopt.loops.actions import ACTIONS, apply, is_available
from llmopt.loops.codegen import Target, generate, register_scope
from llmopt.loops.nest import Nest, batched_matmul, conv2d, matmul, validate


def _random_schedules(op, count, seed):
    rng = np.random.default_rng(seed)
    out = {}
    while len(out) < count:
        nest = Nest.untiled(op)
        for _ in range(10):
            acts = [a for a in ACTIONS if is_available(nest, a)]
            nest = apply(nest, acts[int(rng.integers(len(acts)))])
        validate(nest)
        out[nest.schedule_key()] = nest
    return list(out.values())


@pytest.mark.parametrize("shape", [(16, 24, 20), (13, 17, 9), (40, 33, 36)])
def test_random_matmul_schedules_match_numpy(backend, shape):
    nests = _random_schedules(matmul(*shape), 12, seed=sum(shape))
    for nest, res in zip(nests, backend.measure_many(nests), strict=True):
        assert res["ok"], (nest.describe(), res)
        assert res["gflops"] > 0


def test_hand_tiled_matmul_with_tails(backend):
    # 37 x 53 x 19: every split leaves a tail; register tile m:4 x n:16 with vector + scalar pieces.
    seq = ["split_4", "down", "swap_down", "swap_down", "up", "up", "split_16", "down", "swap_down", "swap_down"]
    nest = Nest.untiled(matmul(37, 53, 19))
    for a in seq:
        nest = apply(nest, a)
    assert nest.describe() == "m:9r1 n:3r5 k:19 m:4 n:16 | m:37 n:53"
    avx2 = Target(lanes=8, acc_budget=12)
    assert register_scope(nest, avx2) == 2  # the k loop holds the 4 x 16 tile
    src = generate(nest, avx2)
    assert "acc7 " in src and "acc8 " not in src  # 4 rows x 2 vectors of 8 lanes
    assert register_scope(nest, Target(lanes=8, acc_budget=4)) == 4  # 4 x 16 is too big: only n:16
    assert backend.measure(nest)["ok"]


def test_batched_matmul_and_conv2d_schedules(backend):
    for op in (batched_matmul(3, 9, 17, 8), conv2d(5, 3, 7, 9, 3, 2)):
        nests = _random_schedules(op, 6, seed=1)
        for nest, res in zip(nests, backend.measure_many(nests), strict=True):
            assert res["ok"], (nest.describe(), res)
