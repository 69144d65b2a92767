"""Train and apply the LoopTune policy (sb3-contrib MaskablePPO on CPU).

Training is resumable: every chunk of steps saves `<run_dir>/policy.zip` (the model) and
`<run_dir>/progress.json`; a restarted run continues from there.  Inference (`Policy.actions`)
needs no measurement: 10 forward passes choose 10 masked actions, which is why tuning is fast.
`Policy.candidates` expands the policy into its N most confident distinct schedules (Priority
Sampling, thesis ch. 6) for the caller to measure and keep the fastest.
"""

from __future__ import annotations

import heapq
import json
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from llmopt.loops import DEFAULT_POLICY
from llmopt.loops.actions import ACTIONS, action_mask, apply
from llmopt.loops.env import EPISODE_LENGTH, LoopTuneEnv
from llmopt.loops.features import observation
from llmopt.loops.nest import Nest


@dataclass
class TrainConfig:
    """Plain values; the CLI overrides them."""

    n_shapes: int = 64  # training shapes (a seeded subset of the 1,757 train shapes)
    total_steps: int = 30_000
    chunk_steps: int = 2_000  # save a checkpoint this often
    minutes: float = 35.0  # wall-clock budget; stops after the chunk that crosses it
    n_envs: int = 2
    learning_rate: float = 5e-4
    n_steps: int = 500  # per env per rollout
    batch_size: int = 250
    gamma: float = 1.0  # fixed 10-step episodes: the return is GFLOPS(final) - GFLOPS(start)
    ent_coef: float = 0.01
    hidden: int = 128
    seed: int = 0


def _make_env(shapes, rank: int, seed: int):
    def make():
        from stable_baselines3.common.monitor import Monitor

        from llmopt.loops.backend import Backend

        # Measurements stay in the result cache; the thousands of .so files need not.
        env = Monitor(LoopTuneEnv(shapes, backend=Backend(keep_objects=False)))
        env.reset(seed=seed + rank)
        return env

    return make


def train(run_dir: str | Path, cfg: TrainConfig | None = None, log=print) -> Path:
    """Train (or resume) a MaskablePPO policy; returns the path of the saved model."""
    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    from llmopt.loops.dataset import subset

    cfg = cfg or TrainConfig()
    torch.set_num_threads(1)
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    shapes = subset("train", cfg.n_shapes, seed=0)
    fns = [_make_env(shapes, r, cfg.seed) for r in range(cfg.n_envs)]
    venv = SubprocVecEnv(fns, start_method="spawn") if cfg.n_envs > 1 else DummyVecEnv(fns)
    model_path, progress_path = run_dir / "policy.zip", run_dir / "progress.json"
    progress = json.loads(progress_path.read_text()) if progress_path.exists() else {"steps": 0, "log": []}
    if model_path.exists():
        model = MaskablePPO.load(model_path, env=venv, device="cpu")
        log(f"resuming from {model_path} at {progress['steps']} steps")
    else:
        model = MaskablePPO("MlpPolicy", venv, learning_rate=cfg.learning_rate, n_steps=cfg.n_steps,
                            batch_size=cfg.batch_size, gamma=cfg.gamma, ent_coef=cfg.ent_coef, seed=cfg.seed,
                            policy_kwargs={"net_arch": [cfg.hidden, cfg.hidden]}, device="cpu", verbose=0)
    start = time.time()
    while progress["steps"] < cfg.total_steps and time.time() - start < cfg.minutes * 60:
        model.learn(cfg.chunk_steps, reset_num_timesteps=False)
        progress["steps"] = int(model.num_timesteps)
        rewards = [ep["r"] for ep in model.ep_info_buffer]
        entry = {"steps": progress["steps"], "mean_return": float(np.mean(rewards)) if rewards else 0.0,
                 "minutes": round((time.time() - start) / 60, 2)}
        progress["log"].append(entry)
        model.save(model_path)
        progress_path.write_text(json.dumps(progress, indent=1))  # after the model: resume is consistent
        log(json.dumps(entry))
    venv.close()
    return model_path


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

        policy = self.model.policy
        obs = torch.as_tensor(observation(nest)[None], dtype=torch.float32)
        with torch.no_grad():
            features = policy.extract_features(obs, policy.pi_features_extractor)
            logits = policy.action_net(policy.mlp_extractor.forward_actor(features))[0].numpy().astype(np.float64)
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
