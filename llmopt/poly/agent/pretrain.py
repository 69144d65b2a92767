"""Actor-critic pre-training on execution-time prediction (Pearl §5.2).

Before PPO, the GNN layers, the shared layer and the value head are trained to predict how long a
program runs from its state graph; their weights then initialize the agent (the policy head starts
fresh).  Pearl uses 26,000 unoptimized programs, MSE, 1,500 epochs at learning rate 1e-4.  Here a
sample is (program, schedule, seconds): `collect_samples` measures the original program and the
schedules of a few random legal walks (the "(program, schedule, time)" data that Pearl names as
the better target), so the same file also teaches the network what transformations do.  The target
is log10(seconds), standardized over the sample set, because times span orders of magnitude.

`target="speedup"` fits log4(speedup over the original program) instead, the scale of the value
head's targets in imitation (`llmopt.poly.agent.imitate`, whose `--init` takes these weights): a
program's size says most of its time and nothing about which transformation helps, while every
row of the cost-model folders (~45,000 measured schedules) says what a schedule did to its program.
`python -m llmopt.poly.agent.pretrain DATA --target speedup --out FILE` holds out the programs
imitation validates on (same split), so they stay unseen by both; `--critic-of POLICY --policy-out
FILE` also writes POLICY with these weights as its critic (`llmopt.poly.agent.policy`, the guided walk).

Samples are JSON lines (`program` as its dict, `schedule` as `Schedule.to_list()`, `seconds`):
`collect_samples` appends to its file and skips programs already in it, so an interrupted
collection resumes; every time goes through the `Measurer` cache as well.  The rows of a cost-model
data folder (`llmopt.poly.costmodel.data.load_rows`) carry the same fields, so `train --pretrain-data`
pre-trains on them without measuring anything.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import torch
from torch_geometric.data import Batch

from llmopt.errors import run_main
from llmopt.poly.actions import NEXT
from llmopt.poly.agent.model import ActorCritic
from llmopt.poly.agent.state import graph
from llmopt.poly.agent.walk import Position, advance, legal_mask, start
from llmopt.poly.measure import Measurer
from llmopt.poly.program import Program, program_from_dict
from llmopt.poly.schedule import Schedule

PRETRAINED = ("backbone.", "shared.", "value.")  # the modules §5.2 pre-trains


def random_walk(prog: Program, measurer: Measurer, steps: int, rng: np.random.Generator) -> list[Schedule]:
    """The schedules met on one random walk of legal transformations (Next taken with prob. 1/4)."""
    pos, out = start(), []
    for _ in range(steps):
        mask = legal_mask(measurer.legality(prog), pos)
        choices = [a for a, ok in enumerate(mask) if ok and a != NEXT]
        if not choices or rng.random() < 0.25:
            pos, done = advance(prog, pos, NEXT)
            if done:
                break
            continue
        pos, _ = advance(prog, pos, int(rng.choice(choices)))
        out.append(pos.schedule)
    return out


def collect_samples(programs: Iterable[Program], measurer: Measurer, path: str | Path, walks: int = 2,
                    steps: int = 6, seed: int = 0, log=print) -> list[dict]:
    """Measure each program as written plus the schedules of `walks` random walks; append the
    samples to `path` (JSON lines) and return every sample in the file."""
    path = Path(path)
    done = {json.loads(line)["hash"] for line in path.read_text().splitlines()} if path.exists() else set()
    rng = np.random.default_rng(seed)
    with path.open("a") as out:
        for prog in programs:
            if prog.hash() in done:
                continue
            schedules = [Schedule()] + [s for _ in range(walks) for s in random_walk(prog, measurer, steps, rng)]
            for sched in dict.fromkeys(schedules):
                got = measurer.measure(prog, sched)
                if got.get("ok"):
                    out.write(json.dumps({"hash": prog.hash(), "program": prog.to_dict(), "schedule": sched.to_list(),
                                          "seconds": got["seconds"]}) + "\n")
            out.flush()
            log(f"pre-training samples: {prog.name} done")
    return load_samples(path)


def load_samples(path: str | Path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


TARGETS = ("time", "speedup")


def _dataset(samples: list[dict], target: str = "time") -> tuple[list, torch.Tensor]:
    """State graphs and their targets: standardized log10 times, or log4 speedups (module docstring)."""
    if target not in TARGETS:
        raise ValueError(f"target must be one of {TARGETS}, not {target!r}")
    progs: dict[str, Program] = {}
    graphs, values = [], []
    for s in samples:
        prog = progs.setdefault(s["hash"], program_from_dict(s["program"]))
        graphs.append(graph(prog, Position(Schedule.from_list(s["schedule"]), 0)))
        values.append(math.log10(max(s["seconds"], 1e-9)) if target == "time" else
                      math.log(max(s["speedup"], 1e-9), 4))
    t = torch.tensor(values)
    if target == "speedup":
        return graphs, t
    return graphs, (t - t.mean()) / (t.std() + 1e-8) if len(t) > 1 else t - t.mean()


@torch.no_grad()
def value_error(model: ActorCritic, graphs: list, target: torch.Tensor, minibatch: int = 256) -> float:
    """Mean squared error of the value head on (graphs, target)."""
    model.eval()
    total = 0.0
    for lo in range(0, len(graphs), minibatch):
        value = model.value(model.features(Batch.from_data_list(graphs[lo: lo + minibatch]))).squeeze(-1)
        total += float(((value - target[lo: lo + minibatch]) ** 2).sum())
    model.train()
    return total / max(len(graphs), 1)


def pretrain(model: ActorCritic, samples: list[dict], epochs: int = 50, lr: float = 1e-4, minibatch: int = 64,
             seed: int = 0, log=print, target: str = "time", held_out: list[dict] | None = None) -> list[float]:
    """Fit V(graph) to `target` by MSE (Pearl §5.2); returns the loss per epoch (logged with the
    error on `held_out` samples when given).  Only the pre-trained modules (backbone, shared,
    value) receive gradients."""
    graphs, target_t = _dataset(samples, target)
    held = _dataset(held_out, target) if held_out else None
    params = [p for n, p in model.named_parameters() if n.startswith(PRETRAINED)]
    opt = torch.optim.Adam(params, lr=lr)
    rng = np.random.default_rng(seed)
    losses = []
    for epoch in range(epochs):
        order, total = rng.permutation(len(graphs)), 0.0
        for lo in range(0, len(order), minibatch):
            idx = order[lo: lo + minibatch]
            value = model.value(model.features(Batch.from_data_list([graphs[i] for i in idx]))).squeeze(-1)
            loss = torch.nn.functional.mse_loss(value, target_t[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
        losses.append(total / len(graphs))
        if log and (held or epoch % 10 == 0 or epoch == epochs - 1):
            extra = f", held out {value_error(model, *held):.4f}" if held else ""
            log(f"pre-training epoch {epoch}: mse {losses[-1]:.4f}{extra}")
    return losses


def pretrained_state(model: ActorCritic) -> dict:
    """The pre-trained weights, as `train` loads them into a fresh agent."""
    return {k: v for k, v in model.state_dict().items() if k.startswith(PRETRAINED)}


def main(argv: list[str] | None = None) -> int:
    """Pre-train on cost-model rows; writes the pre-trained weights (`imitate --init`, `train --init`)."""
    import argparse

    from llmopt.poly.agent.imitate import load_data, split

    p = argparse.ArgumentParser(prog="python -m llmopt.poly.agent.pretrain", description=main.__doc__)
    p.add_argument("data", help="cost-model data folder(s), comma-separated, FOLDER:N for the first N programs")
    p.add_argument("--out", required=True, help="file of the pre-trained weights")
    p.add_argument("--target", choices=TARGETS, default="speedup")
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--validation", type=float, default=0.1, help="share of programs held out (imitation's split)")
    p.add_argument("--split-seed", type=int, default=0)
    p.add_argument("--critic-of", metavar="POLICY", help="also write POLICY with these weights as its critic "
                   "(a critic-guided walk, llmopt.poly.agent.policy) to --policy-out")
    p.add_argument("--policy-out", help="where --critic-of writes the guided policy")
    args = p.parse_args(argv)
    if bool(args.critic_of) != bool(args.policy_out):
        p.error("--critic-of and --policy-out go together")
    rows = load_data(args.data)
    _, val = split(sorted({r["hash"] for r in rows}), args.validation, args.split_seed)
    held = set(val)
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    model = ActorCritic()
    pretrain(model, [r for r in rows if r["hash"] not in held], epochs=args.epochs, lr=args.lr, seed=args.seed,
             target=args.target, held_out=[r for r in rows if r["hash"] in held])
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    torch.save(pretrained_state(model), out)
    print(f"pre-trained weights: {out}")
    if args.critic_of:
        from llmopt.poly.agent.policy import attach_critic

        print(f"guided policy: {attach_critic(args.critic_of, out, args.policy_out)}")
    return 0


if __name__ == "__main__":
    run_main(main)
