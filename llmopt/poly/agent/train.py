"""Train Pearl's agent with PPO (paper 003 Table 4.2), optionally after actor-critic pre-training.

Everything lands in one run folder:

- `checkpoint.pt`: model, optimizer, update counter, config and random states, written atomically
  after every update, so a killed run resumes where it stopped (same command again);
- `log.csv`: one row per PPO update (mean episode return = mean log4 speedup, geometric-mean
  final speedup, losses, entropy, KL, entropy coefficient, measurement cache hit rate, minutes);
- `pretrain_samples.jsonl`, `pretrained.pt`: pre-training data and weights (`--pretrain`).

Training programs come from `llmopt.poly.generator.random_program` (imported lazily); until that
module exists, from the small benchmark programs (the issue forbids that for a real run, so the
log says so).  Rewards use `cheap_measurer` (`--repeats`, 3 by default) on the shared result
cache, so repeated schedules cost nothing across runs (Pearl §5.1).

What is scaled from the papers for a 2-core CPU: the amount of experience only.  Table 4.2 has
500 updates of 512 steps; the defaults here are 200 updates of 128 steps (`--updates`,
`--batch-size`), with every other PPO value as in the table.  Pearl pre-trains for 1,500 epochs
on 26,000 programs; here `--pretrain N` measures N programs (plus random walks) for 100 epochs.

A real run (hours; nice it on a shared machine), with pre-training on 200 generated programs:

    nice -n 19 python -m llmopt.poly.agent.train runs/pearl --programs 2000 --updates 200 \\
        --batch-size 128 --repeats 3 --pretrain 200 --minutes 600

The tiny smoke run of the issue (1-3 minutes on the small benchmarks):

    nice -n 19 python -m llmopt.poly.agent.train /tmp/pearl-smoke --small --updates 3 --batch-size 16 \\
        --minibatch 8 --max-steps 8 --repeats 1 --pretrain 3 --pretrain-epochs 20 --seed 1
"""

from __future__ import annotations

import argparse
import csv
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch

from llmopt.outputs import atomic_target
from llmopt.poly.agent.env import MAX_STEPS, PearlEnv, ProgramSource, cheap_measurer
from llmopt.poly.agent.model import ActorCritic
from llmopt.poly.agent.ppo import PPOConfig, collect, entropy_coef, update, value_of
from llmopt.poly.measure import Measurer

LOG_FIELDS = ["update", "steps", "episodes", "mean_return", "geomean_speedup", "policy_loss", "value_loss",
              "entropy", "approx_kl", "clip_frac", "entropy_coef", "hit_rate", "minutes"]


@dataclass
class TrainConfig:
    """Plain values; `main` overrides them from the command line."""

    ppo: PPOConfig = field(default_factory=lambda: PPOConfig(batch_size=128))
    updates: int = 200
    programs: int = 2000  # generated training programs (seeds seed*1_000_000 + k)
    small: bool = False  # generated programs at test size (fast, for smoke runs)
    max_steps: int = MAX_STEPS
    repeats: int = 3  # timed runs per reward measurement
    hidden: int = 64  # Table 3.2
    heads: int = 4
    minutes: float = 600.0  # wall-clock budget; stops after the update that crosses it
    seed: int = 0


def training_programs(cfg: TrainConfig, log=print) -> ProgramSource:
    """Generated programs, or the small benchmarks while `llmopt.poly.generator` does not exist."""
    try:
        from llmopt.poly.generator import random_program
    except ImportError:
        from llmopt.poly.benchmarks import benchmarks

        log("llmopt.poly.generator not found: training on the small benchmark programs (smoke runs only)")
        return list(benchmarks(small=True).values())
    base = cfg.seed * 1_000_000
    return lambda rng: random_program(base + int(rng.integers(cfg.programs)), small=cfg.small)


def save_checkpoint(path: Path, model: ActorCritic, optimizer, update_index: int, cfg: TrainConfig,
                    rng: np.random.Generator) -> None:
    """Write-then-rename, so a crash never leaves half a checkpoint."""
    with atomic_target(path) as tmp:
        torch.save({"model": model.state_dict(), "model_config": model.config,
                    "optimizer": optimizer.state_dict(), "update": update_index, "config": asdict(cfg),
                    "rng": rng.bit_generator.state, "torch_rng": torch.get_rng_state()}, tmp)


def load_checkpoint(path: str | Path) -> dict:
    return torch.load(path, map_location="cpu", weights_only=False)


def _setup(run_dir: Path, cfg: TrainConfig, init: Path | None, log):
    """Model, optimizer, first update index and rng: from the checkpoint when there is one."""
    model = ActorCritic(cfg.hidden, cfg.heads)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.ppo.lr, weight_decay=cfg.ppo.weight_decay)
    rng = np.random.default_rng(cfg.seed)
    ckpt_path = run_dir / "checkpoint.pt"
    if ckpt_path.exists():
        ckpt = load_checkpoint(ckpt_path)
        model.load_state_dict(ckpt["model"])
        opt.load_state_dict(ckpt["optimizer"])
        rng.bit_generator.state = ckpt["rng"]
        torch.set_rng_state(ckpt["torch_rng"])
        log(f"resuming {ckpt_path} after update {ckpt['update']}")
        return model, opt, ckpt["update"] + 1, rng
    if init is not None:
        missing = model.load_state_dict(torch.load(init, map_location="cpu"), strict=False)
        log(f"initialized from pre-trained {init} (fresh: {sorted({k.split('.')[0] for k in missing.missing_keys})})")
    return model, opt, 0, rng


def _log_row(path: Path, row: dict) -> None:
    new = not path.exists()
    with path.open("a", newline="") as f:
        writer = csv.DictWriter(f, LOG_FIELDS)
        if new:
            writer.writeheader()
        writer.writerow({k: (f"{v:.5g}" if isinstance(v, float) else v) for k, v in row.items()})


def train(run_dir: str | Path, cfg: TrainConfig | None = None, measurer: Measurer | None = None,
          programs: ProgramSource | None = None, init: str | Path | None = None, log=print) -> Path:
    """Train (or resume) the agent in `run_dir`; returns the checkpoint path."""
    cfg = cfg or TrainConfig()
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(1)
    torch.manual_seed(cfg.seed)
    model, opt, first, rng = _setup(run_dir, cfg, Path(init) if init else None, log)
    measurer = measurer or cheap_measurer(repeats=cfg.repeats)
    env = PearlEnv(programs if programs is not None else training_programs(cfg, log), measurer, cfg.max_steps)
    obs, info = env.reset(seed=cfg.seed + first)
    start, ckpt = time.time(), run_dir / "checkpoint.pt"
    for u in range(first, cfg.updates):
        if time.time() - start > cfg.minutes * 60:
            log(f"time budget of {cfg.minutes} minutes spent after update {u - 1}")
            break
        rollout, obs, info = collect(env, model, cfg.ppo.batch_size, obs, info)
        c2 = entropy_coef(cfg.ppo, u, cfg.updates)
        stats = update(model, opt, rollout, value_of(model, obs), cfg.ppo, c2, rng)
        row = {"update": u, "steps": (u + 1) * cfg.ppo.batch_size, "episodes": len(rollout.returns),
               "mean_return": float(np.mean(rollout.returns)) if rollout.returns else float("nan"),
               "geomean_speedup": float(np.exp(np.mean(np.log(np.maximum(rollout.speedups, 1e-9)))))
               if rollout.speedups else float("nan"),
               **stats, "entropy_coef": c2, "hit_rate": measurer.stats()["hit_rate"],
               "minutes": (time.time() - start) / 60}
        save_checkpoint(ckpt, model, opt, u, cfg, rng)
        _log_row(run_dir / "log.csv", row)  # after the checkpoint: the log never runs ahead of it
        log(" ".join(f"{k}={row[k]:.4g}" if isinstance(row[k], float) else f"{k}={row[k]}" for k in LOG_FIELDS))
    return ckpt


def run_pretraining(run_dir: Path, cfg: TrainConfig, n_programs: int, epochs: int, measurer: Measurer,
                    log=print) -> Path:
    """Collect (program, schedule, time) samples for `n_programs` programs, pre-train, save the weights."""
    from llmopt.poly.agent.pretrain import collect_samples, pretrain, pretrained_state

    source = training_programs(cfg, log)
    rng = np.random.default_rng(cfg.seed + 7)
    progs = source[:n_programs] if isinstance(source, list) else [source(rng) for _ in range(n_programs)]
    samples = collect_samples(progs, measurer, run_dir / "pretrain_samples.jsonl", seed=cfg.seed, log=log)
    torch.manual_seed(cfg.seed)
    model = ActorCritic(cfg.hidden, cfg.heads)
    losses = pretrain(model, samples, epochs=epochs, seed=cfg.seed, log=log)
    log(f"pre-training on {len(samples)} samples: mse {losses[0]:.4f} -> {losses[-1]:.4f}")
    out = run_dir / "pretrained.pt"
    torch.save(pretrained_state(model), out)
    return out


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m llmopt.poly.agent.train", description=__doc__.split("\n")[0])
    p.add_argument("run_dir")
    p.add_argument("--updates", type=int, default=200)
    p.add_argument("--batch-size", type=int, default=128, help="environment steps per PPO update")
    p.add_argument("--minibatch", type=int, default=64)
    p.add_argument("--programs", type=int, default=2000, help="generated training programs")
    p.add_argument("--small", action="store_true", help="small programs (smoke runs)")
    p.add_argument("--max-steps", type=int, default=MAX_STEPS)
    p.add_argument("--repeats", type=int, default=3, help="timed runs per reward measurement")
    p.add_argument("--pretrain", type=int, default=0, help="pre-train on this many programs first (Pearl 5.2)")
    p.add_argument("--pretrain-epochs", type=int, default=100)
    p.add_argument("--minutes", type=float, default=600.0)
    p.add_argument("--seed", type=int, default=0)
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    cfg = TrainConfig(ppo=PPOConfig(batch_size=args.batch_size, minibatch=args.minibatch), updates=args.updates,
                      programs=args.programs, small=args.small, max_steps=args.max_steps, repeats=args.repeats,
                      minutes=args.minutes, seed=args.seed)
    run_dir = Path(args.run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    measurer = cheap_measurer(repeats=cfg.repeats)
    init = None
    if args.pretrain and not (run_dir / "checkpoint.pt").exists():
        init = run_dir / "pretrained.pt"
        if not init.exists():
            init = run_pretraining(run_dir, cfg, args.pretrain, args.pretrain_epochs, measurer)
    train(run_dir, cfg, measurer, init=init)
    print(f"measurements: {measurer.stats()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
