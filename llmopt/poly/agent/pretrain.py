"""Actor-critic pre-training on execution-time prediction (Pearl §5.2).

Before PPO, the GNN layers, the shared layer and the value head are trained to predict how long a
program runs from its state graph; their weights then initialize the agent (the policy head starts
fresh).  Pearl uses 26,000 unoptimized programs, MSE, 1,500 epochs at learning rate 1e-4.  Here a
sample is (program, schedule, seconds): `collect_samples` measures the original program and the
schedules of a few random legal walks (the "(program, schedule, time)" data that Pearl names as
the better target), so the same file also teaches the network what transformations do.  The target
is log10(seconds), standardized over the sample set, because times span orders of magnitude.

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


def _dataset(samples: list[dict]) -> tuple[list, torch.Tensor]:
    """State graphs and standardized log10 times of the samples."""
    progs: dict[str, Program] = {}
    graphs, target = [], []
    for s in samples:
        prog = progs.setdefault(s["hash"], program_from_dict(s["program"]))
        graphs.append(graph(prog, Position(Schedule.from_list(s["schedule"]), 0)))
        target.append(math.log10(max(s["seconds"], 1e-9)))
    t = torch.tensor(target)
    return graphs, (t - t.mean()) / (t.std() + 1e-8) if len(t) > 1 else t - t.mean()


def pretrain(model: ActorCritic, samples: list[dict], epochs: int = 50, lr: float = 1e-4, minibatch: int = 64,
             seed: int = 0, log=print) -> list[float]:
    """Fit V(graph) to the standardized log time by MSE (Pearl §5.2); returns the loss per epoch.
    Only the pre-trained modules (backbone, shared, value) receive gradients."""
    graphs, target = _dataset(samples)
    params = [p for n, p in model.named_parameters() if n.startswith(PRETRAINED)]
    opt = torch.optim.Adam(params, lr=lr)
    rng = np.random.default_rng(seed)
    losses = []
    for epoch in range(epochs):
        order, total = rng.permutation(len(graphs)), 0.0
        for lo in range(0, len(order), minibatch):
            idx = order[lo: lo + minibatch]
            value = model.value(model.features(Batch.from_data_list([graphs[i] for i in idx]))).squeeze(-1)
            loss = torch.nn.functional.mse_loss(value, target[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
        losses.append(total / len(graphs))
        if log and (epoch % 10 == 0 or epoch == epochs - 1):
            log(f"pre-training epoch {epoch}: mse {losses[-1]:.4f}")
    return losses


def pretrained_state(model: ActorCritic) -> dict:
    """The pre-trained weights, as `train` loads them into a fresh agent."""
    return {k: v for k, v in model.state_dict().items() if k.startswith(PRETRAINED)}
