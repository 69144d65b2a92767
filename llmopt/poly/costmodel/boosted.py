"""Gradient-boosted trees on the cost model's own inputs, and their blend with the network (issue 16).

    python -m llmopt.poly.costmodel.boosted DATA --network MODEL.pt --out BLEND.pt [--weight fit|W] [--seeds 3]
    python -m llmopt.poly.costmodel.boosted DATA --fractions 0.75 0.05 --fork-cost C --out TREES.pt

Why: seeds of one network make correlated errors (an ensemble of four gains 0.009 over one), while trees read
the same inputs and err elsewhere (docs/results/costmodel/, sixtieth and sixty-first sessions).

The trees read each (program, schedule)'s computation vectors (`features.featurize`) pooled over the computations
(mean, max, min) for the transformed tree, for the untransformed one (`Tree.anchor`) and for their difference
(computation by computation); the same three averaged with each computation weighted by its share of the
untransformed iterations (Amdahl: a computation's change matters by its share of the work); the vectors
(transformed, untransformed, difference) of the computation doing most of the work, with its share and the next
one's; how evenly the parallel regions share the work (`parallel_left` and the top computation's `Tree.busy`); and
the count of computations, `features.fork_load`, `features.changed_share` and `features.removal_left`
(`tree_features`).
Target: log speedup, each row weighted by 1/speedup; objective L1 (whose optimum in a leaf is the answer that
minimizes MAPE).  Boosters of several bagging seeds answer the mean of their log speedups.  Huber (near L2 in log
space) was the other half until the sixty-third session: the two together beat either on the 68 validation
programs, but out of fold on the 1,070 training programs an L1 booster with a Huber one scores 0.1629 against
0.1619 for two L1 seeds (`--objectives l1 huber` trains both).  The weight 1/speedup is
MAPE's for an answer of 1 only: near an answer a a row's error weighs a/speedup, so each booster runs its rounds in
`BoostConfig.stages` parts, reweighting the rows by their answers so far before each part after the first
(`_boost`).  Why: the rows that run 2-8x faster were answered 0.2-0.6 of that, too light to pull their leaves
(sixty-third session: 0.1624 -> 0.1618 and 0.1628 -> 0.1622 out of fold on the training programs, two seeds).
The log answer is then scaled by `BoostConfig.power` (1.08, fitted out of fold): the medians L1 leaves answer
shrink toward 1x.

With a fork cost C (the blend's network's `model.ModelConfig.fork_term`) the trees answer as that network does: a
time ratio learned by the trees plus C x `features.fork_load`, and they are taught the time ratio the fork term
leaves (1/speedup - C x load, at least `FORK_FLOOR` of the measured one).  Why: trees cannot extrapolate, and the
few rows that fork a parallel loop hundreds of thousands of times run 0.01x where trees taught the raw labels
answered 0.1-0.2x, a 10-20x error each.

Likewise the work LLVM deletes: the trees' time ratio is multiplied by `features.removal_left`, the share of the
untransformed iterations left once the innermost loops that move no access are gone (a time loop interchanged
innermost), and they are taught the ratio over it.  Why: those rows run 14-65x faster, where the trees, even with
the invariance view among their inputs, answered 0.2-0.5x: the 70 training rows where the deletions leave under
half the work are too few, and weighted by 1/speedup too light, to fill leaves of their own (sixty-second session:
0.1626 -> 0.1605 on the fcaa test programs, three boosters).

`Boosted` holds the boosters; `model.Blend` (a network or ensemble with them, answering
w log p_trees + (1 - w) log p_network) is saved and loaded like any cost model (`model.load_model`), so
`llmopt loops schedule --search beam-model --cost-model BLEND.pt`, the agent's reward and `eval.costmodel_eval`
use it.  The command trains the trees on the network's training programs (its split, from its metadata), reports
the trees, the network and the blend on its validation and test programs, and writes the blend.  Without
`--network` it writes the trees alone (`build_alone`: a `Boosted` file, loaded and used like any cost model), on the
split `--fractions` / `--split-seed` draws and with the fork cost `--fork-cost` (a network's C: the fcaa recipe's
four learned 815): since the sixty-second session the blend's fitted weight has been 1.0, so the trees alone answer
as it does without four networks to train (~100 minutes on 2 cores) and carry.  lightgbm is imported here only,
when trees are trained or read.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from llmopt.errors import UsageError, run_main
from llmopt.poly.costmodel.features import (
    COMP_FEATURES,
    Tree,
    changed_share,
    fork_load,
    removal_left,
    work_shares,
)

TREE_FEATURES_VERSION = 3  # bump when `tree_features` changes: a file's boosters read the layout they trained on
# (2: the computation vectors carry the fill and invariance views; `features.removal_left` is the last column;
# 3: `parallel_left` and the busiest thread's share of the top computation, before the count of computations)
TREE_FEATURES = 15 * COMP_FEATURES + 8
FORK_COLUMN = TREE_FEATURES - 5  # where `tree_features` keeps `features.fork_load`
LEFT_COLUMN = TREE_FEATURES - 1  # and `features.removal_left`
FORK_FLOOR = 0.2  # the fork term takes at most 80% of a row's measured time (its load is an estimate; timings vary)
STAGE_WEIGHT_CLIP = 3.0  # a reweighted row weighs 1/3 to 3 (`_boost`): a few wild rows must not fill the leaves
# (10 gained less out of fold, sixty-third session)


def _pooled(comps: np.ndarray) -> np.ndarray:
    return np.concatenate([comps.mean(0), comps.max(0), comps.min(0)])


def _anchor_part(anchor: Tree) -> tuple:
    """What `tree_features` reads of the untransformed tree alone: the same for every schedule of a program."""
    comps = anchor.comps
    work = work_shares(comps)
    order = np.argsort(-work, kind="stable")
    top, second = order[0], (work[order[1]] if len(order) > 1 else 0.0)
    return work, top, second, _pooled(comps), work @ comps


def tree_features(tree: Tree, anchor_part: tuple | None = None) -> np.ndarray:
    """The trees' inputs for one featurized (program, schedule) (module docstring): TREE_FEATURES floats.
    `anchor_part`: `_anchor_part(tree.anchor)`, when the caller keeps it for the program's other schedules."""
    anchor, comps = tree.anchor.comps, tree.comps
    work, top, second, pooled_anchor, work_anchor = anchor_part or _anchor_part(tree.anchor)
    return np.concatenate([_pooled(comps), pooled_anchor, _pooled(comps - anchor),
                           work @ comps, work_anchor, work @ (comps - anchor),
                           comps[top], anchor[top], comps[top] - anchor[top],
                           [parallel_left(tree, work), _busy(tree)[top], len(comps), fork_load(tree),
                            changed_share(tree), work[top], second, removal_left(tree)]]).astype(np.float32)


def _busy(tree: Tree) -> np.ndarray:
    """`Tree.busy`, ones (serial) for a tree made without the views."""
    return tree.busy if tree.busy is not None else np.ones(len(tree.comps), np.float32)


def parallel_left(tree: Tree, work: np.ndarray | None = None) -> float:
    """The share of the untransformed program's time `tree` would take if its parallel regions were all the
    difference: each computation's work share (`work`: `features.work_shares` of the untransformed tree) times the
    share its busiest thread runs (`Tree.busy`: 1 serial, 1/2 for an even split on 2 threads, 3/4 for a triangle
    split at its outer loop).  Why: the parallel view says which loop forks and how often, not how evenly its
    iterations share the work (features module docstring, the balance)."""
    return float((work if work is not None else work_shares(tree.anchor.comps)) @ _busy(tree))


def feature_matrix(trees: Sequence[Tree]) -> np.ndarray:
    """`tree_features` of each sample, one row each."""
    if not trees:
        return np.zeros((0, TREE_FEATURES), np.float32)
    anchors: dict[int, tuple] = {}  # a search's candidates share their program's untransformed tree
    for t in trees:
        if id(t.anchor) not in anchors:
            anchors[id(t.anchor)] = _anchor_part(t.anchor)
    return np.stack([tree_features(t, anchors[id(t.anchor)]) for t in trees])


@dataclass(frozen=True)
class BoostConfig:
    """LightGBM's settings (the sixtieth session's, chosen on validation programs: 255 leaves x 400 rounds)."""

    leaves: int = 255
    rounds: int = 400
    learning_rate: float = 0.03
    min_leaf: int = 40  # min_data_in_leaf
    feature_fraction: float = 0.5  # of the features each tree may split on (0.3 before the sixty-second session)
    bagging_fraction: float = 0.8
    seeds: int = 3  # boosters of other bagging seeds for each objective, all averaged in log space
    objectives: tuple[str, ...] = ("l1",)  # LightGBM's names (module docstring; ("l1", "huber") before the 63rd)
    threads: int = 1
    stages: int = 4  # runs of the rounds, the rows reweighted before each after the first (`_boost`; 1: none)
    # the log answer times this: L1 leaves answer medians, which shrink toward 1x where the inputs cannot tell
    # rows apart, and MAPE's optimum lies further out.  1.08 has the least MAPE out of fold on the 1,070 training
    # programs (1.06-1.1 flat: 0.1618 -> 0.1614 for one booster, 0.1610 -> 0.1606 for four; sixty-fourth session)
    power: float = 1.08

    def params(self, objective: str, seed: int) -> dict:
        return dict(objective=objective, learning_rate=self.learning_rate, num_leaves=self.leaves,
                    min_data_in_leaf=self.min_leaf, feature_fraction=self.feature_fraction,
                    bagging_fraction=self.bagging_fraction, bagging_freq=1, lambda_l2=1.0,
                    num_threads=self.threads, verbose=-1, seed=seed)


class Boosted:
    """Boosters trained on `tree_features`, answering the mean of their log speedups, with the fork term of
    `fork_cost` (module docstring; 0: none)."""

    def __init__(self, boosters: Sequence, config: BoostConfig, fork_cost: float = 0.0,
                 comp_features: int = COMP_FEATURES):
        if not boosters:
            raise UsageError("trees need at least one booster")
        self.boosters, self.config, self.comp_features = list(boosters), config, comp_features
        self.fork_cost = float(fork_cost)

    def log_speedups(self, trees: Sequence[Tree]) -> np.ndarray:
        if not trees:
            return np.zeros(0)
        if trees[0].comps.shape[1] != self.comp_features:
            raise ValueError(f"the trees read {self.comp_features} features a computation, these samples carry "
                             f"{trees[0].comps.shape[1]}")
        return self.answer(feature_matrix(trees))

    def answer(self, x: np.ndarray) -> np.ndarray:
        """Log speedups of feature rows (`feature_matrix`): the boosters' mean time ratio, times the share of the
        work the removed loops leave, plus the fork term (module docstring), the log scaled by `config.power`."""
        learned = np.mean([b.predict(x, num_threads=1) for b in self.boosters], axis=0)
        return -self.config.power * np.log(x[:, LEFT_COLUMN].astype(np.float64) * np.exp(-learned)
                                           + self.fork_cost * x[:, FORK_COLUMN].astype(np.float64))

    def state(self) -> dict:
        """What a model file keeps: each booster's text, compressed (about a quarter of the size)."""
        return {"version": TREE_FEATURES_VERSION, "comp_features": self.comp_features, "fork_cost": self.fork_cost,
                "config": dataclasses.asdict(self.config),
                "boosters": [zlib.compress(b.model_to_string().encode(), 6) for b in self.boosters]}

    @classmethod
    def from_state(cls, blob: dict) -> Boosted:
        """The trees a model file kept; ValueError when they read another feature layout than this llmopt makes."""
        import lightgbm as lgb

        if blob.get("version") != TREE_FEATURES_VERSION or blob.get("comp_features") != COMP_FEATURES:
            raise ValueError(f"its trees read feature layout {blob.get('version')} of {blob.get('comp_features')} "
                             f"features, this llmopt makes {TREE_FEATURES_VERSION} of {COMP_FEATURES}: retrain them")
        boosters = [lgb.Booster(model_str=zlib.decompress(b).decode()) for b in blob["boosters"]]
        if any(b.num_feature() != TREE_FEATURES for b in boosters):
            raise ValueError(f"its trees read {boosters[0].num_feature()} features, this llmopt makes {TREE_FEATURES}")
        # files from before the sixty-fourth session answered unscaled
        config = BoostConfig(**{"power": 1.0, **blob["config"], "objectives": tuple(blob["config"]["objectives"])})
        return cls(boosters, config, blob["fork_cost"], blob["comp_features"])


def fork_free(x: np.ndarray, speedups: np.ndarray, fork_cost: float) -> np.ndarray:
    """The speedups the trees are taught: the time ratio less the fork term, at least FORK_FLOOR of it."""
    ratio = 1.0 / np.asarray(speedups, dtype=np.float64)
    return 1.0 / np.maximum(ratio - fork_cost * x[:, FORK_COLUMN].astype(np.float64), FORK_FLOOR * ratio)


def taught(x: np.ndarray, speedups: np.ndarray, fork_cost: float) -> tuple[np.ndarray, np.ndarray]:
    """The speedups the trees are taught and each row's weight: the fork-free speedup (`fork_free`) times the share
    of the work the removed loops leave (`features.removal_left`: the time ratio over it), weighted by the
    fork-free time ratio (1 / speedup: the answer in a leaf is then the one that minimizes MAPE)."""
    free = fork_free(x, speedups, fork_cost)
    return free * x[:, LEFT_COLUMN].astype(np.float64), 1.0 / free


def train_boosted(x: np.ndarray, speedups: np.ndarray, config: BoostConfig = BoostConfig(), fork_cost: float = 0.0,
                  log=print) -> Boosted:
    """`config.seeds` boosters on feature rows `x` (`feature_matrix`) and their measured speedups, answering with
    the fork term of `fork_cost` (module docstring)."""
    speedups, weight = taught(x, speedups, fork_cost)
    boosters = []
    for objective in config.objectives:
        for seed in range(config.seeds):
            boosters.append(_boost(config.params(objective, seed), x, np.log(speedups), weight, config))
            log(f"booster {len(boosters)}/{config.seeds * len(config.objectives)} ({objective}, seed {seed}): "
                f"{config.rounds} rounds of {config.leaves} leaves")
    return Boosted(boosters, config, fork_cost)


def _boost(params: dict, x: np.ndarray, target: np.ndarray, weight: np.ndarray, config: BoostConfig,
           clip: float = STAGE_WEIGHT_CLIP):
    """One booster answering `target` (log speedups) in `config.stages` runs of its rounds, each run after the first
    continuing the booster with every row weighted by its answer so far over its target, within 1/clip..clip.  Why: a row's MAPE is |answer / measured - 1|, so near an answer a its
    error in log space weighs a / measured; `weight` (1 / speedup) is that weight for an answer of 1 only, and
    leaves the rows that run several times faster too light to be answered more than about 2x."""
    import lightgbm as lgb

    booster, done, stages = None, 0, max(1, min(config.stages, config.rounds))  # every run at least one round
    for stage in range(stages):
        rounds = config.rounds * (stage + 1) // stages - done
        if booster is not None:
            answered = booster.predict(x, raw_score=True, num_threads=config.threads)
            weight = np.clip(np.exp(answered - target), 1 / clip, clip)
        # a new Dataset each run: LightGBM takes the answers so far as the next run's starting scores
        booster = lgb.train(params, lgb.Dataset(x, target, weight=weight, free_raw_data=False), rounds,
                            init_model=booster)
        done += rounds
    return booster


def _mape(y: np.ndarray, log_pred: np.ndarray) -> float:
    return float(np.mean(np.abs(np.exp(log_pred) - y) / y)) if len(y) else float("nan")


def fit_weight(y: np.ndarray, trees: np.ndarray, network: np.ndarray) -> float:
    """The trees' share in 0, 0.05, ..., 1 whose blend of the log answers has the least MAPE on `y`."""
    grid = np.round(np.arange(0.0, 1.0001, 0.05), 2)
    return float(grid[np.argmin([_mape(y, w * trees + (1 - w) * network) for w in grid])])


Part = tuple[list[Tree], np.ndarray, int]  # a split's samples, their measured speedups, how many programs


def _parts(data: Sequence[str], meta: dict, cache: Path, min_baseline_ms: float, floor: float
           ) -> tuple[Part, dict[str, Part]]:
    """The network's split (`meta`) of the folders' rows, featurized (`cache`): the training programs running at
    least `min_baseline_ms`, and the validation and test programs running at least `floor`."""
    from llmopt.poly.costmodel.data import load_rows
    from llmopt.poly.costmodel.train import TrainConfig, at_least, featurize_rows

    split = TrainConfig(fractions=tuple(meta["fractions"]), seed=meta.get("seed", 0))
    rows = [r for folder in data for r in load_rows(folder)]
    sets = featurize_rows(rows, split, progress=False, cache=cache)

    def part(name: str, keep: set[str]) -> Part:
        ds = sets[name]
        idx = [k for k, h in enumerate(ds.programs) if h in keep and not (ds.head and ds.head[k])]
        programs = len({ds.programs[k] for k in idx})
        return [ds.trees[k] for k in idx], np.asarray(ds.speedups, dtype=np.float64)[idx], programs

    scored = {r["hash"] for r in at_least(rows, floor)}
    return (part("train", {r["hash"] for r in at_least(rows, min_baseline_ms)}),
            {name: part(name, scored) for name in ("validation", "test")})


def _trees_scores(boosted: Boosted, held_out: dict[str, Part]) -> dict:
    """MAPE of the trees alone on each held-out part."""
    return {name: {"rows": len(y), "programs": programs, "trees": _mape(y, boosted.log_speedups(trees))}
            for name, (trees, y, programs) in held_out.items()}


def _scores(boosted: Boosted, network, held_out: dict[str, Part], weight: float | None) -> tuple[dict, float]:
    """MAPE of the trees, the network and their blend on each held-out part, and the blend's weight (`weight`, or
    fitted on the validation part when None)."""
    from llmopt.poly.costmodel.model import predict_trees

    answers, report = {}, {}
    for name, (trees, y, programs) in held_out.items():
        t, n = boosted.log_speedups(trees), np.log(predict_trees(network, trees)) if trees else np.zeros(0)
        answers[name] = (y, t, n)
        report[name] = {"rows": len(y), "programs": programs, "trees": _mape(y, t), "network": _mape(y, n)}
    if weight is None:
        weight = fit_weight(*answers["validation"])
    for name, (y, t, n) in answers.items():
        report[name]["blend"] = _mape(y, weight * t + (1 - weight) * n)
    return report, weight


def build(data: Sequence[str], network_path: str, out: str, config: BoostConfig = BoostConfig(),
          weight: float | None = None, min_baseline_ms: float = 0.0, log=print, trees_from: str | None = None,
          scored_min_baseline_ms: float | None = None) -> dict:
    """Train trees on `network_path`'s training programs of the folders `data` (their rows of programs running at
    least `min_baseline_ms`), blend them with that network at `weight` (None: fitted on the validation programs),
    save the blend to `out`; returns the report (MAPE of the trees, the network and the blend per split, on the
    programs running at least `scored_min_baseline_ms`, default the network's own `min_baseline_ms`).
    `trees_from`: take the trees of that blend file (trained on the same split) instead of training them, to blend
    them with another network."""
    from llmopt.poly.costmodel.model import Blend, Ensemble, load_model, save_model

    network, meta = load_model(network_path)
    if isinstance(network, Blend):
        raise UsageError(f"--network {network_path} is already a blend: give its network")
    if "fractions" not in meta:
        raise UsageError(f"--network {network_path} keeps no split in its metadata: train it with "
                         "`python -m llmopt.poly.costmodel.train`")
    floor = float(meta.get("min_baseline_ms", 0.0) if scored_min_baseline_ms is None else scored_min_baseline_ms)
    (train_trees, train_y, programs), held_out = _parts(data, meta, Path(out).with_suffix(".features.pkl"),
                                                        min_baseline_ms, floor)
    if not train_trees:
        raise UsageError(f"{', '.join(data)}: no training rows for the trees (other data than the network's?)")
    if weight is None and not held_out["validation"][0]:  # before the training, not after
        raise UsageError("--weight fit needs validation programs (none in the network's split): give a weight")
    if trees_from:
        boosted = _trees_of(trees_from, meta)
    else:
        log(f"{len(train_trees)} training rows of {programs} programs")
        fork_cost = float(network.log_fork_cost.detach().exp()) if network.cfg.fork_term else 0.0
        boosted = train_boosted(feature_matrix(train_trees), train_y, config, fork_cost, log)
    scores, weight = _scores(boosted, network, held_out, weight)
    report = {"network": network_path, "data": list(map(str, data)), "min_baseline_ms": min_baseline_ms,
              "scored_min_baseline_ms": floor, "config": dataclasses.asdict(boosted.config),
              "fork_cost": boosted.fork_cost, **scores, "weight": weight}
    members = len(network.members) if isinstance(network, Ensemble) else 1
    save_model(Blend(network, boosted, weight), out, {**meta, "blend": {**report, "network_members": members}})
    return report


def build_alone(data: Sequence[str], out: str, fractions: Sequence[float], split_seed: int = 0,
                fork_cost: float = 0.0, config: BoostConfig = BoostConfig(), min_baseline_ms: float = 0.0,
                scored_min_baseline_ms: float = 0.0, log=print) -> dict:
    """Train trees alone on the training programs of the folders `data` in the split `fractions` / `split_seed`
    draws (`train.TrainConfig`'s, as a network trained with them has), with the fork term of `fork_cost`; save them
    to `out` (a cost model file) and return the report (their MAPE on the validation and test programs running at
    least `scored_min_baseline_ms`)."""
    from llmopt.poly.costmodel.model import save_model

    meta = {"fractions": [float(f) for f in fractions], "seed": split_seed}
    (train_trees, train_y, programs), held_out = _parts(data, meta, Path(out).with_suffix(".features.pkl"),
                                                        min_baseline_ms, scored_min_baseline_ms)
    if not train_trees:
        raise UsageError(f"{', '.join(data)}: no training rows for the trees in the split {list(fractions)}")
    log(f"{len(train_trees)} training rows of {programs} programs")
    boosted = train_boosted(feature_matrix(train_trees), train_y, config, fork_cost, log)
    report = {"network": None, "data": list(map(str, data)), "min_baseline_ms": min_baseline_ms,
              "scored_min_baseline_ms": scored_min_baseline_ms, "config": dataclasses.asdict(config),
              "fork_cost": boosted.fork_cost, **_trees_scores(boosted, held_out)}
    save_model(boosted, out, {**meta, "trees": report})
    return report


def _trees_of(path: str, meta: dict) -> Boosted:
    """The trees of the blend or trees file at `path`; UsageError unless it is one, split as `meta` says."""
    from llmopt.poly.costmodel.model import Blend, load_model

    model, theirs = load_model(path)
    if not isinstance(model, (Blend, Boosted)):
        raise UsageError(f"--trees {path} is not a blend with trees nor trees alone")
    if (theirs.get("seed", 0), list(theirs.get("fractions") or [])) != (meta.get("seed", 0),
                                                                       list(meta.get("fractions"))):
        raise UsageError(f"--trees {path} was trained on another split than the network's: train new trees")
    return model.trees if isinstance(model, Blend) else model


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m llmopt.poly.costmodel.boosted", description=__doc__.split("\n")[0])
    p.add_argument("data", nargs="+", help="the collected folder(s) the network trained on")
    p.add_argument("--network", help="a trained cost model or ensemble file: the split and the blend's other half "
                                     "(without it: the trees alone, on the split of --fractions)")
    p.add_argument("--out", required=True, help="the blend's (or the trees') file, loaded like any cost model")
    p.add_argument("--weight",
                   help="the trees' share of the log answer in [0, 1], or 'fit': the best on the network's "
                        "validation programs (default)")
    p.add_argument("--fractions", type=float, nargs=2, metavar=("TRAIN", "VALIDATION"),
                   help="without --network: the programs' shares for training and validation, the rest test "
                        "(`python -m llmopt.poly.costmodel.train`'s; --validation-share 0.05 makes 0.75 0.05)")
    p.add_argument("--split-seed", type=int, default=0, help="without --network: the split's seed (default 0)")
    p.add_argument("--fork-cost", type=float, default=0.0,
                   help="without --network: the fork term's cost C (default 0: none; the fcaa recipe's networks "
                        "learned 815.24)")
    p.add_argument("--min-baseline-ms", type=float, default=0.0,
                   help="train the trees on programs running at least this long (default every training row: "
                        "the sixtieth session's trees gained from the short ones)")
    p.add_argument("--scored-min-baseline-ms", type=float,
                   help="report (and fit the weight) on the programs running at least this long (default: as "
                        "the network's own reports; without --network 0)")
    p.add_argument("--trees", help="take the trees of this blend file (same split) instead of training new ones")
    d = BoostConfig()
    p.add_argument("--leaves", type=int, default=d.leaves)
    p.add_argument("--rounds", type=int, default=d.rounds)
    p.add_argument("--lr", type=float, default=d.learning_rate)
    p.add_argument("--min-leaf", type=int, default=d.min_leaf)
    p.add_argument("--feature-fraction", type=float, default=d.feature_fraction)
    p.add_argument("--seeds", type=int, default=d.seeds, help="boosters of each objective")
    p.add_argument("--objectives", nargs="+", default=list(d.objectives), choices=["l1", "huber", "regression"])
    p.add_argument("--threads", type=int, default=d.threads)
    p.add_argument("--power", type=float, default=d.power,
                   help="scale the trees' log answers by this (default %(default)s, fitted out of fold; 1: none, "
                        "the trees before the sixty-fourth session)")
    p.add_argument("--stages", type=int, default=d.stages,
                   help="runs of each booster's rounds, the rows reweighted by the answers before each run after "
                        "the first (default %(default)s; 1: no reweighting, the boosters before the sixty-third "
                        "session)")
    return p


def main(argv: list[str] | None = None) -> int:
    a = parser().parse_args(argv)
    if a.network is None and (a.weight is not None or a.trees or a.fractions is None):
        raise UsageError("without --network the trees stand alone: give --fractions, and neither --weight nor "
                         "--trees")
    if a.network is not None and a.fractions is not None:
        raise UsageError("--fractions is for trees alone: with --network the split is the network's")
    if a.fractions is not None and (not all(0 <= f <= 1 for f in a.fractions) or sum(a.fractions) > 1):
        raise UsageError(f"--fractions {a.fractions[0]} {a.fractions[1]}: two shares in [0, 1] summing to at most 1")
    if a.fork_cost < 0:
        raise UsageError("--fork-cost must be at least 0")
    if a.weight in (None, "fit"):
        weight = None
    else:
        try:
            weight = float(a.weight)
        except ValueError:
            raise UsageError(f"--weight {a.weight}: a number in [0, 1] or 'fit'") from None
        if not 0.0 <= weight <= 1.0:
            raise UsageError(f"--weight {a.weight}: a number in [0, 1] or 'fit'")
    if a.seeds < 1 or a.rounds < 1 or a.leaves < 2 or not 1 <= a.stages <= a.rounds or a.power <= 0:
        raise UsageError("--seeds and --rounds must be at least 1, --leaves at least 2, --stages 1 to --rounds, "
                         "--power above 0")
    config = BoostConfig(leaves=a.leaves, rounds=a.rounds, learning_rate=a.lr, min_leaf=a.min_leaf,
                         feature_fraction=a.feature_fraction, seeds=a.seeds, threads=a.threads,
                         objectives=tuple(a.objectives), stages=a.stages, power=a.power)
    log = lambda message: print(message, file=sys.stderr, flush=True)  # noqa: E731  (stdout: the report alone)
    if a.network is None:
        report = build_alone(a.data, a.out, a.fractions, a.split_seed, a.fork_cost, config, a.min_baseline_ms,
                             a.scored_min_baseline_ms or 0.0, log)
    else:
        report = build(a.data, a.network, a.out, config, weight, a.min_baseline_ms, log=log, trees_from=a.trees,
                       scored_min_baseline_ms=a.scored_min_baseline_ms)
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    # the package's module, not this __main__ copy: its `Boosted` is the class `model.save_model` recognizes
    from llmopt.poly.costmodel import boosted

    run_main(boosted.main)
