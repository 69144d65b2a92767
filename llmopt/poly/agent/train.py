"""Train Pearl's agent with PPO (paper 003 Table 4.2), optionally after actor-critic pre-training.

Everything lands in one run folder:

- `checkpoint.pt`: model, optimizer, update counter, config and random states, written atomically
  after every update, so a killed run resumes where it stopped (same command again);
- `log.csv`: one row per PPO update (mean episode return = mean log4 speedup, geometric-mean
  final speedup, losses, entropy, KL, entropy coefficient, measurement cache hit rate, minutes);
- `config.json`: the run's settings (reward, cost model, pre-training data, PPO values), also kept
  in the checkpoint; a resumed run must use the same reward and cost model;
- `pretrain_samples.jsonl`, `pretrained.pt`: pre-training data and weights (`--pretrain`).

Training programs come from `llmopt.poly.generator.random_program` (imported lazily); until that
module exists, from the small benchmark programs (the issue forbids that for a real run, so the
log says so).  Rewards (`--reward`, `llmopt.poly.agent.reward`): "measured" (default) uses
`cheap_measurer` (`--repeats`, 3 by default) on the shared result cache, so repeated schedules cost
nothing across runs (Pearl §5.1), about half a second per new schedule here; "costmodel" uses the
learned cost model's predicted speedups (`--cost-model`, default the shipped
`llmopt/poly/data/costmodel.pt`), milliseconds a step, and then `mean_return` and
`geomean_speedup` in the log are *predicted*: judge such a run by measuring its policy.

Pre-training (Pearl §5.2) fits (program, schedule, seconds) samples: `--pretrain N` measures N
programs (plus random walks) now; with `--pretrain-data DIR` it reads them from a cost-model data
folder (`llmopt.poly.costmodel.data`, whose rows carry exactly those fields) instead, the first N
programs of it (all with N = 0), and measures nothing.

What is scaled from the papers for a 2-core CPU: the amount of experience only.  Table 4.2 has
500 updates of 512 steps; the defaults here are 200 updates of 128 steps (`--updates`,
`--batch-size`), with every other PPO value as in the table.  Pearl pre-trains for 1,500 epochs
on 26,000 programs; here on N programs for 100 epochs (`--pretrain-epochs`).

A real run (hours; nice it on a shared machine), with pre-training on 200 generated programs:

    nice -n 19 python -m llmopt.poly.agent.train runs/pearl --programs 2000 --updates 200 \\
        --batch-size 128 --repeats 3 --pretrain 200 --minutes 600

The same with the cost model as reward proxy (minutes, not hours) and pre-training read from the
collected cost-model data (the measured run above is the comparison):

    nice -n 19 python -m llmopt.poly.agent.train runs/pearl-costmodel --programs 2000 --updates 200 \\
        --batch-size 128 --reward costmodel --pretrain 200 --pretrain-data runs/costmodel-data --minutes 600

The tiny smoke run of the issue (1-3 minutes on the small benchmarks):

    nice -n 19 python -m llmopt.poly.agent.train /tmp/pearl-smoke --small --updates 3 --batch-size 16 \\
        --minibatch 8 --max-steps 8 --repeats 1 --pretrain 3 --pretrain-epochs 20 --seed 1
"""

from __future__ import annotations

import argparse
import csv
import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch

from llmopt.errors import UsageError, run_main
from llmopt.outputs import atomic_target, write_atomic
from llmopt.poly.agent.env import MAX_STEPS, PearlEnv, ProgramSource, cheap_measurer
from llmopt.poly.agent.model import ActorCritic
from llmopt.poly.agent.ppo import PPOConfig, collect, entropy_coef, update, value_of
from llmopt.poly.agent.reward import REWARDS
from llmopt.poly.measure import Measurer

LOG_FIELDS = ["update", "steps", "episodes", "mean_return", "geomean_speedup", "policy_loss", "value_loss",
              "entropy", "approx_kl", "clip_frac", "kl_ref", "entropy_coef", "hit_rate", "minutes"]


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
    reward: str = "measured"  # or "costmodel" (llmopt.poly.agent.reward)
    cost_model: str | None = None  # the costmodel reward's model file (None: the shipped one)
    pretrain: int = 0  # pre-training programs (0 with pretrain_data: all of them)
    pretrain_epochs: int = 100
    pretrain_data: str | None = None  # a cost-model data folder to pre-train from instead of measuring
    init: str | None = None  # the policy whose weights PPO started from (`--init`), recorded for the run's config


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
        _check_resume(ckpt["config"], cfg)
        model.load_state_dict(ckpt["model"])
        opt.load_state_dict(ckpt["optimizer"])
        rng.bit_generator.state = ckpt["rng"]
        torch.set_rng_state(ckpt["torch_rng"])
        log(f"resuming {ckpt_path} after update {ckpt['update']}")
        return model, opt, ckpt["update"] + 1, rng
    if init is not None:
        missing = model.load_state_dict(policy_weights(init), strict=False)
        log(f"initialized from {init} (fresh: {sorted({k.split('.')[0] for k in missing.missing_keys})})")
    return model, opt, 0, rng


def policy_weights(path: str | Path) -> dict:
    """The weights of a policy file or training checkpoint (both keep them under "model")."""
    state = torch.load(path, map_location="cpu", weights_only=False)
    return state.get("model", state)


def reference_policy(cfg: TrainConfig) -> ActorCritic | None:
    """The frozen policy of `ppo.kl_ref` (the `--init` one, also when a run resumes); None when it is off."""
    if cfg.ppo.kl_ref <= 0:
        return None
    if not cfg.init:
        raise UsageError("--kl-ref keeps the policy near the one it started from: it needs --init POLICY")
    reference = ActorCritic(cfg.hidden, cfg.heads)
    reference.load_state_dict(policy_weights(cfg.init), strict=False)
    return reference.eval().requires_grad_(False)


def _check_resume(saved: dict, cfg: TrainConfig) -> None:
    """One run, one reward: a curve that switches reward half-way compares with nothing."""
    old = (saved.get("reward", "measured"), saved.get("cost_model"))
    if old != (cfg.reward, cfg.cost_model):
        raise UsageError(f"the run was started with reward {old[0]} (cost model {old[1]}); resume it with the "
                         f"same --reward and --cost-model, or start a new run folder")


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
    reference = reference_policy(cfg)
    write_atomic(run_dir / "config.json", json.dumps(asdict(cfg), indent=1) + "\n")
    model_file = cfg.cost_model or "the shipped cost model"
    log(f"reward: {cfg.reward}" + (f" ({model_file})" if cfg.reward == "costmodel" else ""))
    measurer = measurer or cheap_measurer(repeats=cfg.repeats)
    env = PearlEnv(programs if programs is not None else training_programs(cfg, log), measurer, cfg.max_steps,
                   reward=cfg.reward, cost_model=cfg.cost_model)
    obs, info = env.reset(seed=cfg.seed + first)
    start, ckpt = time.time(), run_dir / "checkpoint.pt"
    for u in range(first, cfg.updates):
        if time.time() - start > cfg.minutes * 60:
            log(f"time budget of {cfg.minutes} minutes spent after update {u - 1}")
            break
        rollout, obs, info = collect(env, model, cfg.ppo.batch_size, obs, info)
        c2 = entropy_coef(cfg.ppo, u, cfg.updates)
        stats = update(model, opt, rollout, value_of(model, obs), cfg.ppo, c2, rng, reference)
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


def pretraining_samples(run_dir: Path, cfg: TrainConfig, measurer: Measurer, log=print) -> list[dict]:
    """(program, schedule, seconds) samples: the first `cfg.pretrain` programs of `cfg.pretrain_data`
    (all with 0), or `cfg.pretrain` training programs measured now (resumable JSON lines in run_dir)."""
    if cfg.pretrain_data:
        from llmopt.poly.costmodel.data import first_programs, load_rows

        rows = first_programs(load_rows(cfg.pretrain_data), cfg.pretrain)
        programs = len({r["hash"] for r in rows})
        log(f"pre-training data: {len(rows)} rows of {programs} programs from {cfg.pretrain_data}")
        return rows
    from llmopt.poly.agent.pretrain import collect_samples

    source = training_programs(cfg, log)
    rng = np.random.default_rng(cfg.seed + 7)
    n = cfg.pretrain
    progs = source[:n] if isinstance(source, list) else [source(rng) for _ in range(n)]
    return collect_samples(progs, measurer, run_dir / "pretrain_samples.jsonl", seed=cfg.seed, log=log)


def run_pretraining(run_dir: Path, cfg: TrainConfig, measurer: Measurer, log=print) -> Path:
    """Pre-train on `pretraining_samples` for `cfg.pretrain_epochs` epochs, save the weights."""
    from llmopt.poly.agent.pretrain import pretrain, pretrained_state

    samples = pretraining_samples(run_dir, cfg, measurer, log)
    torch.manual_seed(cfg.seed)
    model = ActorCritic(cfg.hidden, cfg.heads)
    losses = pretrain(model, samples, epochs=cfg.pretrain_epochs, seed=cfg.seed, log=log)
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
    p.add_argument("--entropy-start", type=float, default=PPOConfig.entropy_start,
                   help="entropy bonus at the first update, decaying linearly to 0 (Table 4.2: 0.5, for a policy "
                        "learning from scratch; a policy started with --init keeps what it knows with ~0.01)")
    p.add_argument("--kl-ref", type=float, default=0.0,
                   help="+ this x KL(--init policy || policy) in the PPO loss: a fine-tune keeps what the policy "
                        "it started from knows unless the reward pays for leaving it (0: off)")
    p.add_argument("--programs", type=int, default=2000, help="generated training programs")
    p.add_argument("--small", action="store_true", help="small programs (smoke runs)")
    p.add_argument("--max-steps", type=int, default=MAX_STEPS)
    p.add_argument("--repeats", type=int, default=3, help="timed runs per reward measurement")
    p.add_argument("--reward", choices=REWARDS, default="measured",
                   help="step speedups measured by execution, or predicted by the cost model (a cheap proxy)")
    p.add_argument("--cost-model", metavar="PATH",
                   help="cost model file of --reward costmodel (default: the shipped one)")
    p.add_argument("--pretrain", type=int, default=0, help="pre-train on this many programs first (Pearl 5.2)")
    p.add_argument("--pretrain-data", metavar="DIR",
                   help="pre-train on this cost-model data folder (its first --pretrain programs, 0 = all) "
                        "instead of measuring samples")
    p.add_argument("--pretrain-epochs", type=int, default=100)
    p.add_argument("--init", metavar="POLICY",
                   help="start PPO from this policy's weights (a policy file such as llmopt/poly/data/agent.pt, or a "
                        "training checkpoint) instead of pre-training or random weights")
    p.add_argument("--minutes", type=float, default=600.0)
    p.add_argument("--seed", type=int, default=0)
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    cfg = TrainConfig(ppo=PPOConfig(batch_size=args.batch_size, minibatch=args.minibatch,
                                    entropy_start=args.entropy_start, kl_ref=args.kl_ref), updates=args.updates,
                      programs=args.programs, small=args.small, max_steps=args.max_steps, repeats=args.repeats,
                      minutes=args.minutes, seed=args.seed, reward=args.reward, pretrain=args.pretrain,
                      pretrain_epochs=args.pretrain_epochs, pretrain_data=args.pretrain_data, init=args.init)
    if args.init and (cfg.pretrain or cfg.pretrain_data):
        raise UsageError("--init starts from a policy's weights, --pretrain/--pretrain-data from pre-training: choose one")
    if args.cost_model and cfg.reward != "costmodel":
        raise UsageError("--cost-model is the model of --reward costmodel; add that option or drop this one")
    if cfg.reward == "costmodel":
        from llmopt.poly.costmodel.search import DEFAULT_MODEL, cached_model

        cfg.cost_model = str(Path(args.cost_model or DEFAULT_MODEL).resolve())
        cached_model(cfg.cost_model)  # a missing model fails now, not after pre-training (loaded once)
    run_dir = Path(args.run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    measurer = cheap_measurer(repeats=cfg.repeats)
    init = Path(cfg.init) if cfg.init else None
    if (cfg.pretrain or cfg.pretrain_data) and not (run_dir / "checkpoint.pt").exists():
        init = run_dir / "pretrained.pt"
        if not init.exists():
            init = run_pretraining(run_dir, cfg, measurer)
    train(run_dir, cfg, measurer, init=init)
    print(f"measurements: {measurer.stats()}")
    return 0


if __name__ == "__main__":
    run_main(main)
