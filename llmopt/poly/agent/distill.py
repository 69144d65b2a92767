"""Distill an ensemble policy into one network: the ensemble's walks at one forward pass a step.

The shipped policy of the seventeenth session is three imitation runs whose mean log-probabilities
choose each action (`imitate --members 3`): better than any one of them, but three forwards a step, and
fdtd-2d took 127-137 ms of agent time against the issue's 100 ms.  Here a student `ActorCritic` of the
same size learns the ensemble's action distribution (soft-target cross-entropy, Hinton et al. 2015)
and its mean value on two kinds of states:

- the states the ensemble was trained on: the demonstrations of its data (`imitate.demonstrations`,
  every measured walk of every program);
- the states of the ensemble's own greedy walks (`AgentPolicy.greedy_steps`), on the data's programs
  and on `fresh` random programs the data never measured (generator seeds from `seed_base`, half
  with the default limits and half with the double-buffer limits of data/poly-greedy-db).  These are
  the states the student meets when it acts, and they cost legality checks only, no measurement, so
  the student can see many more programs than the teacher was trained on; `fresh_like` adds programs
  drawn as a given data folder draws its own (a small folder's pattern, seen in many more programs).

Programs are split into train and validation by hash (`imitate.split`).  What decides is
`walk_agreement`: the share of validation programs whose greedy walk ends on the teacher's schedule
(the same schedule is the same speedup; the walks share one legality checker per program).
`log.csv` has it per epoch beside the soft loss and the top-1 agreement on validation states; the
checkpoint is a plain one-network `AgentPolicy` file.  The benchmarks are never seen here.

    python -m llmopt.poly.agent.distill TEACHER.pt data/poly-greedy-db,data/poly-greedy --programs 335 --out RUN

(the defaults are the eighteenth session's student's recipe: 3,000 fresh programs, member 0's weights to
start from, T = 4, 16 epochs; docs/results/pearl/distill/.  The student shipped now adds
`--fresh-like data/poly-greedy-gemm:1000 --epochs 12`: docs/results/pearl/gemm-nest/)
"""

from __future__ import annotations

import argparse
import csv
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from torch_geometric.data import Batch

from llmopt.errors import LlmoptError, UsageError, run_main
from llmopt.outputs import atomic_target, write_atomic
from llmopt.poly.agent.imitate import (
    add_config_flags,
    config_from_flags,
    demonstrations,
    load_data,
    split,
)
from llmopt.poly.agent.model import ActorCritic
from llmopt.poly.agent.policy import AgentPolicy
from llmopt.poly.agent.state import graph
from llmopt.poly.costmodel.data import first_programs, folder_config, generator_limits
from llmopt.poly.generator import random_program
from llmopt.poly.legality import Legality
from llmopt.poly.program import Program, program_from_dict

DOUBLE_BUFFER_LIMITS = {"p_double_buffer": 1.0, "p_time": 0.7}  # data/poly-greedy-db/config.json


@dataclass
class DistillConfig:
    epochs: int = 16
    lr: float = 1e-3
    weight_decay: float = 1e-5
    minibatch: int = 64
    value_weight: float = 0.5  # of the value loss beside the soft cross-entropy
    validation: float = 0.1  # share of programs held out (walk agreement is measured on them)
    temperature: float = 0.05  # of the demonstrations whose states are used (imitate's; only which states, not targets)
    programs: int = 0  # use the first N programs of the data (0: all)
    fresh: int = 3000  # unlabelled random programs walked by the teacher
    seed_base: int = 300_000  # their generator seeds: seed_base, seed_base + 1, ... (no data folder uses them)
    fresh_like: str = ""  # FOLDER:N,...: N more fresh programs drawn with each folder's config.json limits
    seed: int = 0  # of the student's initialization and the minibatch order
    split_seed: int = 0
    init_member: int = 0  # start from this ensemble member's weights (-1: a fresh network)
    kd_temperature: float = 4.0  # both distributions at this temperature (Hinton's T): > 1 teaches the order of unlikely actions too


@dataclass
class State:
    graph: object
    program: str  # hash, for the split
    logp: torch.Tensor | None = None  # the teacher's action log-probabilities [56] (`teacher_targets`)
    value: torch.Tensor | None = None  # and its value


def fresh_programs(n: int, seed_base: int) -> list[Program]:
    """`n` random programs, even seeds with the default limits and odd ones with double buffers."""
    progs = []
    for seed in range(seed_base, seed_base + n):
        try:
            progs.append(random_program(seed, **(DOUBLE_BUFFER_LIMITS if seed % 2 else {})))
        except LlmoptError:
            continue  # a draw the generator refuses: skip the seed, as the data jobs do
    return progs


def fresh_like(spec: str, seed_base: int) -> list[Program]:
    """For each `FOLDER:N` of `spec`, N random programs drawn as that data folder draws its own (its
    `config.json` limits and iterations), seeds from `seed_base` on: the teacher's walks on programs
    like a small folder's, e.g. the gemm nests of data/poly-greedy-gemm, which the default draw rarely makes."""
    progs, start = [], seed_base
    for item in filter(None, spec.split(",")):
        folder, _, n = item.partition(":")
        if not n.isdigit():
            raise UsageError(f"--fresh-like {item!r}: expected FOLDER:N (a program count)")
        cfg = folder_config(folder)
        for seed in range(start, start + int(n)):
            try:
                progs.append(random_program(seed, cfg.small, **generator_limits(cfg)))
            except LlmoptError:
                continue  # a draw the generator refuses, as in fresh_programs
        start += int(n)
    return progs


def walk_states(teacher: AgentPolicy, prog: Program) -> list[State]:
    """The states of the teacher's greedy walk on `prog`."""
    steps = teacher.greedy_steps(prog, Legality(prog))
    return [State(graph(prog, pos), prog.hash()) for pos, _ in steps]


@torch.no_grad()
def teacher_targets(teacher: AgentPolicy, states: list[State], chunk: int = 256) -> None:
    """Set each state's `logp` and `value`: the teacher's (mean) log-probabilities, normalized, and its
    members' mean value."""
    for lo in range(0, len(states), chunk):
        part = states[lo: lo + chunk]
        batch = Batch.from_data_list([s.graph for s in part])
        logp = torch.log_softmax(teacher.logits(batch), -1)
        values = torch.stack([m(batch)[1] for m in teacher.models]).mean(0)
        for s, lp, v in zip(part, logp, values, strict=True):
            s.logp, s.value = lp, v


def _loss(student: ActorCritic, states: list[State], value_weight: float, temperature: float = 1.0) -> torch.Tensor:
    """Soft-target cross-entropy at `temperature` (times its square, so gradients keep their scale)
    plus `value_weight` times the value error."""
    logits, value = student(Batch.from_data_list([s.graph for s in states]))
    target = torch.softmax(torch.stack([s.logp for s in states]) / temperature, -1)
    soft_ce = -(target * torch.log_softmax(logits / temperature, -1)).sum(-1).mean() * temperature ** 2
    return soft_ce + value_weight * ((value - torch.stack([s.value for s in states])) ** 2).mean()


@torch.no_grad()
def _validate(student: ActorCritic, states: list[State], cfg: DistillConfig) -> tuple[float, float]:
    """(loss, share of states where the student's top action is the teacher's) on held-out states."""
    if not states:
        return float("nan"), float("nan")
    loss = _loss(student, states, cfg.value_weight, cfg.kd_temperature).item()
    logits = student(Batch.from_data_list([s.graph for s in states]))[0]
    top1 = (logits.argmax(1) == torch.stack([s.logp for s in states]).argmax(1)).float().mean()
    return loss, float(top1)


def walk_agreement(student: AgentPolicy, teacher: AgentPolicy, progs: list[Program]) -> float:
    """Share of `progs` where the student's greedy walk takes the teacher's actions, every one (so the
    agent measures the same schedules: the final one and each branch's)."""
    same = 0
    for prog in progs:
        legality = Legality(prog)
        walks = [[a for _, a in policy.greedy_steps(prog, legality)] for policy in (teacher, student)]
        same += walks[0] == walks[1]
    return same / max(len(progs), 1)


def gather_states(teacher: AgentPolicy, rows: list[dict], cfg: DistillConfig,
                  log) -> tuple[list[State], dict[str, Program], int]:
    """(states, {hash: program}, how many of the states are demonstrations): the data's demonstration
    states, then the teacher's walks on the data's programs and `cfg.fresh` random ones."""
    states: list[State] = []
    for h, steps in demonstrations(rows, cfg.temperature).items():
        states += [State(s.graph, h) for s in steps]
    n_demo = len(states)
    progs = {r["hash"]: program_from_dict(r["program"]) for r in rows}
    progs.update({p.hash(): p for p in fresh_programs(cfg.fresh, cfg.seed_base)})
    progs.update({p.hash(): p for p in fresh_like(cfg.fresh_like, cfg.seed_base + cfg.fresh)})
    for h, prog in list(progs.items()):
        try:
            states += walk_states(teacher, prog)
        except LlmoptError as err:  # a program isl cannot analyse: leave it out rather than stop the run
            log(f"left out {prog.name}: {err}")
            del progs[h]
    return states, progs, n_demo


def _train_epoch(student: ActorCritic, opt, sched, states: list[State], rng, cfg: DistillConfig) -> float:
    """One pass over `states` in random minibatches; returns the mean training loss."""
    student.train()
    order, total = rng.permutation(len(states)), 0.0
    for lo in range(0, len(order), cfg.minibatch):
        batch = [states[i] for i in order[lo: lo + cfg.minibatch]]
        loss = _loss(student, batch, cfg.value_weight, cfg.kd_temperature)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        total += loss.item() * len(batch)
    student.eval()
    return total / len(states)


def distill(teacher_path: str | Path, rows: list[dict], out: str | Path, cfg: DistillConfig | None = None,
            log=print) -> Path:
    """Train a one-network student of the policy at `teacher_path` into `out`; returns its checkpoint."""
    cfg, log = cfg or DistillConfig(), log or (lambda *_: None)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(1)
    torch.manual_seed(cfg.seed)
    t0 = time.time()
    teacher = AgentPolicy(teacher_path)
    states, progs, n_demo = gather_states(teacher, first_programs(rows, cfg.programs), cfg, log)
    train_p, val_p = split(list(progs), cfg.validation, cfg.split_seed)
    val_set = set(val_p)
    train_s = [s for s in states if s.program not in val_set]
    val_s = [s for s in states if s.program in val_set]
    if not train_s:
        raise UsageError("no states to distill on: the data and --fresh gave no programs")
    teacher_targets(teacher, states)
    log(f"{len(states)} states ({n_demo} of demonstrations, {len(states) - n_demo} of teacher walks) of "
        f"{len(progs)} programs; {len(val_p)} programs held out ({time.time() - t0:.0f} s to build)")
    student = ActorCritic(**teacher.models[0].config)
    if cfg.init_member >= 0:
        student.load_state_dict(teacher.models[cfg.init_member].state_dict())
    opt = torch.optim.Adam(student.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    # cosine decay to zero: the last epochs fine-tune the near ties that decide a greedy walk
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=cfg.epochs * -(-len(train_s) // cfg.minibatch))
    rng = np.random.default_rng(cfg.seed)
    val_progs = [progs[h] for h in val_p]
    write_atomic(out / "config.json", json.dumps({**asdict(cfg), "teacher": str(teacher_path)}, indent=1) + "\n")
    best = -1.0
    with (out / "log.csv").open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["epoch", "train_loss", "val_loss", "val_top1", "walk_agreement", "minutes"])
        for epoch in range(cfg.epochs):
            train = _train_epoch(student, opt, sched, train_s, rng, cfg)
            val, top1 = _validate(student, val_s, cfg)
            agree = walk_agreement(AgentPolicy.of([student]), teacher, val_progs)
            writer.writerow([epoch, f"{train:.5g}", f"{val:.5g}", f"{top1:.4g}", f"{agree:.4g}",
                             f"{(time.time() - t0) / 60:.3g}"])
            f.flush()
            log(f"epoch {epoch}: train {train:.4f} validation {val:.4f} top-1 {top1:.3f} walk agreement {agree:.3f}")
            if agree >= best:  # keep the epoch whose walks follow the teacher's most (ties: the later)
                best = agree
                _save(out / "checkpoint.pt", student, cfg, epoch, str(teacher_path), agree)
    return out / "checkpoint.pt"


def _save(path: Path, model: ActorCritic, cfg: DistillConfig, epoch: int, teacher: str, agree: float) -> None:
    with atomic_target(path) as tmp:
        torch.save({"model": model.state_dict(), "model_config": model.config, "config": asdict(cfg),
                    "source": "distillation", "teacher": teacher, "epoch": epoch, "walk_agreement": agree}, tmp)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m llmopt.poly.agent.distill", description=__doc__.split("\n")[0])
    p.add_argument("teacher", help="the policy file to distill (e.g. an `imitate --members N` checkpoint)")
    p.add_argument("data", help="the teacher's data folder(s), comma-separated (llmopt.poly.costmodel.data)")
    p.add_argument("--out", required=True, help="run folder: checkpoint.pt, log.csv, config.json")
    add_config_flags(p, DistillConfig)
    args = p.parse_args(argv)
    rows = load_data(args.data)
    print(f"policy: {distill(args.teacher, rows, args.out, config_from_flags(args, DistillConfig))}")
    return 0


if __name__ == "__main__":
    run_main(main)
