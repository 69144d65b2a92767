"""The state vector on hand-worked nests."""

import numpy as np

from llmopt.loops.actions import apply_all
from llmopt.loops.features import loop_features, observation
from llmopt.loops.nest import Nest, matmul


def _hist(**bins):
    h = np.zeros(16)
    for b, v in bins.items():
        h[int(b[1:])] = v
    return h.tolist()


def test_untiled_matmul_features():
    # C[m, n] += A[m, k] * B[k, n], all 64: row strides are 64 = 2^6.
    f = loop_features(Nest.untiled(matmul(64, 64, 64)))
    assert f.shape == (10, 20)
    assert f[0].tolist() == [1, 64, 0, 1] + _hist(b6=1.0)  # m: T 64, A 64, B -
    assert f[1].tolist() == [0, 64, 0, 1] + _hist(b0=1.0)  # n: T 1, B 1, A -
    assert f[2].tolist() == [0, 64, 0, 1] + _hist(b0=0.5, b6=0.5)  # k: A 1, B 64, T -
    assert f[3].tolist() == [0, 64, 0, 0] + _hist(b6=1.0)  # write-back m: T 64, C 64
    assert f[4].tolist() == [0, 64, 0, 0] + _hist(b0=1.0)  # write-back n: T 1, C 1
    assert not f[5:].any()


def test_split_loop_strides_scale_with_step():
    # 100 x 48 x 32; cursor down to n, split_16: n:3 (step 16), n:16 (step 1); then k split by 8.
    nest = apply_all(Nest.untiled(matmul(100, 48, 32)), ["down", "split_16", "down", "down", "split_8"])
    f = loop_features(nest)
    assert [row[:4] for row in f[:5].tolist()] == [
        [0, 100, 0, 1], [0, 3, 0, 1], [0, 16, 0, 1], [1, 4, 0, 1], [0, 8, 0, 1]]
    assert f[1, 4:].tolist() == _hist(b4=1.0)  # n step 16: T 16, B 16
    assert f[3, 4:].tolist() == _hist(b3=0.5, b8=0.5)  # k step 8: A 8, B 8 * 48 = 384 -> bin 8
    assert f[0, 4:].tolist() == _hist(b5=1.0)  # m: T 48, A 32 -> bins 5 and 5


def test_tail_feature_and_observation_range():
    nest = apply_all(Nest.untiled(matmul(100, 64, 64)), ["split_16"])
    f = loop_features(nest)
    assert f[0, :3].tolist() == [1, 6, 4]
    obs = observation(nest)
    assert obs.shape == (200,) and obs.dtype == np.float32
    assert 0 <= obs.min() and obs.max() <= 1
