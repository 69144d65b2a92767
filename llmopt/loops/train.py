"""Train the LoopTune policy (sb3-contrib MaskablePPO on CPU); `llmopt.loops.policy` applies it.

Training is resumable: every chunk of steps saves `<run_dir>/policy.zip` (the model) and
`<run_dir>/progress.json`; a restarted run continues from there.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from llmopt.loops.env import LoopTuneEnv


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
