"""Teach the agent's policy from measured schedules: advantage-weighted imitation of the cost-model data.

PPO from scratch learns nothing in the experience a 2-core machine affords (docs/results/pearl/training:
89 updates with the cost-model reward left the policy uniform; with pre-training it collapsed onto
the identity schedule).  But the cost-model data (`llmopt.poly.costmodel.data`) already holds 32
measured legal walks of every random program, and its best walks are the kind of label the LLM
path learns from (best found by search, verified by execution).  This module clones them, weighted
by how good they were (advantage-weighted regression, Peng et al. 2019, with the program's walks as
the batch):

- every walk of a program is replayed into its (state, action) steps (`walk.walk_actions`: each
  transform on its branch, "Next" between branches and at the end);
- a walk's weight is the softmax over the program's walks of log4(speedup) / `temperature`, so the
  best walk dominates, a walk almost as fast still counts, and a program where nothing beats the
  identity by more than noise teaches "Next" (leave it alone) — which the benchmarks need too;
- the policy head and the layers under it minimize the weighted cross-entropy of the walks'
  actions (over all 56 logits: at run time `first_legal` skips the illegal ones in logit order);
  the value head learns the walk's final log4 speedup, so PPO can start from the result.

`targets="tree"` reads the same rows as a search tree instead (better for `--source greedy` data,
whose rows are the candidates a greedy search measured, each one action beyond its best so far):
every walk passes through positions (its action prefixes), and a position's value of an action is
the best speedup of any measured walk through it (a max backup over the tree).  Each position with
two or more measured actions teaches the softmax of those values / `temperature`: a greedy step
measured ~12 actions, so a program teaches which of them paid and by how much, not only the one
the search kept.  `targets="both"` trains on the union of the two.  With `targets="walks"` a near-best prefix of the search (the first branch done,
the rest not yet searched) taught "Next" on branches the search had not reached.

`augment=N` adds, for each program, up to N of its measured interchanges read as programs of their own
(`llmopt.poly.agent.augment`: the same measurements relabelled, so "undo this interchange" is taught
as often as "do not interchange").  Programs are split into train and validation by hash (a relabelled
program by its origin's); `log.csv` has the loss and the validation
top-1 agreement with the best walk per epoch.  The checkpoint is an `AgentPolicy` file (and a
`train --init` file for PPO on top).

    python -m llmopt.poly.agent.imitate data/poly-costmodel --out runs/pearl-imitate --epochs 40
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import hashlib
import json
import math
import time
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from torch_geometric.data import Batch

from llmopt.errors import UsageError, run_main
from llmopt.outputs import atomic_target, write_atomic
from llmopt.poly.agent.augment import augment
from llmopt.poly.agent.model import ActorCritic
from llmopt.poly.agent.state import graph
from llmopt.poly.agent.walk import advance, start, walk_actions
from llmopt.poly.costmodel.data import first_programs, load_folders
from llmopt.poly.program import program_from_dict
from llmopt.poly.schedule import Schedule

MIN_WEIGHT = 0.05  # walks below this share of their program's weight are left out (they teach little)


@dataclass
class ImitateConfig:
    temperature: float = 0.1  # of the per-program softmax over log4(speedup): 0.1 weighs 1.46x ~7x over 1.1x
    epochs: int = 40
    lr: float = 1e-3
    weight_decay: float = 1e-5
    minibatch: int = 64
    value_weight: float = 0.5  # of the value loss beside the policy's cross-entropy
    validation: float = 0.1  # share of programs held out
    hidden: int = 64
    heads: int = 4
    seed: int = 0  # of the initialization and the minibatch order
    split_seed: int = 0  # of the train/validation split (kept apart so seeds can be compared on one split)
    programs: int = 0  # use the first N programs of the data (0: all)
    min_gain: float = 1.0  # programs whose best walk is slower than this teach nothing (1.0: all teach)
    targets: str = "walks"  # "walks" (each measured walk, weighted), "tree" or "both" (module docstring)
    init: str = ""  # pre-trained backbone/shared/value weights (`python -m llmopt.poly.agent.pretrain`)
    augment: int = 0  # relabel up to N measured interchanges per program as programs of their own (`augment`)


@dataclass
class Step:
    graph: object
    action: int
    weight: float
    value: float  # the walk's final log4 speedup
    best: bool  # a step of its program's best walk


def walk_weights(speedups: list[float], temperature: float) -> np.ndarray:
    """Softmax of log4(speedup) / temperature over one program's walks."""
    z = np.log(np.maximum(np.asarray(speedups, float), 1e-9)) / math.log(4) / max(temperature, 1e-6)
    w = np.exp(z - z.max())
    return w / w.sum()


def teaching_programs(rows: list[dict], min_gain: float = 1.0) -> dict[str, list[dict]]:
    """{program hash: its rows} of the programs that teach: those whose best row reaches `min_gain`."""
    by_program: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by_program[r["hash"]].append(r)
    return {h: walks for h, walks in by_program.items() if max(w["speedup"] for w in walks) >= min_gain}


def demonstrations(rows: list[dict], temperature: float, min_gain: float = 1.0) -> dict[str, list[Step]]:
    """{program hash: its weighted (state, action) steps} from cost-model rows (module docstring)."""
    out: dict[str, list[Step]] = {}
    for h, walks in teaching_programs(rows, min_gain).items():
        prog = program_from_dict(walks[0]["program"])
        weights = walk_weights([w["speedup"] for w in walks], temperature)
        best = int(np.argmax([w["speedup"] for w in walks]))
        steps: list[Step] = []
        for k, (row, weight) in enumerate(zip(walks, weights, strict=True)):
            if weight < MIN_WEIGHT:
                continue
            actions = walk_actions(prog, Schedule.from_list(row["schedule"]))
            if actions is None:
                continue
            pos, value = start(), math.log(max(row["speedup"], 1e-9), 4)
            for a in actions:
                steps.append(Step(graph(prog, pos), a, float(weight), value, k == best))
                pos, _ = advance(prog, pos, a)
        out[h] = steps
    return out


def tree_demonstrations(rows: list[dict], temperature: float, min_gain: float = 1.0) -> dict[str, list[Step]]:
    """{program hash: its steps} from the rows read as a search tree (module docstring, `targets="tree"`).

    One Step per (position, measured action), weighted by the action's share of the position's
    softmax; a position where only one action was ever measured teaches nothing (no comparison)."""
    out: dict[str, list[Step]] = {}
    for h, walks in teaching_programs(rows, min_gain).items():
        prog = program_from_dict(walks[0]["program"])
        values: dict[tuple, dict[int, float]] = defaultdict(dict)  # action prefix -> {action: best speedup}
        for row in walks:
            actions = walk_actions(prog, Schedule.from_list(row["schedule"]))
            for i, a in enumerate(actions or []):
                q = values[tuple(actions[:i])]
                q[a] = max(q.get(a, 0.0), row["speedup"])
        steps: list[Step] = []
        for prefix, q in values.items():
            if len(q) < 2:
                continue
            pos = start()
            for a in prefix:
                pos, _ = advance(prog, pos, a)
            g, acts = graph(prog, pos), list(q)
            weights = walk_weights([q[a] for a in acts], temperature)
            best, value = acts[int(np.argmax(weights))], math.log(max(max(q.values()), 1e-9), 4)
            steps += [Step(g, a, float(w), value, a == best) for a, w in zip(acts, weights, strict=True)
                      if w >= MIN_WEIGHT]
        out[h] = steps
    return out


TARGETS = {"walks": (demonstrations,), "tree": (tree_demonstrations,), "both": (demonstrations, tree_demonstrations)}


def split(programs: list[str], validation: float, seed: int,
          family: dict[str, str] | None = None) -> tuple[list[str], list[str]]:
    """(train, validation) program hashes.  A program's side depends on its hash and `seed` alone, so
    it keeps its side as the data grows (a run on more data never validates on what an earlier run
    trained on); at least one program is held out when `validation` > 0 and there are two.
    `family` maps a relabelled program (`augment`) to its origin's hash, whose side it takes."""
    family = family or {}

    def unit(h: str) -> float:
        h = family.get(h, h)
        return int(hashlib.sha256(f"{seed}:{h}".encode()).hexdigest()[:12], 16) / 16 ** 12
    order = sorted(programs, key=unit)
    n_val = sum(unit(h) < validation for h in order)
    if validation > 0 and len(order) > 1:
        n_val = min(max(n_val, 1), len(order) - 1)
    return sorted(order[n_val:]), sorted(order[:n_val])


def _loss(model: ActorCritic, steps: list[Step], value_weight: float) -> torch.Tensor:
    """Weighted cross-entropy of the walks' actions plus `value_weight` times the value head's error."""
    logits, value = model(Batch.from_data_list([s.graph for s in steps]))
    w = torch.tensor([s.weight for s in steps])
    ce = torch.nn.functional.cross_entropy(logits, torch.tensor([s.action for s in steps]), reduction="none")
    mse = (value - torch.tensor([s.value for s in steps])) ** 2
    return (w * (ce + value_weight * mse)).sum() / w.sum()


@torch.no_grad()
def agreement(model: ActorCritic, steps: list[Step]) -> float:
    """Share of the best walks' steps where the policy's top action is the walk's."""
    best = [s for s in steps if s.best]
    if not best:
        return float("nan")
    logits, _ = model(Batch.from_data_list([s.graph for s in best]))
    return float((logits.argmax(1) == torch.tensor([s.action for s in best])).float().mean())


def imitate(rows: list[dict], out: str | Path, cfg: ImitateConfig | None = None, log=print) -> Path:
    """Train a policy on `rows` (cost-model data) into `out`; returns the checkpoint path."""
    cfg, log = cfg or ImitateConfig(), log or (lambda *_: None)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(1)
    torch.manual_seed(cfg.seed)
    rows = first_programs(rows, cfg.programs)
    t0 = time.time()
    if cfg.augment:
        rows = augment(rows, cfg.augment)
    if cfg.targets not in TARGETS:
        raise UsageError(f"targets must be one of {', '.join(TARGETS)}, not {cfg.targets!r}")
    demos: dict[str, list[Step]] = defaultdict(list)
    for kind in TARGETS[cfg.targets]:
        for h, steps in kind(rows, cfg.temperature, cfg.min_gain).items():
            demos[h] += steps
    family = {r["hash"]: r["origin"] for r in rows if "origin" in r}
    train_p, val_p = split(list(demos), cfg.validation, cfg.split_seed, family)
    train_s = [s for h in train_p for s in demos[h]]
    val_s = [s for h in val_p for s in demos[h]]
    if not train_s:
        raise UsageError("no demonstrations: the data has no replayable walks")
    log(f"{len(train_s)} training steps of {len(train_p)} programs, {len(val_s)} validation steps of "
        f"{len(val_p)} programs ({time.time() - t0:.0f} s to build)")
    model = ActorCritic(cfg.hidden, cfg.heads)
    if cfg.init:
        fresh = model.load_state_dict(torch.load(cfg.init, map_location="cpu"), strict=False).missing_keys
        log(f"initialized from {cfg.init} (fresh: {sorted({k.split('.')[0] for k in fresh})})")
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    rng = np.random.default_rng(cfg.seed)
    write_atomic(out / "config.json", json.dumps(asdict(cfg), indent=1) + "\n")
    with (out / "log.csv").open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["epoch", "train_loss", "val_loss", "val_agreement", "minutes"])
        for epoch in range(cfg.epochs):
            model.train()
            order, total, weight = rng.permutation(len(train_s)), 0.0, 0.0
            for lo in range(0, len(order), cfg.minibatch):
                batch = [train_s[i] for i in order[lo: lo + cfg.minibatch]]
                loss = _loss(model, batch, cfg.value_weight)
                opt.zero_grad()
                loss.backward()
                opt.step()
                w = sum(s.weight for s in batch)
                total, weight = total + loss.item() * w, weight + w
            model.eval()
            with torch.no_grad():
                val = _loss(model, val_s, cfg.value_weight).item() if val_s else float("nan")
            agree = agreement(model, val_s)
            writer.writerow([epoch, f"{total / weight:.5g}", f"{val:.5g}", f"{agree:.4g}",
                             f"{(time.time() - t0) / 60:.3g}"])
            f.flush()
            log(f"epoch {epoch}: train {total / weight:.4f} validation {val:.4f} agreement {agree:.3f}")
            _save(out / "checkpoint.pt", model, cfg, epoch)  # every epoch: a stopped run keeps its policy
    return out / "checkpoint.pt"


def _save(path: Path, model: ActorCritic, cfg: ImitateConfig, epoch: int) -> None:
    with atomic_target(path) as tmp:
        torch.save({"model": model.state_dict(), "model_config": model.config, "config": asdict(cfg),
                    "source": "imitation", "epoch": epoch}, tmp)


def ensemble(rows: list[dict], out: str | Path, cfg: ImitateConfig, members: int, log=print) -> Path:
    """`members` policies trained with seeds cfg.seed, cfg.seed + 1, ... (each in out/member-K/) and
    one policy file holding them all (out/checkpoint.pt, "members"), whose actions follow their mean
    log-probabilities (`AgentPolicy.logits`).  Why: on ~150 programs, policies that differ only in
    their seed went from 1.07x to 1.36x on the benchmarks (docs/results/pearl/imitation/)."""
    out = Path(out)
    paths = [imitate(rows, out / f"member-{k}", dataclasses.replace(cfg, seed=cfg.seed + k), log)
             for k in range(members)]
    kept = [torch.load(path, map_location="cpu", weights_only=False) for path in paths]
    with atomic_target(out / "checkpoint.pt") as tmp:
        torch.save({"members": [{"model": c["model"], "model_config": c["model_config"]} for c in kept],
                    "config": asdict(cfg), "source": "imitation ensemble"}, tmp)
    return out / "checkpoint.pt"


def add_config_flags(parser: argparse.ArgumentParser, config_class) -> None:
    """One `--flag-name` per field of the dataclass `config_class`, its default the field's."""
    for name, value in asdict(config_class()).items():
        parser.add_argument("--" + name.replace("_", "-"), type=type(value), default=value)


def config_from_flags(args: argparse.Namespace, config_class):
    """The `config_class` instance that `add_config_flags`'s flags describe."""
    return config_class(**{k: getattr(args, k) for k in asdict(config_class())})


def load_data(spec: str) -> list[dict]:
    """The rows of the comma-separated data folders `spec`; a usage error when there are none."""
    rows = load_folders(spec)
    if not rows:
        raise UsageError(f"no rows in {spec}")
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m llmopt.poly.agent.imitate", description=__doc__.split("\n")[0])
    p.add_argument("data", help="cost-model data folder(s), comma-separated (llmopt.poly.costmodel.data)")
    p.add_argument("--out", required=True, help="run folder: checkpoint.pt, log.csv, config.json")
    p.add_argument("--members", type=int, default=1,
                   help="train this many seeds and ship them as one ensemble policy (default 1: one policy)")
    add_config_flags(p, ImitateConfig)
    args = p.parse_args(argv)
    cfg, rows = config_from_flags(args, ImitateConfig), load_data(args.data)
    if args.members < 1:
        raise UsageError("--members must be at least 1")
    path = imitate(rows, args.out, cfg) if args.members == 1 else ensemble(rows, args.out, cfg, args.members)
    print(f"policy: {path}")
    return 0


if __name__ == "__main__":
    run_main(main)
