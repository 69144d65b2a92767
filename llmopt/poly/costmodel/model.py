"""The Tiramisu cost model (paper 002, §4.4 and appendix A.1): speedup of a schedule, predicted.

Three layers, as in Figure 2:

1. computation embedding: an MLP maps each computation vector (`features.COMP_FEATURES`) to an
   embedding of `embed` floats (A.1: 1235 -> 600 -> 350 -> 200 -> 180);
2. recursive loop embedding: bottom-up over the loop tree of the transformed schedule, each loop's
   *loop embedding unit* runs one LSTM over the embeddings of the computations directly in it and a
   second LSTM over the embeddings of its child loops, and merges the two final hidden states with
   a feed-forward layer (A.1: 360 -> 200 -> 180); the virtual root's embedding is the program's;
3. regression: an MLP (A.1: 180 -> 200 -> 180 -> 1) gives log(speedup); the model returns its
   exponential, so a prediction is positive by construction and the MAPE loss sees speedups.

Every layer is followed by ELU and dropout 0.225 (A.1), weights are Glorot-initialized.  With
`ModelConfig.normalize` the computation vectors are first standardized by the training split's mean
and standard deviation per feature (`set_input_stats`, kept in the model file): not in the paper;
our features are squashed to small, uneven ranges and the network trained on them directly barely
moves from a constant (docs/results/costmodel/normalized/).  The sizes
are the paper's (about 1.3 M parameters, cheap enough for a CPU; `ModelConfig.tiny()` is a small
version for tests).  A batch holds samples of one tree structure (A.1 batches transformations of
one program for the same reason): their computation vectors are stacked and the recursion runs
once for the whole batch.

With `ModelConfig.anchored` the network's output is a score and the answer is score(transformed) -
score(untransformed) (`Tree.anchor`), so the identity schedule is 1.0x by construction and the network
only has to learn what a schedule changes, not each program's level.  Why: trained from scratch at lr 1e-4
on one machine's ~370 programs, the anchored network is the first to pass answering 1.0x on every held-out
set; the plain one at that rate learns the same slowdowns but not the retest sets (docs/results/costmodel/
README.md, thirty-eighth session).  It orders schedules worse than the shipped model, so searches keep that one.

With `ModelConfig.fork_term` (anchored models only) the answer adds an analytic cost the network cannot learn
from our few examples: a parallel loop inside other loops forks and joins once per iteration of them, and the
rows that do it hundreds of thousands of times run 0.01x (docs/results/costmodel/, fiftieth session).  The
answer's time ratio is the network's plus C x `features.fork_load` (forks per iteration of the untransformed
program), C a learned scalar that starts at `FORK_COST`; a network that extrapolates from a dozen such rows
answers 0.7x where the measured speedup is 0.01x.

`save_model` / `load_model` keep the weights with their config and metadata (an `Ensemble`, the mean
of several trained models' log speedups, a `Blend`, a network with gradient-boosted trees
(`llmopt.poly.costmodel.boosted`), and such trees alone (`boosted.Boosted`) are saved and loaded the same way);
`predict(model, program, schedule)` and `predict_many` answer the speedup over the untransformed program.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from llmopt.errors import LlmoptError
from llmopt.outputs import atomic_target
from llmopt.poly.costmodel.boosted import Boosted  # lightgbm is imported only when trees are read or trained
from llmopt.poly.costmodel.features import (
    COMP_FEATURES,
    FEATURE_COUNTS,
    PLAIN_FEATURES,
    Tree,
    featurizer,
    fork_load,
)
from llmopt.poly.program import Program
from llmopt.poly.schedule import Schedule, State, state

MODEL_VERSION = 1
MAX_LOG_SPEEDUP = 8.0  # |log speedup| softly capped (tanh) near exp(8) ~ 3000x: exp() stays finite, gradients live
# A fork and join of 2 threads (~1 us) over one loop iteration (~1 ns): the median of (1/speedup - 1) / fork_load over
# the fcaa rows whose load passes 1e-3 is 300-1300 (docs/results/costmodel/, fiftieth session).  The start of C.
FORK_COST = 1000.0


class CostModelError(LlmoptError):
    """A cost model file that is missing or unreadable: the message says which and what to do."""


@dataclass(frozen=True)
class ModelConfig:
    comp_features: int = COMP_FEATURES
    comp_layers: tuple[int, ...] = (600, 350, 200)
    embed: int = 180
    loop_layers: tuple[int, ...] = (200,)
    head_layers: tuple[int, ...] = (200, 180)
    dropout: float = 0.225
    normalize: bool = False  # standardize the inputs (module docstring); absent in older model files
    anchored: bool = False  # answer score(tree) - score(untransformed tree) (module docstring); absent in older files
    fork_term: bool = False  # add C x fork_load to the time ratio (module docstring; anchored only); absent in older files

    def scaled(self, factor: float) -> ModelConfig:
        """Every layer `factor` times as wide (at least 1 unit); the inputs and the output stay."""
        def size(n: int) -> int:
            return max(1, round(n * factor))

        return dataclasses.replace(self, comp_layers=tuple(map(size, self.comp_layers)), embed=size(self.embed),
                                   loop_layers=tuple(map(size, self.loop_layers)),
                                   head_layers=tuple(map(size, self.head_layers)))

    @staticmethod
    def tiny() -> ModelConfig:
        """A small model for tests: same architecture, ~1/100 of the parameters."""
        return ModelConfig(comp_layers=(64,), embed=32, loop_layers=(32,), head_layers=(32,), dropout=0.0)


def mlp(sizes: Sequence[int], dropout: float, last_plain: bool = False) -> nn.Sequential:
    """Linear layers, each followed by ELU and dropout (A.1); `last_plain` leaves the last one bare."""
    layers: list[nn.Module] = []
    for k, (a, b) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
        layers.append(nn.Linear(a, b))
        if not (last_plain and k == len(sizes) - 2):
            layers += [nn.ELU(), nn.Dropout(dropout)]
    return nn.Sequential(*layers)


def _initialize(module: nn.Module, head: nn.Sequential) -> None:
    """A.1's initialization of `module`: Glorot weights, zero biases; `head`'s last layer zero, so that the
    answer starts at speedup 1 (exp(0)) everywhere: MAPE 1 at worst."""
    for p in module.parameters():
        if p.dim() == 2:
            nn.init.xavier_uniform_(p)
        else:
            nn.init.zeros_(p)
    nn.init.zeros_(head[-1].weight)


class CostModel(nn.Module):
    """Computation embedding -> recursive loop embedding -> regression (module docstring)."""

    def __init__(self, cfg: ModelConfig = ModelConfig()):
        super().__init__()
        self.cfg = cfg
        e = cfg.embed
        self.comp = mlp([cfg.comp_features, *cfg.comp_layers, e], cfg.dropout)
        self.comp_lstm = nn.LSTM(e, e, batch_first=True)
        self.loop_lstm = nn.LSTM(e, e, batch_first=True)
        self.merge = mlp([2 * e, *cfg.loop_layers, e], cfg.dropout)
        self.head = mlp([e, *cfg.head_layers, 1], cfg.dropout, last_plain=True)
        _initialize(self, self.head)
        if cfg.fork_term:  # after the initialization above, which would zero it
            self.log_fork_cost = nn.Parameter(torch.tensor(math.log(FORK_COST)))
        if cfg.normalize:  # identity until set_input_stats; buffers, so saved and loaded with the weights
            self.register_buffer("in_mean", torch.zeros(cfg.comp_features))
            self.register_buffer("in_std", torch.ones(cfg.comp_features))

    def set_input_stats(self, comps: np.ndarray) -> None:
        """Standardize inputs by these computation vectors' statistics ([n, COMP_FEATURES], the training
        split's); a feature constant there is only centred."""
        comps = comps[:, : self.cfg.comp_features]
        std = comps.std(0)
        self.in_mean.copy_(torch.from_numpy(comps.mean(0)).float())
        self.in_std.copy_(torch.from_numpy(np.where(std < 1e-6, 1.0, std)).float())

    def _summary(self, lstm: nn.LSTM, items: list[torch.Tensor], batch: int, like: torch.Tensor) -> torch.Tensor:
        """Final hidden state of `lstm` over `items` (each [B, E]); zeros when there are none."""
        if not items:
            return like.new_zeros(batch, self.cfg.embed)
        _, (h, _) = lstm(torch.stack(items, dim=1))
        return h[-1]

    def _loop(self, node: tuple, comps: torch.Tensor) -> torch.Tensor:
        """The loop embedding of `node` ([B, E]): LSTMs over its computations and child loops, merged."""
        mine = [comps[:, c] for c in node[1:] if isinstance(c, int)]
        loops = [self._loop(c, comps) for c in node[1:] if not isinstance(c, int)]
        h_comp = self._summary(self.comp_lstm, mine, comps.shape[0], comps)
        h_loop = self._summary(self.loop_lstm, loops, comps.shape[0], comps)
        return self.merge(torch.cat([h_comp, h_loop], dim=-1))

    def log_speedup(self, comps: torch.Tensor, structure: tuple, head: nn.Module | None = None) -> torch.Tensor:
        """comps [B, n, COMP_FEATURES] of B samples sharing `structure` -> log speedup [B]; `head` replaces the
        regression head (another machine's, in training: `train.TrainConfig.other_machines`)."""
        comps = comps[..., : self.cfg.comp_features]  # a model from before a view reads the features before it
        if self.cfg.normalize:
            comps = (comps - self.in_mean) / self.in_std
        program = self._loop(structure, self.comp(comps))
        out = (self.head if head is None else head)(program).squeeze(-1)
        return MAX_LOG_SPEEDUP * torch.tanh(out / MAX_LOG_SPEEDUP)

    def new_head(self) -> nn.Sequential:
        """A regression head shaped and initialized like the model's own (Glorot weights, zero biases, a zero
        last layer: it starts answering 1.0x)."""
        head = mlp([self.cfg.embed, *self.cfg.head_layers, 1], self.cfg.dropout, last_plain=True)
        _initialize(head, head)
        return head.to(next(self.parameters()).device)

    def forward(self, comps: torch.Tensor, structure: tuple) -> torch.Tensor:
        """Predicted speedups [B] (positive)."""
        return torch.exp(self.log_speedup(comps, structure))


def with_forks(model: CostModel | Ensemble, log_speedup: torch.Tensor, trees: Sequence[Tree]) -> torch.Tensor:
    """An anchored model's log speedups of `trees` with its fork term (module docstring), unchanged without one:
    the time ratio exp(-log speedup) plus C x fork_load."""
    if not model.cfg.fork_term:
        return log_speedup
    load = torch.tensor([fork_load(t) for t in trees], dtype=log_speedup.dtype, device=log_speedup.device)
    return -torch.log(torch.exp(-log_speedup) + model.log_fork_cost.exp() * load)


def _mean(values: torch.Tensor, weight: torch.Tensor | None) -> torch.Tensor:
    return values.mean() if weight is None else (values * weight).mean()


def mape(pred: torch.Tensor, target: torch.Tensor, weight: torch.Tensor | None = None) -> torch.Tensor:
    """Mean absolute percentage error, as a fraction (the paper's loss and metric); each sample's error times
    `weight` when given (weights that average 1 over a training set keep the loss's scale)."""
    return _mean((pred - target).abs() / target.clamp_min(1e-9), weight)


def log_error(log_pred: torch.Tensor, target: torch.Tensor,
              weight: torch.Tensor | None = None) -> torch.Tensor:
    """Mean |log prediction - log target|: a 2x gain predicted as 1x costs what a 2x loss predicted as 1x
    costs.  MAPE does not: it charges an over-prediction without bound and an under-prediction at most 1,
    so a model trained on it learns slowdowns and predicts ~1x for every gain (docs/results/costmodel/loss/)."""
    return _mean((log_pred - target.clamp_min(1e-9).log()).abs(), weight)


def rank_loss(log_pred: torch.Tensor, target: torch.Tensor, min_gain: float = 0.05) -> torch.Tensor:
    """Pairwise logistic loss on the order of a batch's predictions: for every pair whose measured
    speedups differ by more than `min_gain` (timing noise is ~4%), -log sigmoid(log p_fast - log p_slow),
    weighted by the pair's measured log ratio.  A search needs the order of one program's schedules,
    which MAPE alone barely teaches (docs/results/costmodel/ranking/); 0 when no pair qualifies."""
    log_y = target.clamp_min(1e-9).log()
    gap = log_y[:, None] - log_y[None, :]
    pairs = gap > math.log1p(min_gain)  # (i, j): i measured faster than j
    if not pairs.any():
        return log_pred.sum() * 0.0
    margin = (log_pred[:, None] - log_pred[None, :])[pairs]
    weight = gap[pairs]
    return (nn.functional.softplus(-margin) * weight).sum() / weight.sum()


def group(trees: Sequence[Tree]) -> dict[tuple, list[int]]:
    """Sample indices by tree structure (what one forward pass can batch)."""
    out: dict[tuple, list[int]] = {}
    for k, t in enumerate(trees):
        out.setdefault(t.structure, []).append(k)
    return out


@torch.no_grad()
def _log_speedups(model: CostModel, trees: Sequence[Tree]) -> np.ndarray:
    """The network's outputs for featurized samples, in order (eval mode, batched by structure)."""
    model.eval()
    device = next(model.parameters()).device
    out = np.zeros(len(trees))
    for structure, idx in group(trees).items():
        comps = torch.from_numpy(np.stack([trees[k].comps for k in idx])).to(device)
        out[idx] = model.log_speedup(comps, structure).cpu().numpy()
    return out


def predict_trees(model: CostModel | Ensemble | Blend | Boosted, trees: Sequence[Tree]) -> np.ndarray:
    """Predicted speedups of featurized samples, in order; an anchored model's scores less their programs'
    untransformed trees' (each anchor scored once); a blend's weighted geometric mean of its two answers."""
    if isinstance(model, Boosted):
        return np.exp(model.log_speedups(trees))
    if isinstance(model, Blend):  # a learner of weight 0 is not asked (a blend fitted to the trees alone is faster)
        w = model.weight
        trees_part = w * model.trees.log_speedups(trees) if w > 0 else 0.0
        network_part = (1 - w) * np.log(predict_trees(model.network, trees)) if w < 1 else 0.0
        return np.exp(trees_part + network_part)
    out = _log_speedups(model, trees)
    if model.cfg.anchored:
        anchors = {id(t.anchor): t.anchor for t in trees}
        scored = dict(zip(anchors, _log_speedups(model, list(anchors.values())), strict=True))
        out = out - np.array([scored[id(t.anchor)] for t in trees])
        with torch.no_grad():
            out = with_forks(model, torch.from_numpy(out), trees).numpy()
    return np.exp(out)


def comp_features(model: CostModel | Ensemble | Blend | Boosted) -> int:
    """How many features a computation's vector has for `model` (a blend's: its network's)."""
    return model.comp_features if isinstance(model, Boosted) else model.cfg.comp_features


def model_featurizer(model: CostModel | Ensemble | Blend | Boosted, prog: Program) -> Callable[[State], Tree]:
    """`features.featurizer` for what `model` reads: without the compiler view for a model trained before it."""
    return featurizer(prog, compiler_view=comp_features(model) > PLAIN_FEATURES)


def predict_many(model: CostModel, prog: Program, schedules: Sequence[Schedule]) -> np.ndarray:
    """Predicted speedup over the untransformed program of each schedule of `prog`."""
    featurize = model_featurizer(model, prog)
    return predict_trees(model, [featurize(state(prog, s)) for s in schedules])


def predict(model: CostModel, prog: Program, schedule: Schedule) -> float:
    """Predicted speedup of `schedule` over the untransformed `prog` (no compiling, no running)."""
    return float(predict_many(model, prog, [schedule])[0])


class Ensemble(nn.Module):
    """Cost models trained alike from different initial weights, answering the mean of their log speedups
    (the geometric mean of their speedups).  Why: which rare 10x schedule one model ranks first varies between
    training runs more than its MAPE does (docs/results/costmodel/), and a search trusts that first place;
    the mean keeps what the runs agree on.  Used wherever a `CostModel` is (`predict_trees`, the searches)."""

    def __init__(self, members: Sequence[CostModel]):
        super().__init__()
        if not members:
            raise CostModelError("an ensemble needs at least one cost model")
        if len({m.cfg.comp_features for m in members}) > 1:
            raise CostModelError("the ensemble's members read different features: train them with one llmopt")
        if len({(m.cfg.anchored, m.cfg.fork_term) for m in members}) > 1:
            raise CostModelError("an ensemble's members must be all anchored or all not, with a fork term or without")
        self.members = nn.ModuleList(members)
        self.cfg = members[0].cfg

    @property
    def log_fork_cost(self) -> torch.Tensor:
        """The members' fork costs' geometric mean (the fork term reads one C)."""
        return torch.stack([m.log_fork_cost for m in self.members]).mean()

    def log_speedup(self, comps: torch.Tensor, structure: tuple) -> torch.Tensor:
        return torch.stack([m.log_speedup(comps, structure) for m in self.members]).mean(0)

    def forward(self, comps: torch.Tensor, structure: tuple) -> torch.Tensor:
        return torch.exp(self.log_speedup(comps, structure))


class Blend(nn.Module):
    """A network (or `Ensemble`) and gradient-boosted trees on the same inputs (`boosted.Boosted`), answering
    `weight` x the trees' log speedup + (1 - `weight`) x the network's: the two kinds of learner err in different
    places, so the blend misses less than either (`llmopt.poly.costmodel.boosted`).  Used wherever a `CostModel`
    is; it reads the network's features (`cfg`)."""

    def __init__(self, network: CostModel | Ensemble, trees, weight: float):
        super().__init__()
        if isinstance(network, Blend) or not 0.0 <= weight <= 1.0:
            raise CostModelError("a blend is one network or ensemble and trees, the trees' weight in [0, 1]")
        self.network, self.trees, self.weight = network, trees, float(weight)
        self.cfg = network.cfg


def _weights(model: CostModel) -> dict:
    return {"config": dataclasses.asdict(model.cfg), "state": model.state_dict()}


def _body(model: CostModel | Ensemble) -> dict:
    return {"members": [_weights(m) for m in model.members]} if isinstance(model, Ensemble) else _weights(model)


def save_model(model: CostModel | Ensemble | Blend | Boosted, path: str | os.PathLike, meta: dict | None = None
               ) -> None:
    """Weights, config and metadata (split, metrics) in one file, written atomically; an ensemble keeps
    each member's weights and config, a blend its network's, its trees and their weight, trees alone their own."""
    if isinstance(model, Blend):
        body = {"blend": {"network": _body(model.network), "trees": model.trees.state(), "weight": model.weight}}
    elif isinstance(model, Boosted):
        body = {"trees": model.state()}
    else:
        body = _body(model)
    with atomic_target(path) as tmp:
        torch.save({"version": MODEL_VERSION, **body, "meta": meta or {}}, tmp)


def _member(blob: dict, device: str) -> CostModel:
    cfg = ModelConfig(**{k: tuple(v) if isinstance(v, list) else v for k, v in blob["config"].items()})
    model = CostModel(cfg).to(device)
    model.load_state_dict(blob["state"])
    return model


def _network(blob: dict, device: str) -> CostModel | Ensemble:
    return Ensemble([_member(b, device) for b in blob["members"]]) if "members" in blob else _member(blob, device)


def _blend(blob: dict, device: str) -> Blend:
    return Blend(_network(blob["network"], device), Boosted.from_state(blob["trees"]), blob["weight"])


def _read(blob: dict, device: str) -> CostModel | Ensemble | Blend | Boosted:
    if "blend" in blob:
        return _blend(blob["blend"], device)
    return Boosted.from_state(blob["trees"]) if "trees" in blob else _network(blob, device)


def load_model(path: str | os.PathLike, device: str = "cpu") -> tuple[CostModel | Ensemble | Blend | Boosted, dict]:
    """(model, ensemble, blend in eval mode or trees alone, its metadata); CostModelError with what to do when the
    file is not there or cannot be read."""
    path = Path(path)
    if not path.is_file():
        raise CostModelError(f"no cost model at {path}: train one with `python -m llmopt.poly.costmodel.train "
                             f"DATA --out {path.parent}` or pass --cost-model PATH")
    try:
        blob = torch.load(path, map_location=device, weights_only=False)
        model = _read(blob, device)
    except (OSError, RuntimeError, KeyError, TypeError, EOFError, ValueError) as err:
        raise CostModelError(f"cannot read cost model {path}: {err}") from None
    if comp_features(model) not in FEATURE_COUNTS:
        raise CostModelError(f"cost model {path} reads {comp_features(model)} features, this llmopt makes "
                             f"{COMP_FEATURES} (or the first {' or '.join(map(str, FEATURE_COUNTS[:-1]))}): "
                             "retrain it")
    if not isinstance(model, Boosted):  # trees have no training mode
        model.eval()
    return model, blob.get("meta", {})
