"""Apply the trained LoopTune policy (`llmopt.loops.train` trains it).

Inference (`Policy.actions`) needs no measurement: 10 forward passes choose 10 masked actions,
which is why tuning is fast.  `Policy.candidates` expands the policy into its N most confident
distinct schedules (Priority Sampling, thesis ch. 6) for the caller to measure and keep the fastest.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from llmopt.loops import DEFAULT_POLICY
from llmopt.loops.actions import ACTIONS, action_mask, apply
from llmopt.loops.env import EPISODE_LENGTH
from llmopt.loops.features import observation
from llmopt.loops.nest import Nest


@dataclass
class Candidate:
    """One rollout of the policy: its final nest, the actions taken, their summed log-probability
    and the priority at which Priority Sampling branched it off (0.0 for the greedy rollout)."""

    nest: Nest
    actions: list[str]
    log_prob: float
    priority: float = 0.0


class Policy:
    """A trained policy applied with the action mask (no measurements): greedily (`actions`) or
    expanded into its most confident distinct schedules (`candidates`)."""

    def __init__(self, path: str | Path = DEFAULT_POLICY):
        import torch
        from sb3_contrib import MaskablePPO

        torch.set_num_threads(1)
        self.path = Path(path)
        if not self.path.exists():
            raise FileNotFoundError(f"no trained policy at {self.path}: train one with `llmopt loops train`")
        self.model = MaskablePPO.load(self.path, device="cpu")

    def actions(self, nest: Nest, length: int = EPISODE_LENGTH) -> tuple[Nest, list[str]]:
        """Roll the policy out for `length` actions; returns the final nest and the actions."""
        taken = []
        for _ in range(length):
            act, _ = self.model.predict(observation(nest), action_masks=action_mask(nest), deterministic=True)
            taken.append(ACTIONS[int(act)])
            nest = apply(nest, int(act))
        return nest, taken

    def log_probs(self, nest: Nest) -> np.ndarray:
        """Masked log-probabilities of ACTIONS in `nest` (-inf where unavailable). Shape: [7]."""
        import torch

        obs = torch.as_tensor(observation(nest)[None], dtype=torch.float32)
        with torch.no_grad():
            dist = self.model.policy.get_distribution(obs).distribution
            logits = dist.logits[0].numpy().astype(np.float64)
        mask = action_mask(nest)
        logits = np.where(mask, logits, -np.inf)
        return logits - np.logaddexp.reduce(logits[mask])

    def candidates(self, start: Nest, n: int, length: int = EPISODE_LENGTH,
                   max_rollouts: int | None = None) -> list[Candidate]:
        """Up to `n` rollouts with pairwise distinct final schedules, by Priority Sampling.

        The first is the greedy rollout (`actions`).  Every rollout pushes each action it did not
        take, at every step, onto a priority queue keyed by the log-probability of the prefix
        that ends in that action; the next rollout pops the most probable such prefix and
        completes it greedily.  A pushed prefix extends a popped one, so the priorities come out
        in non-increasing order, and no prefix is expanded twice.  Rollouts whose final schedule
        was already produced (e.g. they differ only in cursor moves) are dropped; at most
        `max_rollouts` (default 20 n) rollouts are made.  Costs one forward pass per new step.
        """
        max_rollouts = 20 * n if max_rollouts is None else max_rollouts
        memo: dict[tuple, np.ndarray] = {}

        def log_probs(nest: Nest) -> np.ndarray:
            state = (nest.schedule_key(), nest.cursor)
            if state not in memo:
                memo[state] = self.log_probs(nest)
            return memo[state]

        out: list[Candidate] = []
        seen: set[tuple] = set()
        # (-priority, tie-break, prefix actions, nest after the prefix, log-prob of the prefix)
        queue: list[tuple[float, int, list[str], Nest, float]] = [(-0.0, 0, [], start, 0.0)]
        pushed, rollouts = 1, 0
        while queue and len(out) < n and rollouts < max_rollouts:
            neg_priority, _, taken, nest, lp = heapq.heappop(queue)
            taken, rollouts = list(taken), rollouts + 1
            while len(taken) < length:
                logp = log_probs(nest)
                best = int(np.argmax(logp))
                for a in np.flatnonzero(np.isfinite(logp)):
                    if a != best:
                        heapq.heappush(queue, (-(lp + logp[a]), pushed, [*taken, ACTIONS[a]],
                                               apply(nest, int(a)), lp + float(logp[a])))
                        pushed += 1
                taken.append(ACTIONS[best])
                nest, lp = apply(nest, best), lp + float(logp[best])
            key = nest.schedule_key()
            if key not in seen:
                seen.add(key)
                out.append(Candidate(nest, taken, lp, -neg_priority))
        return out
