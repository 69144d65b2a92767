"""The gymnasium environment: API compliance, masks, zero-reward no-ops, fixed episode length."""

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from llmopt.loops.env import LoopTuneEnv  # importing it registers llmopt/LoopTune-v0


def test_check_env(backend):
    env = gym.make("llmopt/LoopTune-v0", shapes=[(16, 16, 16)], backend=backend)
    check_env(env.unwrapped, skip_render_check=True)


def test_episode_mask_and_rewards(backend):
    env = LoopTuneEnv([(16, 32, 16)], backend=backend)
    obs, info = env.reset(seed=0)
    assert obs.shape == (200,) and info["action_mask"].tolist() == [False, True, False, True, True, True, True]
    obs2, reward, terminated, truncated, info = env.step(0)  # "up" on the first loop: unavailable
    assert reward == 0.0 and np.array_equal(obs, obs2) and not terminated
    _, reward, *_ = env.step(1)  # cursor move: schedule unchanged, no reward
    assert reward == 0.0
    total, g0 = 0.0, env.gflops
    for i in range(8):
        _, reward, terminated, truncated, info = env.step(6 if i % 2 else 3)
        total += reward
        assert terminated == (i == 7) and not truncated
    # The return telescopes to (GFLOPS(final) - GFLOPS(start)) / peak.
    assert total == pytest.approx((env.gflops - g0) / backend.peak_gflops(), abs=1e-9)
    assert np.array_equal(info["action_mask"], env.action_masks())
