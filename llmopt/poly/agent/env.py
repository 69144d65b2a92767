"""Gymnasium environment for Pearl: schedule one affine program per episode with the 56 actions.

Episode: one program (drawn from `programs`, a list or a function of the env's random generator,
or given as `reset(options={"program": prog})`), the agent on its first branch.  Each step is one
of `llmopt.poly.actions.ACTIONS`; "Next" moves to the next branch and ends the episode on the last
one; `max_steps` truncates an episode that never gets there.

Observation: the state graph, a `torch_geometric.data.Data` from `llmopt.poly.agent.state.graph`
(`observation_space` is a `gymnasium.spaces.Graph` that documents its feature sizes; graphs are
handed over as Data because that is what the GNN batches).  `info["action_mask"]` and
`action_masks()` say which actions are applicable and legal (exact isl checks, memoized by
`Legality`); the policy never samples a masked one.

Reward (Pearl §4.3, paper 003 §2.2.4): log4 of the step speedup, previous time / new time, so an
episode's return is log4 of the final speedup over the original program.  "Next" earns
`next_reward` (0 by default: the return stays exactly log4 of the final speedup; paper 003 uses
log4(0.9) to discourage branch switching).  A masked action, or a schedule whose measurement
fails (wrong result, crash, timeout), earns log4(`failed_speedup`) = log4(0.9) and is not
applied, as in paper 003.

Speedups come from `reward` (`llmopt.poly.agent.reward`): "measured" (the default) times every
schedule with `Measurer.measure`, memoized in the result cache (for training, `cheap_measurer(repeats=3)`
gives a faster, noisier reward than the 30 runs of a benchmark); "costmodel" asks the learned cost
model (`cost_model`: its file, default the shipped one), milliseconds instead of a compile and runs,
and the return is log4 of the *predicted* final speedup; any object with a `speedup(prog, schedule)`
method (a `Rewarder`) works too.  Whatever the reward, legality masking is exact (isl, memoized by
the measurer's `Legality`), and a costmodel env compiles nothing: its step cost is then the mask's
isl checks (tenths of a second on a program the cache has not seen, nothing once it has).
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from llmopt.harness.cache import ResultCache
from llmopt.poly.actions import ACTIONS, NEXT
from llmopt.poly.agent.reward import Rewarder, rewarder
from llmopt.poly.agent.state import EDGE_FEATURES, NODE_FEATURES, graph
from llmopt.poly.agent.walk import Position, advance, legal_mask, start
from llmopt.poly.measure import Measurer
from llmopt.poly.program import Program, ProgramError

ProgramSource = Sequence[Program] | Callable[[np.random.Generator], Program]
MAX_STEPS = 24
MAX_DRAWS = 20  # programs drawn at reset before giving up on the generator
FAILED_SPEEDUP = 0.9
log = logging.getLogger(__name__)


def cheap_measurer(cache: ResultCache | None = None, repeats: int = 3, timeout: float = 30.0) -> Measurer:
    """A Measurer for training rewards: few timed runs (Pearl trains on cheap, memoized times)."""
    return Measurer(cache, repeats=repeats, timeout=timeout)


def log4(x: float) -> float:
    return math.log(x, 4)


class PearlEnv(gym.Env):
    """One program per episode; see the module docstring for observation, actions and reward."""

    metadata = {"render_modes": ["ansi"]}

    def __init__(self, programs: ProgramSource, measurer: Measurer | None = None, max_steps: int = MAX_STEPS,
                 next_reward: float = 0.0, failed_speedup: float = FAILED_SPEEDUP, render_mode: str | None = None,
                 reward: str | Rewarder = "measured", cost_model: str | os.PathLike | None = None):
        self.programs = programs
        self._measurer = measurer
        self._reward, self.cost_model = reward, cost_model
        self.max_steps, self.next_reward, self.failed_speedup = max_steps, next_reward, failed_speedup
        self.render_mode = render_mode
        self.observation_space = gym.spaces.Graph(
            node_space=gym.spaces.Box(-np.inf, np.inf, (NODE_FEATURES,), np.float32),
            edge_space=gym.spaces.Box(-np.inf, np.inf, (EDGE_FEATURES,), np.float32))
        self.action_space = gym.spaces.Discrete(len(ACTIONS))
        self.program: Program | None = None
        self.pos: Position = start()
        self.mask = np.ones(len(ACTIONS), bool)
        self.speedup = 0.0  # of the current schedule over the program as written, by the rewarder
        self.steps = 0
        self.episode_return = 0.0

    @property
    def measurer(self) -> Measurer:
        if self._measurer is None:
            self._measurer = cheap_measurer()
        return self._measurer

    @property
    def rewarder(self) -> Rewarder:
        if isinstance(self._reward, str):  # built on first use, like the measurer it may need
            self._reward = rewarder(self._reward, self.measurer, self.cost_model)
        return self._reward

    def _draw(self) -> Program:
        if callable(self.programs):
            return self.programs(self.np_random)
        return self.programs[int(self.np_random.integers(len(self.programs)))]

    def _observe(self) -> tuple[Any, dict]:
        self.mask = np.array(legal_mask(self.measurer.legality(self.program), self.pos), bool)
        info = {"action_mask": self.mask, "schedule": self.pos.schedule, "speedup": self.speedup}
        return graph(self.program, self.pos), info

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        given = (options or {}).get("program")
        # A drawn program that cannot run as written (a generator corner case, a timeout under load) is
        # skipped, so one bad draw does not end a training run; a program the caller chose is an error.
        for _ in range(1 if given else MAX_DRAWS):
            self.program = given or self._draw()
            self.pos, self.steps, self.episode_return = start(), 0, 0.0
            try:
                base = self.rewarder.speedup(self.program, self.pos.schedule)
            except ProgramError as err:
                log.warning("skipping program %s: %s", self.program.name, err)
                base = None
            if base is not None:
                self.speedup = base
                return self._observe()
        raise ProgramError(f"program {self.program.name} cannot be measured as written")

    def step(self, action):
        action = int(action)
        self.steps += 1
        reward, done, error = self._apply(action)
        self.episode_return += reward
        truncated = not done and self.steps >= self.max_steps
        obs, info = self._observe()
        info["error"] = error
        return obs, reward, done, truncated, info

    def _apply(self, action: int) -> tuple[float, bool, str]:
        """(reward, terminated, error) of one action; moves `self.pos` when it succeeds."""
        if not self.mask[action]:
            return log4(self.failed_speedup), False, f"action {ACTIONS[action].name} is masked"
        new, done = advance(self.program, self.pos, action)
        if action == NEXT:
            self.pos = new
            return self.next_reward, done, ""
        speedup = self.rewarder.speedup(self.program, new.schedule)
        if speedup is None:
            return log4(self.failed_speedup), False, "measurement failed"
        reward = log4(speedup / self.speedup)
        self.pos, self.speedup = new, speedup
        return reward, False, ""

    def action_masks(self) -> np.ndarray:
        return self.mask

    def render(self):
        names = [t.to_dict() for t in self.pos.schedule.transforms]
        return f"{self.program.name} branch {self.pos.branch}: {names} speedup {self.speedup:.2f}x"
