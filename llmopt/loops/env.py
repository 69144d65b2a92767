"""Gymnasium environment `llmopt/LoopTune-v0`: schedule a matmul nest in 10 LoopTune actions.

Observation: `features.observation` (200 floats in [0, 1]).  Action: Discrete(7) over
`actions.ACTIONS`.  Reward: (GFLOPS(new) - GFLOPS(old)) / peak GFLOPS, 0 for cursor moves and
unavailable actions (which leave the nest unchanged).  An episode is 10 actions from the untiled
nest with the cursor on the first loop.  `info["action_mask"]` and `action_masks()` give the
available actions (sb3-contrib's MaskablePPO reads the latter).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from llmopt.loops import ENV_ID
from llmopt.loops.actions import ACTIONS, MAX_LOOPS, action_mask, apply
from llmopt.loops.backend import Backend
from llmopt.loops.features import N_FEATURES, observation
from llmopt.loops.nest import Nest, matmul

EPISODE_LENGTH = 10


class LoopTuneEnv(gym.Env):
    """One nest per episode, drawn from `shapes` (M, N, K) with the env's seeded generator,
    or given as `reset(options={"shape": (M, N, K)})`."""

    metadata = {"render_modes": ["ansi"], "render_fps": 4}

    def __init__(self, shapes: list[tuple[int, int, int]] | None = None, backend: Backend | None = None,
                 episode_length: int = EPISODE_LENGTH, render_mode: str | None = None):
        self.shapes = list(shapes) if shapes else [(64, 64, 64)]
        self._backend = backend
        self._owns_backend = backend is None
        self.episode_length = episode_length
        self.render_mode = render_mode
        self.observation_space = gym.spaces.Box(0.0, 1.0, (MAX_LOOPS * N_FEATURES,), np.float32)
        self.action_space = gym.spaces.Discrete(len(ACTIONS))
        self.nest: Nest | None = None
        self.gflops = 0.0
        self.steps = 0

    @property
    def backend(self) -> Backend:
        if self._backend is None:
            self._backend = Backend()
        return self._backend

    def _info(self) -> dict[str, Any]:
        return {"action_mask": action_mask(self.nest), "gflops": self.gflops, "schedule": self.nest.describe()}

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        shape = (options or {}).get("shape")
        if shape is None:
            shape = self.shapes[int(self.np_random.integers(len(self.shapes)))]
        self.nest = Nest.untiled(matmul(*shape))
        self.gflops = self.backend.gflops(self.nest)
        self.steps = 0
        return observation(self.nest), self._info()

    def step(self, action):
        new = apply(self.nest, int(action))
        reward = 0.0
        if new.schedule_key() != self.nest.schedule_key():
            g = self.backend.gflops(new)
            reward = (g - self.gflops) / self.backend.peak_gflops()
            self.gflops = g
        self.nest = new
        self.steps += 1
        terminated = self.steps >= self.episode_length
        return observation(self.nest), float(reward), terminated, False, self._info()

    def action_masks(self) -> np.ndarray:
        return action_mask(self.nest)

    def render(self):
        return f"{self.nest.describe()}  cursor={self.nest.cursor}  {self.gflops:.2f} GFLOPS"

    def close(self):
        if self._owns_backend and self._backend is not None:
            self._backend.close()


if ENV_ID not in gym.registry:
    gym.register(id=ENV_ID, entry_point="llmopt.loops.env:LoopTuneEnv")
