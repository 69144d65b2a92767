"""Training the cost model (paper 002, appendix A.1): MAPE loss, AdamW, one-cycle learning rate.

The split is by *program*, never by schedule (paper §5: 60 / 20 / 20): a program's hash decides
whether all its schedules train, validate or test, so the test MAPE measures the model on programs
it never saw.  `--validation-share V` moves programs between validation and training (0.8 - V / V) and never
touches the test programs (the last 0.2 of the draw): validation only picks the best epoch, so a smaller V
trains on more of a folder that grows slowly.  Measured speedups below `MIN_SPEEDUP` (0.01) count as 0.01 in
training and in every reported MAPE: MAPE divides by the target, and a few 1000x slowdowns would otherwise decide the loss.  Batches hold up to `batch_size` schedules of one program with one loop-tree
structure (A.1 groups a batch by program; here it also lets one forward pass serve the batch).

`--rank-weight W` adds W x `model.rank_loss` (pairwise order of a batch's schedules) to MAPE: a search
needs the model's order of one program's schedules, and MAPE alone taught little of it (`scores`'
pick ratio; docs/results/costmodel/ranking/).

`--loss log` trains on |log predicted - log measured| instead of MAPE (`model.log_error`; MAPE is still
what is reported): MAPE charges an over-prediction without bound and an under-prediction at most 1.

`--min-baseline-ms MS` keeps only programs whose original schedule runs at least MS (`at_least`): a
search is asked about benchmarks that run 12-230 ms, and on programs of a few ms parallel loops gain nothing.

`--anchored` trains the model to answer score(transformed) - score(untransformed) (`model.ModelConfig.anchored`):
from scratch at `--lr 1e-4` (at A.1's 1e-3 this network does not fit even 20 programs' rows) it learns the
slowdowns the fine-tunes predict as ~1.0x and passes answering 1.0x on every held-out set, which the plain
network at that rate does not on the retest sets.

`--rank-teacher MODEL` (with `--rank-weight`): the rank loss orders each batch by MODEL's predictions instead of
the measured speedups (distillation of an order): the anchored models learn magnitudes the fine-tunes of the
shipped lineage do not, and rank schedules worse than they do (with the shipped model as teacher: a better
order, magnitudes back at the constant; docs/results/costmodel/README.md).

`--absolute-weight W` (with `--anchored`): the scores also learn minus the measured log time (ms, centered) of
each schedule and of its original (`absolute_error`), a second target every row holds: a network that knows
what a nest costs may carry a schedule's effect across programs better than one that sees only differences.
Measured (docs/results/costmodel/README.md): on one machine's folders it lifts the order and costs magnitude; in
the anchored pre-training on every folder (W = 0.1) it is within the seed spread.

`--fork-term` (with `--anchored`): the answer's time ratio adds a learned cost per fork and join of a parallel
region (`model.ModelConfig.fork_term`, `features.fork_load`): a parallel loop inside 500k iterations of other
loops runs 0.01x, and a dozen such rows cannot teach the network that product.

`--noise-weight TAU` weighs each training row's `--loss` by how steadily its program times: a program's
untransformed executable is timed beside every one of its schedules and once against itself (the identity
row), and on one program in ten those times spread by 12% or more (`program_noise`), so its labels teach
noise as much as speedups.  A program of noise s weighs TAU^2 / (TAU^2 + s^2), the inverse of a row's
residual variance when TAU is the error the model leaves on steady labels (its training MAPE, ~0.15), the
weights scaled to a mean of 1; what is reported (MAPE, pick ratio, the best epoch) stays unweighted.

`--snap-neutral EPS` trains on the measured speedups within a factor 1 + EPS of 1.0x as 1.0x exactly (training rows
only; validation, test and every reported MAPE read the measured ones).  Why: 70% of the rows measure 0.8-1.25x,
a program's untransformed executable timed against itself spreads 0.93-1.08x (10th-90th percentile), and on those
rows the network makes more error than answering 1.0x, on its training programs too (docs/results/costmodel/
README.md, fifty-fifth session): a label that differs from 1.0x by less than the timing's noise teaches the noise.

`--other-machine DATA` (repeatable): the training programs of a folder timed on another machine train the
network's shared layers (computation and loop embeddings) through a regression head of that machine's own, so
that what schedules do to loop nests is learned from every machine's programs and by how much on each machine
from its own labels (multi-task learning: a folder of one VM grows ~90 programs an hour, and only on that VM,
while another VM's folders hold 700 more programs).  Those rows never validate or test, and the
saved model is the shared layers with this machine's head: it reads and answers like any other.

`--ema DECAY` validates and saves an exponential moving average of the weights (updated after every step)
instead of the weights themselves: an ensemble gains ~0.003 MAPE a member but costs a member's inference in
every search, and an average over the last steps is a cheap try at the same gain.  Under the one-cycle schedule,
whose rate falls to ~0 at the end, it scored as the weights did (docs/results/costmodel/README.md, fifty-fifth
session).

`--width F` makes every layer F times A.1's width (`model.ModelConfig.scaled`): A.1's 1.3M weights were sized for
millions of schedules, ours are ~25k of ~850 programs, and the network fits its training rows far closer than it
answers held-out ones.

`--augment N` adds relabelled programs to the training split (`llmopt.poly.agent.augment`): when a program P
was measured under one interchange x alone, the program P' whose source has those loops swapped runs as P under
x, and every measured schedule of P is one of P' (x dropped from its front, or put before its first step on that
branch) with speedup s(sigma) / s(x): up to N such programs per training program (those interchanges furthest from
1x first), with no new run.  Why: innermost interchanges are where the error is largest (a unit stride broken or
restored: 0.05x-20x), and about a quarter of the programs hold a single interchange; the relabelled programs see
those swings from the other side.  A relabelled program keeps its origin's split (`split_of` reads `origin`), and
validation and test programs are never relabelled, so every run tests on the same rows.

`--order-only DATA` (with `--rank-weight`): that folder's rows teach only the rank loss, not `--loss`. Labels
timed on another machine order one program's schedules much as this machine does (log correlation ~0.8) but
predict its speedups no better than answering 1.0x (MAPE 0.172 against 0.174 on the test programs' transformed
schedules, `scripts/costmodel_label_noise.py`): they can teach a search what is faster while this machine's
labels teach by how much (docs/results/costmodel/README.md, thirty-sixth session: no better search yet).

Each epoch ends with the validation MAPE and pick ratio and an atomic checkpoint, `OUT/last.pt` (model,
optimizer, scheduler, epoch, history); the best model by validation MAPE (by pick ratio with
`--rank-weight`) is `OUT/costmodel.pt`
(`model.load_model`), with the split and the metrics in its metadata; `OUT/features.pkl` caches the
featurized samples.  Running the same command
again resumes from `last.pt`; a finished run only re-reports its test MAPE.  CPU by default;
`--device cuda` trains on a GPU.

    python -m llmopt.poly.costmodel.train DATA [DATA...] --out OUT [--epochs 300] [--device cuda]

`predict(model, program, schedule)` (from `model`) answers the speedup of one schedule.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn

from llmopt.errors import UsageError, run_main
from llmopt.outputs import atomic_target
from llmopt.poly.costmodel.boosted import Boosted
from llmopt.poly.costmodel.data import load_rows
from llmopt.poly.costmodel.features import (
    COMP_FEATURES,
    FEATURE_LAYOUT,
    FEATURE_SETS,
    Tree,
    featurizer,
)
from llmopt.poly.costmodel.model import (  # noqa: F401  (predict: the public answer, re-exported)
    Blend,
    CostModel,
    Ensemble,
    ModelConfig,
    load_model,
    log_error,
    mape,
    predict,
    predict_trees,
    rank_loss,
    save_model,
    with_forks,
)
from llmopt.poly.program import program_from_dict
from llmopt.poly.schedule import Schedule, state

SPLITS = ("train", "validation", "test")
LOSSES = ("mape", "log")  # `TrainConfig.loss`
# Targets below this are raised to it (train and test alike): a schedule 100x slower than the original
# is as useless as one 1000x slower, and MAPE on a 0.001x target would outweigh every other sample.
MIN_SPEEDUP = 0.01


@dataclass
class TrainConfig:
    """A.1's training settings (epochs scaled down from ~700 for a CPU)."""

    epochs: int = 300
    batch_size: int = 32
    max_lr: float = 1e-3
    weight_decay: float = 0.0075
    fractions: tuple[float, float] = (0.6, 0.2)  # train, validation; the rest tests
    seed: int = 0  # the split's seed; also the weights' and the shuffling's unless `init_seed` is set
    init_seed: int | None = None  # another initialization and batch order on the same split (an ensemble's members)
    device: str = "cpu"
    threads: int = 1  # torch CPU threads: more only spin against each other on a shared, busy machine
    rank_weight: float = 0.0  # weight of `rank_loss` beside `loss` (0: that loss alone, as the paper)
    train_share: float = 1.0  # train on this share of the training programs (a learning curve; same test)
    min_baseline_ms: float = 0.0  # drop programs whose original schedule runs faster than this (every split)
    loss: str = "mape"  # "mape" (the paper's) or "log" (`model.log_error`), beside `rank_weight` x rank loss
    # Folders (as given to `train`) whose labels teach only the order of each program's schedules (the rank
    # loss), not by how much they differ (`loss`): labels timed on another machine (`magnitude_mask`).
    order_only: tuple[str, ...] = ()
    rank_teacher: str | None = None  # a cost model whose predicted order the rank loss teaches (module docstring)
    absolute_weight: float = 0.0  # weight of `absolute_error` (measured log times as a second target; anchored only)
    noise_weight: float = 0.0  # TAU of `noise_weights` (0: every training row weighs the same)
    # Folders of labels timed on other machines: their training programs teach the shared layers through a
    # regression head of their machine's own (`other_heads`); they never validate or test, and the saved
    # model answers with the main head, this machine's (module docstring).
    other_machines: tuple[str, ...] = ()
    # Fine-tune: start from this saved cost model's weights, input statistics and architecture (which replace
    # `model`), so new labels can be added without retraining from scratch.
    init_from: str | None = None
    # With `init_from` a model from before the compiler view: give it the view's inputs, their weights zero,
    # so it starts answering exactly as the file does and the fine-tune teaches it to read them.
    widen: bool = False
    # Decay of an exponential moving average of the weights, updated after every step (0: off): the average, not
    # the last step's weights, is validated and saved.  Why: an ensemble's gain without its cost at search time.
    ema: float = 0.0
    # Relabelled programs per training program (`relabelled_training_rows`; 0: none): the measured interchanges
    # of a program read as the source order of another (module docstring).
    augment: int = 0
    # Training targets within a factor 1 + snap_neutral of 1.0x are taught as 1.0x (`snapped`; 0: off).
    snap_neutral: float = 0.0
    model: ModelConfig = field(default_factory=ModelConfig)

    @property
    def weights_seed(self) -> int:
        """The seed of the initial weights and the batch order (`seed` unless `init_seed` is given)."""
        return self.seed if self.init_seed is None else self.init_seed


def _draw(program_hash: str, seed: int) -> float:
    return int(hashlib.sha256(f"{seed}/{program_hash}".encode()).hexdigest()[:12], 16) / 16**12


def split_of(program_hash: str, fractions: tuple[float, float], seed: int = 0) -> str:
    """"train" / "validation" / "test" for a program, from its hash alone (stable as data grows)."""
    u = _draw(program_hash, seed)
    return SPLITS[0] if u < fractions[0] else SPLITS[1] if u < sum(fractions) else SPLITS[2]


@dataclass
class Dataset:
    """Featurized samples of one split: trees, speedups, program hashes, and whether each label's magnitude
    is taught (False: a row of an `order_only` folder; empty: every label's)."""

    trees: list[Tree] = field(default_factory=list)
    speedups: list[float] = field(default_factory=list)
    programs: list[str] = field(default_factory=list)
    magnitude: list[bool] = field(default_factory=list)
    order: list[float] = field(default_factory=list)  # what the rank loss orders by (empty: `speedups`)
    # Measured times, log milliseconds, of each sample's schedule and of its paired original (what
    # `--absolute-weight` teaches; empty for samples made without rows).
    log_ms: list[float] = field(default_factory=list)
    anchor_log_ms: list[float] = field(default_factory=list)
    weight: list[float] = field(default_factory=list)  # of each sample's `loss` in training (empty: all 1)
    # Which regression head each sample trains: 0 the model's own, k > 0 the k-th other machine's (empty: all 0).
    head: list[int] = field(default_factory=list)

    def where(self, keep) -> Dataset:
        """The samples whose program hash `keep(hash)` accepts."""
        return self._subset([k for k, h in enumerate(self.programs) if keep(h)])

    def own(self) -> Dataset:
        """The samples of the model's own machine (head 0): what every reported score is measured on."""
        return self._subset([k for k in range(len(self.trees)) if not self.head or not self.head[k]])

    def _subset(self, idx: list[int]) -> Dataset:
        def pick(values: list) -> list:
            return [values[k] for k in idx] if values else []

        return Dataset(pick(self.trees), pick(self.speedups), pick(self.programs), pick(self.magnitude),
                       pick(self.order), pick(self.log_ms), pick(self.anchor_log_ms), pick(self.weight),
                       pick(self.head))

    def magnitude_mask(self, idx: list[int], device: str) -> torch.Tensor:
        """Which of the samples `idx` the magnitude loss (`TrainConfig.loss`) sees."""
        keep = [self.magnitude[k] for k in idx] if self.magnitude else [True] * len(idx)
        return torch.tensor(keep, dtype=torch.bool, device=device)


def train_share_of(ds: Dataset, cfg: TrainConfig) -> Dataset:
    """The samples of the first `cfg.train_share` of the training programs (by the split's own draw, so a
    smaller share is a subset of a larger one and validation and test do not change)."""
    if cfg.train_share >= 1.0:
        return ds
    return ds.where(lambda h: _draw(h, cfg.seed) < cfg.fractions[0] * cfg.train_share)


def program_noise(rows: list[dict]) -> dict[str, float]:
    """{program hash: how unsteadily it times}: the root of the mean of two squared log spreads of its one
    untransformed executable, its identity row (timed against itself: any distance from 1.0x is noise) and
    the robust spread (1.4826 x the median absolute deviation) of its times taken beside each of its
    schedules.  Each sees what the other misses: one identity ratio is a single draw; the paired times
    cancel slow drifts."""
    times: dict[str, list[float]] = {}
    identity: dict[str, float] = {}
    for r in rows:
        times.setdefault(r["hash"], []).append(math.log(max(float(r["baseline_seconds"]), 1e-9)))
        if not r["schedule"]:
            identity[r["hash"]] = math.log(max(float(r["speedup"]), MIN_SPEEDUP))
    out = {}
    for h, logs in times.items():
        logs_ = np.asarray(logs)
        spread = 1.4826 * float(np.median(np.abs(logs_ - np.median(logs_))))
        out[h] = math.sqrt((identity.get(h, spread) ** 2 + spread**2) / 2)
    return out


def noise_weights(ds: Dataset, noise: dict[str, float], tau: float) -> list[float]:
    """Each sample's training weight from its program's `program_noise` s: tau^2 / (tau^2 + s^2), scaled so
    that the weights average 1 (module docstring)."""
    if not ds.programs:
        return []
    w = np.array([tau**2 / (tau**2 + noise[h] ** 2) for h in ds.programs])
    return list(w / w.mean())


def snapped(ds: Dataset, eps: float) -> Dataset:
    """`ds` with its speedups within a factor 1 + `eps` of 1.0x set to 1.0 (the training targets of
    `TrainConfig.snap_neutral`; `ds` itself unchanged, so reports read the measured speedups)."""
    if eps <= 0:
        return ds
    bound = math.log1p(eps)
    return dataclasses.replace(ds, speedups=[1.0 if abs(math.log(y)) < bound else y for y in ds.speedups])


def _row_key(r: dict) -> str:
    return f"{r['hash']}/{json.dumps(r['schedule'], sort_keys=True)}"


def featurize_rows(rows: list[dict], cfg: TrainConfig, progress: bool = True,
                   cache: str | os.PathLike | None = None) -> dict[str, Dataset]:
    """Rows -> featurized datasets per split (programs parsed once each).

    Featurizing is isl work (bounds of every loop of every schedule: ~1,850 samples/s beside a training job,
    with one featurizer per program reusing its samples' computation vectors; docs/benchmarks.md), so with
    `cache` the trees are kept in that file, keyed by (program, schedule) and by the feature layout:
    a resumed or repeated run featurizes only rows it has not seen.
    """
    import pickle

    from tqdm import tqdm

    layout = (COMP_FEATURES, FEATURE_LAYOUT)
    known: dict[str, Tree] = {}
    if cache is not None and Path(cache).is_file():
        try:
            blob = pickle.loads(Path(cache).read_bytes())
            known = blob["trees"] if blob.get("layout") == layout else {}
        except (OSError, pickle.UnpicklingError, EOFError, KeyError, TypeError):
            known = {}  # a damaged cache is only lost time: featurize again
    out = {s: Dataset() for s in SPLITS}
    featurizers: dict[str, object] = {}  # one per program: its samples share its untransformed tree
    fresh = 0
    for r in tqdm(rows, desc="features", unit="sample", disable=not progress):
        key = _row_key(r)
        tree = known.get(key)
        if tree is None:
            if r["hash"] not in featurizers:
                prog = program_from_dict(r["program"])
                featurizers[r["hash"]] = (prog, featurizer(prog))
            prog, featurize = featurizers[r["hash"]]
            tree = known[key] = featurize(state(prog, Schedule.from_list(r["schedule"])))
            fresh += 1
        split, head = split_of(r.get("origin", r["hash"]), cfg.fractions, cfg.seed), r.get("head", 0)
        if head and split != "train":
            continue  # another machine's labels only train (TrainConfig.other_machines)
        ds = out[split]
        ds.head.append(head)
        ds.trees.append(tree)
        ds.speedups.append(max(float(r["speedup"]), MIN_SPEEDUP))
        ds.programs.append(r["hash"])
        ds.magnitude.append(not r.get("order_only", False))
        ds.log_ms.append(math.log(max(float(r["seconds"]), 1e-9) * 1e3))
        ds.anchor_log_ms.append(math.log(max(float(r["baseline_seconds"]), 1e-9) * 1e3))
    if cache is not None and fresh:
        with atomic_target(cache) as tmp:
            tmp.write_bytes(pickle.dumps({"layout": layout, "trees": known}, protocol=pickle.HIGHEST_PROTOCOL))
    return out


def batches(ds: Dataset, size: int, rng: np.random.Generator | None = None) -> list[list[int]]:
    """Index lists of at most `size` samples of one (program, structure); shuffled when `rng` is given."""
    groups: dict[tuple, list[int]] = {}
    for k, (t, p) in enumerate(zip(ds.trees, ds.programs, strict=True)):
        groups.setdefault((p, t.structure, ds.head[k] if ds.head else 0), []).append(k)
    out = []
    for idx in groups.values():
        if rng is not None:
            idx = list(rng.permutation(idx))
        out += [idx[i: i + size] for i in range(0, len(idx), size)]
    if rng is not None:
        out = [out[i] for i in rng.permutation(len(out))]
    return out


def _tensors(ds: Dataset, idx: list[int], device: str) -> tuple[torch.Tensor, torch.Tensor, tuple]:
    comps = torch.from_numpy(np.stack([ds.trees[k].comps for k in idx])).to(device)
    target = torch.tensor([ds.speedups[k] for k in idx], dtype=torch.float32, device=device)
    return comps, target, ds.trees[idx[0]].structure


def batch_log_speedup(model: CostModel, ds: Dataset, idx: list[int], device: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(predicted log speedups, measured speedups) of one batch (one program, one structure); an anchored
    model's scores less its program's untransformed tree's, so the gradient flows through both."""
    scores, anchor, target = batch_scores(model, ds, idx, device)
    return anchored_log_pred(model, ds, idx, scores, anchor), target


def anchored_log_pred(model: CostModel, ds: Dataset, idx: list[int], scores: torch.Tensor,
                      anchor: torch.Tensor | None) -> torch.Tensor:
    """A batch's predicted log speedups from `batch_scores`: the scores, or less the anchor's and with the fork
    term when the model has one (`model.with_forks`)."""
    if anchor is None:
        return scores
    return with_forks(model, scores - anchor, [ds.trees[k] for k in idx])


def batch_scores(model: CostModel, ds: Dataset, idx: list[int], device: str,
                 other_heads: nn.ModuleList | None = None) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor]:
    """(the network's outputs for one batch, its output for the program's untransformed tree when the model
    is anchored (else None), measured speedups); a batch of another machine's labels (`Dataset.head`) is
    answered by that machine's head of `other_heads`."""
    comps, target, structure = _tensors(ds, idx, device)
    k = ds.head[idx[0]] if ds.head else 0
    head = other_heads[k - 1] if k else None
    out = model.log_speedup(comps, structure, head)
    if not model.cfg.anchored:
        return out, None, target
    anchor = ds.trees[idx[0]].anchor
    return out, model.log_speedup(torch.from_numpy(anchor.comps[None]).to(device), anchor.structure, head), target


def absolute_error(scores: torch.Tensor, anchor: torch.Tensor, log_ms: torch.Tensor,
                   anchor_log_ms: torch.Tensor) -> torch.Tensor:
    """How far an anchored model's scores are from minus the measured log times (centered log ms) of a batch's
    schedules and of their original: a score that is minus a log time makes score(tree) - score(original)
    a log speedup, and asks the network to know what a whole nest costs, not only what a schedule changes."""
    return ((scores + log_ms).abs().mean() + (anchor + anchor_log_ms.mean()).abs().mean()) / 2


def evaluate(model: CostModel, ds: Dataset) -> float:
    """MAPE (fraction) of the model on a dataset; nan when it is empty."""
    return scores(model, ds)[0]


def scores(model: CostModel, ds: Dataset) -> tuple[float, float]:
    """(MAPE, pick ratio) of the model on a dataset, from one prediction pass; nan when it is empty.

    The pick ratio is the geometric mean over programs of (measured speedup of the schedule the model
    ranks first) / (the program's best measured speedup): what a search that trusts the model's order
    keeps (1 = always the best; always picking the identity scores ~0.63 on the random test programs)."""
    if not ds.trees:
        return math.nan, math.nan
    pred, y = predict_trees(model, ds.trees), np.asarray(ds.speedups)
    by_program: dict[str, list[int]] = {}
    for k, h in enumerate(ds.programs):
        by_program.setdefault(h, []).append(k)
    ratios = [y[idx][np.argmax(pred[idx])] / y[idx].max() for idx in map(np.asarray, by_program.values())]
    return float(np.mean(np.abs(pred - y) / y)), float(np.exp(np.mean(np.log(ratios))))


def train_epoch(model: CostModel, ds: Dataset, opt, sched, cfg: TrainConfig, rng: np.random.Generator,
                other_heads: nn.ModuleList | None = None, ema: AveragedModel | None = None) -> float:
    """One pass over the training set; the mean MAPE of its batches (weighted by size), whatever `cfg.loss`
    it minimizes.  With `cfg.rank_weight` the loss adds that much `rank_loss` (a batch is one program's
    schedules), with `cfg.absolute_weight` that much `absolute_error`; other machines' samples train through
    their heads in `other_heads`; `ema`, when given, averages the weights after every step."""
    model.train()
    if other_heads is not None:
        other_heads.train()
    total, seen = 0.0, 0
    center = float(np.median(ds.anchor_log_ms)) if cfg.absolute_weight else 0.0  # the head starts near 0
    for idx in batches(ds, cfg.batch_size, rng):
        scores_, anchor, target = batch_scores(model, ds, idx, cfg.device, other_heads)
        log_pred = anchored_log_pred(model, ds, idx, scores_, anchor)
        error = mape(log_pred.exp(), target)
        order = torch.tensor([ds.order[k] for k in idx], device=cfg.device) if ds.order else None
        taught = ds.magnitude_mask(idx, cfg.device)
        weight = torch.tensor([ds.weight[k] for k in idx], device=cfg.device) if ds.weight else None
        loss = batch_loss(log_pred, target, taught, cfg, order, weight)
        if cfg.absolute_weight and taught.any():
            times = torch.tensor([[ds.log_ms[k] - center, ds.anchor_log_ms[k] - center] for k in idx],
                                 device=cfg.device)[taught]
            loss = loss + cfg.absolute_weight * absolute_error(scores_[taught], anchor, times[:, 0], times[:, 1])
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if ema is not None:
            ema.update_parameters(model)
        total += error.item() * len(idx)
        seen += len(idx)
    return total / max(seen, 1)


def batch_loss(log_pred: torch.Tensor, target: torch.Tensor, taught: torch.Tensor, cfg: TrainConfig,
               order: torch.Tensor | None = None, weight: torch.Tensor | None = None) -> torch.Tensor:
    """What one batch minimizes: `cfg.loss` on the samples whose magnitude is `taught` (all but an
    `order_only` folder's), each weighted by `weight` when given (`noise_weights`), plus `cfg.rank_weight`
    x `rank_loss` on all of them, by `order` (a teacher's predicted speedups) when given, else by the
    measured ones."""
    if not taught.any():
        loss = log_pred.sum() * 0.0
    else:
        w = None if weight is None else weight[taught]
        if cfg.loss == "log":
            loss = log_error(log_pred[taught], target[taught], w)
        else:
            loss = mape(log_pred[taught].exp(), target[taught], w)
    if cfg.rank_weight:
        loss = loss + cfg.rank_weight * rank_loss(log_pred, target if order is None else order)
    return loss


class Trainer:
    """Model, optimizer (AdamW), one-cycle schedule and history; saved and resumed as one checkpoint."""

    def __init__(self, cfg: TrainConfig, steps_per_epoch: int, other_heads: int = 0):
        if cfg.device == "cpu":
            torch.set_num_threads(cfg.threads)  # 2 threads on a busy 2-core machine run ~50x slower than 1
        torch.manual_seed(cfg.weights_seed)
        self.cfg = cfg
        self.model = CostModel(cfg.model).to(cfg.device)
        # one regression head per other machine (TrainConfig.other_machines): trained, never saved in the model
        self.other_heads = nn.ModuleList([self.model.new_head() for _ in range(other_heads)])
        params = [*self.model.parameters(), *self.other_heads.parameters()]
        # The first update copies the weights, input statistics included (they are set after this): buffers
        # are averaged as parameters are, and constant ones stay what they are.
        self.ema = (AveragedModel(self.model, multi_avg_fn=get_ema_multi_avg_fn(cfg.ema), use_buffers=True)
                    if cfg.ema else None)
        self.opt = torch.optim.AdamW(params, lr=cfg.max_lr, weight_decay=cfg.weight_decay)
        self.sched = torch.optim.lr_scheduler.OneCycleLR(self.opt, max_lr=cfg.max_lr,
                                                         total_steps=max(1, cfg.epochs * steps_per_epoch))
        self.epoch, self.best, self.history = 0, math.inf, []

    @property
    def answering(self) -> CostModel:
        """The weights validated and saved: the moving average's with `TrainConfig.ema`, else the model's."""
        return self.model if self.ema is None else self.ema.module

    def settings(self) -> dict:
        """What a resumed run must share with the checkpoint (the one-cycle schedule spans all epochs)."""
        return {"epochs": self.cfg.epochs, "batch_size": self.cfg.batch_size, "max_lr": self.cfg.max_lr,
                "seed": self.cfg.seed, "fractions": list(self.cfg.fractions),
                # without the anchored flag when off, so checkpoints from before it still resume
                "model": repr(self.cfg.model).replace(", anchored=False", "").replace(", fork_term=False", ""),
                # absent when off, so checkpoints from before the option still resume
                **({"rank_weight": self.cfg.rank_weight} if self.cfg.rank_weight else {}),
                **({"weight_decay": self.cfg.weight_decay} if self.cfg.weight_decay != TrainConfig.weight_decay else {}),
                **({"train_share": self.cfg.train_share} if self.cfg.train_share < 1.0 else {}),
                **({"min_baseline_ms": self.cfg.min_baseline_ms} if self.cfg.min_baseline_ms else {}),
                **({"loss": self.cfg.loss} if self.cfg.loss != "mape" else {}),
                **({"init_seed": self.cfg.init_seed} if self.cfg.init_seed is not None else {}),
                **({"order_only": list(self.cfg.order_only)} if self.cfg.order_only else {}),
                **({"rank_teacher": self.cfg.rank_teacher} if self.cfg.rank_teacher else {}),
                **({"absolute_weight": self.cfg.absolute_weight} if self.cfg.absolute_weight else {}),
                **({"noise_weight": self.cfg.noise_weight} if self.cfg.noise_weight else {}),
                **({"other_machines": list(self.cfg.other_machines)} if self.cfg.other_machines else {}),
                **({"init_from": self.cfg.init_from} if self.cfg.init_from else {}),
                **({"ema": self.cfg.ema} if self.cfg.ema else {}),
                **({"augment": self.cfg.augment} if self.cfg.augment else {}),
                **({"snap_neutral": self.cfg.snap_neutral} if self.cfg.snap_neutral else {})}

    def state(self) -> dict:
        return {"model": self.model.state_dict(), "opt": self.opt.state_dict(), "sched": self.sched.state_dict(),
                "epoch": self.epoch, "best": self.best, "history": self.history, "settings": self.settings(),
                **({"other_heads": self.other_heads.state_dict()} if len(self.other_heads) else {}),
                **({"ema": self.ema.state_dict()} if self.ema is not None else {})}

    def load(self, blob: dict, where: Path) -> None:
        if blob.get("settings") != self.settings():
            raise UsageError(f"{where} was trained with {blob.get('settings')}; resume with those settings "
                             "or train into a new --out folder")
        self.model.load_state_dict(blob["model"])
        if len(self.other_heads):
            self.other_heads.load_state_dict(blob["other_heads"])
        if self.ema is not None:
            self.ema.load_state_dict(blob["ema"])
        self.opt.load_state_dict(blob["opt"])
        self.sched.load_state_dict(blob["sched"])
        self.epoch, self.best, self.history = blob["epoch"], blob["best"], blob["history"]


def _checkpoint(path: Path, trainer: Trainer) -> None:
    with atomic_target(path) as tmp:
        torch.save(trainer.state(), tmp)


def _meta(sets: dict[str, Dataset], cfg: TrainConfig, history: list, data: str) -> dict:
    own = {s: sets[s].own() for s in SPLITS}  # the saved model answers for this machine's samples
    return {"data": data, "fractions": list(cfg.fractions), "seed": cfg.seed, "init_seed": cfg.weights_seed,
            **({"init_from": cfg.init_from} if cfg.init_from else {}),
            **({"order_only": list(cfg.order_only)} if cfg.order_only else {}),
            **({"absolute_weight": cfg.absolute_weight} if cfg.absolute_weight else {}),
            **({"noise_weight": cfg.noise_weight} if cfg.noise_weight else {}),
            **({"other_machines": list(cfg.other_machines)} if cfg.other_machines else {}),
            **({"augment": cfg.augment} if cfg.augment else {}),
            **({"snap_neutral": cfg.snap_neutral} if cfg.snap_neutral else {}),
            "history": history,
            "loss": cfg.loss, "rank_weight": cfg.rank_weight, "min_baseline_ms": cfg.min_baseline_ms,
            "programs": {s: sorted(set(own[s].programs)) for s in SPLITS},
            "samples": {s: len(own[s].trees) for s in SPLITS},
            **({"other_machine_samples": len(sets["train"].trees) - len(own["train"].trees)}
               if cfg.other_machines else {})}


def fine_tune_start(cfg: TrainConfig) -> tuple[dict | None, TrainConfig]:
    """(the weights a fine-tune starts from, `cfg` with their architecture) for `cfg.init_from`; (None, cfg)
    for a run from scratch.  Why the file's input statistics too: the weights were fitted to inputs
    standardized by them, and the new data's would shift every input the network knows."""
    if not cfg.init_from:
        return None, cfg
    path = Path(cfg.init_from)
    if not path.is_file():
        raise UsageError(f"--init-from {path}: no such cost model file")
    model, _ = load_model(path, cfg.device)  # its config, weights and feature-count check
    if isinstance(model, Boosted):
        raise UsageError(f"--init-from {path} is trees alone, no network: give a network's file")
    if isinstance(model, (Ensemble, Blend)):
        kind = "an ensemble" if isinstance(model, Ensemble) else "a blend with trees"
        raise UsageError(f"--init-from {path} is {kind}; fine-tune one of its networks")
    anchored = model.cfg.anchored or cfg.model.anchored  # an unanchored model may be fine-tuned anchored
    arch, state = dataclasses.replace(model.cfg, anchored=anchored), model.state_dict()
    if cfg.widen and arch.comp_features < COMP_FEATURES:
        arch, state = dataclasses.replace(arch, comp_features=COMP_FEATURES), widened(state, COMP_FEATURES)
    return state, dataclasses.replace(cfg, model=arch)


def widened(state: dict, features: int) -> dict:
    """A model's weights reading `features` inputs where they read fewer: the first layer's new columns are
    zero (so the answers do not change) and the new inputs enter unstandardized (mean 0, std 1; they are
    flags and squashed counts)."""
    out = dict(state)
    first = out["comp.0.weight"]
    out["comp.0.weight"] = torch.cat([first, first.new_zeros(first.shape[0], features - first.shape[1])], dim=1)
    for name, fill in (("in_mean", 0.0), ("in_std", 1.0)):
        if name in out:
            out[name] = torch.cat([out[name], out[name].new_full((features - out[name].shape[0],), fill)])
    return out


def at_least(rows: list[dict], min_baseline_ms: float) -> list[dict]:
    """The rows of programs whose original schedule runs at least `min_baseline_ms`.

    Why: how much parallelization or tiling pays depends on how long the program runs (OpenMP's start-up
    against 3 ms of work measures ~1.0x, against 100 ms ~2x), and most random programs run a few ms
    where the benchmarks a search is asked about run 12-230 ms (`data/poly-costmodel-large/README.md`)."""
    return [r for r in rows if float(r["baseline_seconds"]) * 1e3 >= min_baseline_ms] if min_baseline_ms else rows


def teacher_order(cfg: TrainConfig, ds: Dataset) -> list[float]:
    """`cfg.rank_teacher`'s predicted speedups of the training samples (what `--rank-teacher` ranks by)."""
    if not cfg.rank_weight:
        raise UsageError("--rank-teacher teaches through the rank loss alone: give --rank-weight > 0")
    if not Path(cfg.rank_teacher).is_file():
        raise UsageError(f"--rank-teacher {cfg.rank_teacher}: no such cost model file")
    teacher, _ = load_model(cfg.rank_teacher, cfg.device)
    return [float(v) for v in predict_trees(teacher, ds.trees)]


def _labelled_rows(folders: list, cfg: TrainConfig) -> list[dict]:
    """Every folder's rows, those of `cfg.order_only` folders marked `order_only` (read by `featurize_rows`)."""
    given = {os.path.normpath(str(f)) for f in folders}
    order_only = {os.path.normpath(f) for f in cfg.order_only}
    if order_only - given:
        raise UsageError(f"--order-only {', '.join(sorted(order_only - given))}: not among the training data")
    if order_only and not cfg.rank_weight:
        raise UsageError("--order-only folders teach through the rank loss alone: give --rank-weight > 0")
    if order_only == given:
        raise UsageError("every folder is --order-only: at least one must teach the speedups' magnitude")
    rows = []
    for folder in folders:
        mark = os.path.normpath(str(folder)) in order_only
        rows += [{**row, "order_only": True} if mark else row for row in load_rows(folder)]
    return rows + _other_machine_rows(rows, cfg)


def relabelled_training_rows(rows: list[dict], cfg: TrainConfig) -> list[dict]:
    """The rows of up to `cfg.augment` relabelled programs of each training program of this machine
    (`llmopt.poly.agent.augment.augment`), each with its origin's hash as `origin`; [] with `augment` 0.
    Programs that validate or test, and other machines' rows, are never relabelled."""
    from llmopt.poly.agent.augment import augment

    own = [r for r in rows if not r.get("head") and split_of(r["hash"], cfg.fractions, cfg.seed) == "train"]
    return augment(own, cfg.augment)[len(own):] if cfg.augment > 0 else []


def _other_machine_rows(own: list[dict], cfg: TrainConfig) -> list[dict]:
    """The rows of `cfg.other_machines`' folders, each marked with its machine's head (1, 2, ... by machine id);
    a folder timed on the machine of the main data is refused: it belongs among the data."""
    rows = [r for folder in cfg.other_machines for r in load_rows(folder)]
    machines = sorted({str(r.get("machine")) for r in rows})
    same = {str(r["machine"]) for r in own if r.get("machine")} & set(machines)
    if same:
        raise UsageError(f"--other-machine: rows timed on {', '.join(sorted(same))}, the machine of the main data: "
                         "give that folder as DATA")
    return [{**r, "head": 1 + machines.index(str(r.get("machine")))} for r in rows]


def train(data: str | os.PathLike | Sequence[str | os.PathLike], out: str | os.PathLike,
          cfg: TrainConfig | None = None, log=print, progress: bool = True) -> dict:
    """Train (or resume) on the rows in `data` (one collected folder or several, split alike by program);
    returns {"mape_train", "mape_validation", "mape_test", ...}."""
    cfg = cfg or TrainConfig()
    if cfg.loss not in LOSSES:
        raise UsageError(f"unknown loss {cfg.loss!r}: one of {', '.join(LOSSES)}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    start, cfg = fine_tune_start(cfg)  # before featurizing: a wrong file fails in a second, not minutes
    if cfg.absolute_weight and not cfg.model.anchored:
        raise UsageError("--absolute-weight teaches an anchored model's scores: add --anchored")
    folders = [data] if isinstance(data, (str, os.PathLike)) else list(data)
    data = " + ".join(map(str, folders))
    rows = at_least(_labelled_rows(folders, cfg), cfg.min_baseline_ms)
    if not rows:
        raise UsageError(f"{data}: no rows of a program that runs at least {cfg.min_baseline_ms} ms")
    if cfg.augment:
        extra = relabelled_training_rows(rows, cfg)
        log(f"--augment {cfg.augment}: {len({r['hash'] for r in extra})} relabelled programs, {len(extra)} rows")
        rows += extra
    sets = featurize_rows(rows, cfg, progress, cache=out / "features.pkl")
    sets["train"] = train_share_of(sets["train"], cfg)
    if not sets["train"].trees:
        raise UsageError(f"{data}: no training programs after the split (collect more programs)")
    if cfg.rank_teacher:
        sets["train"].order = teacher_order(cfg, sets["train"])
    if cfg.noise_weight:
        sets["train"].weight = noise_weights(sets["train"], program_noise(rows), cfg.noise_weight)
    trainer = Trainer(cfg, len(batches(sets["train"], cfg.batch_size)), max(sets["train"].head, default=0))
    if start is not None:
        trainer.model.load_state_dict(start)
    elif cfg.model.normalize:  # a resumed run loads the same statistics with its weights
        trainer.model.set_input_stats(np.concatenate([t.comps for t in sets["train"].trees]))
    if (out / "last.pt").exists():
        trainer.load(torch.load(out / "last.pt", map_location=cfg.device, weights_only=False), out / "last.pt")
        log(f"resuming at epoch {trainer.epoch}")
    rng = np.random.default_rng(cfg.weights_seed + trainer.epoch)
    targets = snapped(sets["train"], cfg.snap_neutral)
    while trainer.epoch < cfg.epochs:
        loss = train_epoch(trainer.model, targets, trainer.opt, trainer.sched, cfg, rng, trainer.other_heads,
                           trainer.ema)
        val, val_pick = scores(trainer.answering, sets["validation"])
        trainer.epoch += 1
        trainer.history.append({"epoch": trainer.epoch, "train_mape": loss, "val_mape": val, "val_pick": val_pick})
        # The best model by what the run trains for: MAPE, or the order when the ranking loss is on.
        score = (1 - val_pick if cfg.rank_weight else val) if not math.isnan(val) else loss
        if score < trainer.best or not (out / "costmodel.pt").exists():
            trainer.best = score
            save_model(trainer.answering, out / "costmodel.pt", _meta(sets, cfg, trainer.history, str(data)))
        _checkpoint(out / "last.pt", trainer)
        log(f"epoch {trainer.epoch}/{cfg.epochs}: train MAPE {loss:.3f}, validation MAPE {val:.3f}, "
            f"pick ratio {val_pick:.3f}")
    return _report(out, sets, cfg, log)


def _report(out: Path, sets: dict[str, Dataset], cfg: TrainConfig, log) -> dict:
    """MAPE of the best model on every split, saved to OUT/metrics.json."""
    best, _ = load_model(out / "costmodel.pt", cfg.device)
    sets = {s: sets[s].own() for s in SPLITS}  # the saved model answers for its own machine only
    both = {s: scores(best, sets[s]) for s in SPLITS}
    metrics = {**{f"mape_{s}": both[s][0] for s in SPLITS}, **{f"pick_{s}": both[s][1] for s in SPLITS}}
    metrics.update(samples={s: len(sets[s].trees) for s in SPLITS},
                   programs={s: len(set(sets[s].programs)) for s in SPLITS})
    (out / "metrics.json").write_text(json.dumps(metrics, indent=1) + "\n")
    log(f"test MAPE {metrics['mape_test']:.3f}, pick ratio {metrics['pick_test']:.3f} on "
        f"{metrics['programs']['test']} held-out programs")
    return metrics


def main(argv: list[str] | None = None) -> int:
    print(json.dumps(train(*_config(parser().parse_args(argv)))))
    return 0


def parser() -> argparse.ArgumentParser:
    """The command line of `python -m llmopt.poly.costmodel.train`."""
    p = argparse.ArgumentParser(prog="python -m llmopt.poly.costmodel.train", description=__doc__.split("\n")[0])
    p.add_argument("data", nargs="+", help="collected folders (llmopt.poly.costmodel.data) or samples.jsonl files")
    p.add_argument("--out", default="runs/costmodel", help="checkpoints, costmodel.pt, metrics.json")
    p.add_argument("--epochs", type=int, default=TrainConfig.epochs)
    p.add_argument("--batch-size", type=int, default=TrainConfig.batch_size)
    p.add_argument("--lr", type=float, default=TrainConfig.max_lr, help="one-cycle maximum learning rate (A.1's 1e-3; from scratch with --normalize --dropout 0 "
                   "the network fits 20 programs at 1e-4, not at 1e-3: scripts/costmodel_fit_check.py)")
    p.add_argument("--weight-decay", type=float, default=TrainConfig.weight_decay, help="AdamW weight decay (A.1's)")
    p.add_argument("--seed", type=int, default=0, help="the split's seed (and the weights' unless --init-seed)")
    p.add_argument("--init-seed", type=int, default=None,
                   help="initial weights and batch order from this seed, on --seed's split (an ensemble's members)")
    p.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    p.add_argument("--tiny", action="store_true", help="the small test model instead of A.1's sizes")
    p.add_argument("--width", type=float, default=1.0,
                   help="every layer this many times A.1's width (or --tiny's): fewer weights for few programs")
    p.add_argument("--dropout", type=float, help=f"dropout after every layer (default A.1's {ModelConfig.dropout})")
    p.add_argument("--normalize", action="store_true",
                   help="standardize the inputs by the training split's statistics (not in the paper; learns far faster)")
    p.add_argument("--anchored", action="store_true",
                   help="answer score(transformed) - score(untransformed): the identity is 1.0x by construction "
                        "(from scratch use --normalize --dropout 0 --lr 1e-4)")
    p.add_argument("--train-share", type=float, default=1.0,
                   help="train on this share of the training programs (a learning curve; validation and test unchanged)")
    p.add_argument("--validation-share", type=float, default=TrainConfig.fractions[1], metavar="V",
                   help="the share of programs that validate (pick the best epoch); the training share is 0.8 - V, "
                        "so the test programs (the last 0.2) stay the same whatever V (default 0.2)")
    p.add_argument("--min-baseline-ms", type=float, default=0.0,
                   help="keep only programs whose original schedule runs at least this long (every split; default 0)")
    _loss_options(p)
    p.add_argument("--fork-term", action="store_true",
                   help="with --anchored: add a learned cost per fork and join of a parallel region to the answer's "
                        "time ratio (model.ModelConfig.fork_term)")
    p.add_argument("--features", choices=tuple(FEATURE_SETS), default="parallel",
                   help="which computation features the model reads: plain (before the compiler view), compiler "
                        "(before the traffic view), traffic (before the parallel view), parallel (before the memory "
                        "view; default) or memory (all)")
    p.add_argument("--plain-features", dest="features", action="store_const", const="plain",
                   help="the same as --features plain")
    p.add_argument("--widen", action="store_true",
                   help="with --init-from a model from before the compiler, traffic, parallel or memory view: add the missing inputs "
                        "with zero weights (it starts answering as the file does) and fine-tune them in")
    p.add_argument("--ema", type=float, default=0.0, metavar="DECAY",
                   help="validate and save an exponential moving average of the weights with this decay per step "
                        "(e.g. 0.999; default 0: the weights themselves)")
    p.add_argument("--augment", type=int, default=0, metavar="N",
                   help="add up to N relabelled programs per training program: a measured single interchange read "
                        "as another program's source order, its rows' speedups divided by the interchange's "
                        "(no new runs; default 0: none)")
    p.add_argument("--init-from", metavar="MODEL",
                   help="fine-tune: start from this cost model's weights, input statistics and architecture "
                        "(so not with --tiny, --dropout or --normalize), e.g. to add new labels at a low --lr")
    return p


def _loss_options(p: argparse.ArgumentParser) -> None:
    """The options of what the loss teaches beside `--loss` (parser)."""
    p.add_argument("--rank-weight", type=float, default=0.0,
                   help="add this much pairwise ranking loss to --loss (default 0: that loss alone, as the paper)")
    p.add_argument("--loss", choices=LOSSES, default="mape",
                   help="mape (the paper's; default) or log: |log predicted - log measured|, symmetric in gains and losses")
    p.add_argument("--order-only", metavar="DATA", action="append", default=[],
                   help="a folder of DATA whose labels teach only the order of each program's schedules (the rank "
                        "loss), not their magnitude: labels timed on another machine (repeatable)")
    p.add_argument("--rank-teacher", metavar="MODEL",
                   help="the rank loss orders each program's schedules by this cost model's predictions instead of "
                        "the measured speedups (with --rank-weight; distils an order)")
    p.add_argument("--absolute-weight", type=float, default=0.0, metavar="W",
                   help="add W x the error of the anchored scores against minus the measured log times of each "
                        "schedule and its original (a second target every row holds; with --anchored)")
    p.add_argument("--other-machine", metavar="DATA", action="append", default=[],
                   help="a folder of labels timed on another machine: its training programs teach the shared layers "
                        "through a regression head of that machine's own; never validates or tests, and the saved "
                        "model answers with this machine's head (repeatable)")
    p.add_argument("--snap-neutral", type=float, default=0.0, metavar="EPS",
                   help="teach training speedups within a factor 1 + EPS of 1.0x as 1.0x (timing noise, not a "
                        "speedup; validation, test and the reports read the measured ones; default 0: off)")
    p.add_argument("--noise-weight", type=float, default=0.0, metavar="TAU",
                   help="weigh each training row by TAU^2 / (TAU^2 + s^2), s its program's timing noise "
                        "(its identity row and the spread of its original's times; TAU ~ the training MAPE, "
                        "0.15): noisy programs teach less; reported MAPE stays unweighted (default 0: off)")


def _config(args: argparse.Namespace) -> tuple[list[str], str, TrainConfig]:
    """(data, out, the training settings) of the command line."""
    if args.init_from and (args.tiny or args.dropout is not None or args.normalize or args.width != 1.0
                           or args.features != "parallel"):
        raise UsageError("--init-from takes the architecture from the model file: drop --tiny, --width, --dropout, "
                         "--normalize and --features/--plain-features")
    if args.width <= 0:
        raise UsageError(f"--width {args.width:g}: a factor of the layers' widths is positive")
    if args.fork_term and not (args.anchored and FEATURE_SETS[args.features] >= FEATURE_SETS["parallel"]):
        raise UsageError("--fork-term reads the parallel view and adds to an anchored answer: add --anchored "
                         "(and --features parallel or memory)")
    if args.augment < 0:
        raise UsageError(f"--augment {args.augment}: a number of relabelled programs per training program is >= 0")
    if not 0.0 <= args.ema < 1.0:
        raise UsageError(f"--ema {args.ema:g}: a decay lies in [0, 1) (0: off; 0.999 averages ~1,000 steps)")
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        raise UsageError("--device cuda: no CUDA device is available; use --device cpu")
    test_share = 1.0 - sum(TrainConfig.fractions)  # fixed, so that every run tests on the same programs
    if not 0.0 < args.validation_share < 1.0 - test_share:
        raise UsageError(f"--validation-share must lie strictly between 0 and {1.0 - test_share:g} "
                         f"(the test share is {test_share:g})")
    cfg = TrainConfig(epochs=args.epochs, batch_size=args.batch_size, max_lr=args.lr, seed=args.seed,
                      device=args.device, threads=args.threads, model=ModelConfig.tiny() if args.tiny else ModelConfig(),
                      rank_weight=args.rank_weight, weight_decay=args.weight_decay,
                      train_share=args.train_share, min_baseline_ms=args.min_baseline_ms,
                      loss=args.loss, init_seed=args.init_seed, init_from=args.init_from,
                      order_only=tuple(args.order_only), rank_teacher=args.rank_teacher,
                      absolute_weight=args.absolute_weight, widen=args.widen, noise_weight=args.noise_weight,
                      other_machines=tuple(args.other_machine), ema=args.ema, augment=args.augment,
                      snap_neutral=args.snap_neutral,
                      fractions=(1.0 - test_share - args.validation_share, args.validation_share))
    if args.dropout is not None:
        cfg.model = dataclasses.replace(cfg.model, dropout=args.dropout)
    if args.normalize:
        cfg.model = dataclasses.replace(cfg.model, normalize=True)
    if args.anchored:
        cfg.model = dataclasses.replace(cfg.model, anchored=True)
    if args.fork_term:
        cfg.model = dataclasses.replace(cfg.model, fork_term=True)
    cfg.model = dataclasses.replace(cfg.model.scaled(args.width), comp_features=FEATURE_SETS[args.features])
    return args.data, args.out, cfg


if __name__ == "__main__":
    run_main(main)
