"""Do gradient-boosted trees, blended with the network, lower the held-out MAPE (sixtieth session)?

    pip install lightgbm   # not a dependency of llmopt
    python docs/results/costmodel/machine-60/trees.py DATA FEATURES.pkl MODEL [MODEL...] \
        [--leaves 63 ...] [--seeds N] [--rounds N] [--answers FILE.npz] [--plain] [--matrices PREFIX] > trees.json

Why: seeds of one network make correlated errors (an ensemble of 2 gains 0.004, of 6 0.009); a learner of another
kind on the same inputs errs elsewhere, and a blend of two learners gains where their errors differ.  The
thirty-sixth session's trees (`scripts/costmodel_gbm_check.py`: 277 programs, the features of then, alone) did no
better than the network; never blended, never on 1,039 programs with the compiler, traffic, parallel and memory
views.

The trees read each (program, schedule)'s computation vectors (`features.featurize`, the network's own input) pooled
over the computations (mean, max, min) for the transformed tree, for the untransformed one (`Tree.anchor`) and for
their difference (computation by computation), the same three averaged with each computation weighted by its
untransformed iterations (Amdahl: a computation's change matters by its share of the work), plus the schedule's
length, its transformations of each kind, `features.fork_load` and `features.changed_share`. Target: log speedup,
objective L1 weighted by 1/speedup, whose optimum in a leaf is the answer that minimizes MAPE (a weighted median is
the same in log and linear space). Trained on the recipe's training rows (>= 5 ms, `--validation-share 0.05`: the
split every MODEL trained with), early-stopped on its validation programs' rows, scored on the test programs (>= 5
ms, as `costmodel_compare` and `machine-59/calibrate.py` count them). The blend: log p = w log p_trees + (1 - w) log
p_model, w fitted on the validation programs, scored on test. `--leaves`: one booster per size, the one best on
validation kept; `--seeds N`: N boosters of different bagging seeds averaged (in log space); `--plain`: the first
run's features (without the work-weighted means and the changed share). `--rounds N`: N rounds, not early-stopped:
the validation programs then only fit the blend's w (early-stopped on them, the trees look better there than on
unseen programs and w leans to them). `--answers`: keep the trees' answers in that file, or read them from it to
blend other models without training again. Also reported: the equal blend (w 0.5), one w per schedule length fitted
on validation ("blend_by_length"), each learner by schedule length, and the earlier test programs (seeds < 10085,
where the best before was 0.177). "w_on_test" is w fitted on the test rows themselves: the most a blend could give,
not a result.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[4]
sys.path[:0] = [str(ROOT)]

from llmopt.poly.costmodel.data import load_rows  # noqa: E402
from llmopt.poly.costmodel.features import _iterations, changed_share, fork_load  # noqa: E402
from llmopt.poly.costmodel.model import load_model, predict_trees  # noqa: E402
from llmopt.poly.costmodel.train import TrainConfig, featurize_rows, split_of  # noqa: E402

KINDS = ("interchange", "reversal", "skewing", "tiling", "unrolling", "parallelization")
RECIPE = TrainConfig(fractions=(0.75, 0.05))  # the recipe's --validation-share 0.05; the test share is fixed
WEIGHTS = np.round(np.arange(0.0, 1.0001, 0.05), 2)
MIN_MS = 5.0
EARLIER_SEEDS = 10085


def mape(y: np.ndarray, p: np.ndarray) -> float:
    return float(np.mean(np.abs(p - y) / y)) if len(y) else float("nan")


def pooled(comps: np.ndarray) -> np.ndarray:
    return np.concatenate([comps.mean(0), comps.max(0), comps.min(0)])


def row_features(tree, schedule: list[dict], plain: bool = False) -> np.ndarray:
    kinds = [sum(t["kind"] == k for t in schedule) for k in KINDS]
    anchor, comps = tree.anchor.comps, tree.comps
    if plain:  # the first run's features: no work-weighted means, no changed share
        return np.concatenate([pooled(comps), pooled(anchor), pooled(comps - anchor),
                               [len(comps), len(schedule), fork_load(tree), *kinds]])
    work = _iterations(anchor)
    work = work / work.sum()
    return np.concatenate([pooled(comps), pooled(anchor), pooled(comps - anchor),
                           work @ comps, work @ anchor, work @ (comps - anchor),
                           [len(comps), len(schedule), fork_load(tree), changed_share(tree), *kinds]])


@dataclass
class Part:
    """One split's rows as the trees and the blend read them."""

    x: np.ndarray  # the trees' features
    y: np.ndarray  # measured speedups
    trees: list  # the network's featurized samples
    rows: list[dict]


def split(rows: list[dict], sets: dict, name: str, keep, matrices: str | None, plain: bool) -> Part:
    """Split `name`'s rows for which keep(row) holds (the feature matrix read from, or kept in, `matrices`)."""
    mine = [r for r in rows if r["_split"] == name]
    ds = sets[name]
    assert len(mine) == len(ds.trees), "featurize_rows keeps each split's rows in order"
    idx = [k for k, r in enumerate(mine) if keep(r)]
    trees = [ds.trees[k] for k in idx]
    path = Path(f"{matrices}.{name}.npy") if matrices else None
    if path and path.is_file():
        x = np.load(path)
    else:
        x = np.stack([row_features(t, mine[k]["schedule"], plain) for k, t in zip(idx, trees, strict=True)])
        x = x.astype(np.float32)
        if path:
            np.save(path, x)
    return Part(x, np.asarray(ds.speedups)[idx], trees, [mine[k] for k in idx])


def fit_weight(y: np.ndarray, a: np.ndarray, b: np.ndarray) -> float:
    return float(WEIGHTS[np.argmin([mape(y, np.exp(w * a + (1 - w) * b)) for w in WEIGHTS])])


def lengths(part: Part) -> np.ndarray:
    """Each row's schedule length, 4 standing for 4 and more."""
    return np.array([min(len(r["schedule"]), 4) for r in part.rows])


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("data")
    p.add_argument("cache", help="a training run's features.pkl")
    p.add_argument("models", nargs="*")
    p.add_argument("--leaves", type=int, nargs="+", default=[15, 63])
    p.add_argument("--seeds", type=int, default=1)
    p.add_argument("--lr", type=float, default=0.03)
    p.add_argument("--min-leaf", type=int, default=40, help="LightGBM's min_data_in_leaf")
    p.add_argument("--feature-fraction", type=float, default=0.3, help="of the features each tree may split on")
    p.add_argument("--rounds", type=int, default=0,
                   help="boost this many rounds, no early stopping (0: early-stopped on the validation programs)")
    p.add_argument("--answers", help="keep the trees' answers in this .npz (one --leaves), or read them from it")
    p.add_argument("--all-training-rows", action="store_true",
                   help="train on the training programs' rows under 5 ms too (the network trains on those >= 5 ms)")
    p.add_argument("--plain", action="store_true", help="the first run's features (no work-weighted means)")
    p.add_argument("--matrices", help="keep the feature matrices in files with this prefix (made once, read after)")
    return p.parse_intermixed_args()


def load_parts(args: argparse.Namespace) -> tuple[Part, Part, Part]:
    """The training, validation and test parts: training rows >= 5 ms (all with --all-training-rows), the
    validation and test rows of programs with a row >= 5 ms (as `costmodel_compare` counts them)."""
    rows = load_rows(args.data)
    for r in rows:
        r["_split"] = split_of(r["hash"], RECIPE.fractions, RECIPE.seed)
    sets = featurize_rows(rows, RECIPE, False, cache=args.cache)
    longer = {r["hash"] for r in rows if float(r["baseline_seconds"]) * 1e3 >= MIN_MS}
    low = 0.0 if args.all_training_rows else MIN_MS
    kept = args.matrices, args.plain
    return (split(rows, sets, "train", lambda r: float(r["baseline_seconds"]) * 1e3 >= low, *kept),
            split(rows, sets, "validation", lambda r: r["hash"] in longer, *kept),
            split(rows, sets, "test", lambda r: r["hash"] in longer, *kept))


def train_trees(args: argparse.Namespace, train: Part, val: Part, test: Part, out: dict) -> tuple[np.ndarray, ...]:
    """The validation and test log answers of the trees of each --leaves best on validation (reports in `out`)."""
    import lightgbm as lgb

    answers = {}  # leaves -> (validation, test) log answers
    train_set = lgb.Dataset(train.x, np.log(train.y), weight=1 / train.y, free_raw_data=False)
    valid_set = lgb.Dataset(val.x, np.log(val.y), weight=1 / val.y, reference=train_set)
    saved = Path(args.answers) if args.answers else None
    for leaves in args.leaves:
        if saved and saved.is_file():  # the trees' answers of an earlier run: blend new models without retraining
            blob = np.load(saved)
            answers[leaves] = (blob["validation"], blob["test"])
            out[f"trees_{leaves}_leaves"] = json.loads(str(blob["report"]))
            continue
        tv, ts, tt, sizes = 0.0, 0.0, 0.0, []
        for seed in range(args.seeds):
            params = dict(objective="l1", learning_rate=args.lr, num_leaves=leaves, min_data_in_leaf=args.min_leaf,
                          bagging_fraction=0.8, bagging_freq=1, feature_fraction=args.feature_fraction,
                          lambda_l2=1.0, num_threads=1, verbose=-1, seed=seed)
            if args.rounds:  # a fixed size: the validation programs stay unseen by the trees, fit only the blend
                booster = lgb.train(params, train_set, args.rounds)
            else:
                booster = lgb.train(params, train_set, 4000, valid_sets=[valid_set],
                                    callbacks=[lgb.early_stopping(150, verbose=False)])
            n = booster.best_iteration or args.rounds
            sizes.append(n)
            tt = tt + booster.predict(train.x, num_iteration=n) / args.seeds
            tv = tv + booster.predict(val.x, num_iteration=n) / args.seeds
            ts = ts + booster.predict(test.x, num_iteration=n) / args.seeds
        answers[leaves] = (tv, ts)
        out[f"trees_{leaves}_leaves"] = {"trees": sizes, "train": round(mape(train.y, np.exp(tt)), 4),
                                         "validation": round(mape(val.y, np.exp(tv)), 4),
                                         "test": round(mape(test.y, np.exp(ts)), 4)}
        print(leaves, out[f"trees_{leaves}_leaves"], file=sys.stderr, flush=True)
        if saved and len(args.leaves) == 1:
            np.savez(saved, validation=tv, test=ts, report=json.dumps(out[f"trees_{leaves}_leaves"]))
    best = min(answers, key=lambda k: out[f"trees_{k}_leaves"]["validation"])
    out["trees_chosen"] = f"{best} leaves (validation)"
    return answers[best]


def blend_report(model_path: str, val: Part, test: Part, tv: np.ndarray, ts: np.ndarray) -> dict:
    """A network's MAPE alone and blended with the trees' log answers `tv` (validation) and `ts` (test)."""
    model, _ = load_model(model_path)
    yv, ys = val.y, test.y
    nv, ns = np.log(predict_trees(model, val.trees)), np.log(predict_trees(model, test.trees))
    # The test programs of the folder the fifty-third to fifty-sixth sessions scored (seeds < 10085; the best
    # before, 0.177, is on these).
    old = np.array([r["seed"] < EARLIER_SEEDS for r in test.rows])
    length, vlength = lengths(test), lengths(val)
    w, w_test = fit_weight(yv, tv, nv), fit_weight(ys, ts, ns)
    # A weight per schedule length, fitted on the validation programs (the trees lead on short schedules).
    wk = {k: fit_weight(yv[vlength == k], tv[vlength == k], nv[vlength == k]) for k in range(5)}
    wt = np.array([wk[k] for k in length])
    fitted, equal, by_length = w * ts + (1 - w) * ns, 0.5 * ts + 0.5 * ns, wt * ts + (1 - wt) * ns
    return {"model": {"validation": round(mape(yv, np.exp(nv)), 4), "test": round(mape(ys, np.exp(ns)), 4)},
            "blend": {"w": w, "validation": round(mape(yv, np.exp(w * tv + (1 - w) * nv)), 4),
                      "test": round(mape(ys, np.exp(fitted)), 4)},
            "equal_blend_test": round(mape(ys, np.exp(equal)), 4),
            "w_on_test": {"w": w_test, "test": round(mape(ys, np.exp(w_test * ts + (1 - w_test) * ns)), 4)},
            "log_corr_errors_test": round(float(np.corrcoef(ts - np.log(ys), ns - np.log(ys))[0, 1]), 3),
            "earlier_test": {"model": round(mape(ys[old], np.exp(ns[old])), 4),
                             "trees": round(mape(ys[old], np.exp(ts[old])), 4),
                             "blend": round(mape(ys[old], np.exp(fitted[old])), 4),
                             "equal_blend": round(mape(ys[old], np.exp(equal[old])), 4),
                             "programs": len({r["hash"] for r in test.rows if r["seed"] < EARLIER_SEEDS})},
            "blend_by_length": {"w": {str(k): v for k, v in wk.items()},
                                "test": round(mape(ys, np.exp(by_length)), 4),
                                "earlier_test": round(mape(ys[old], np.exp(by_length[old])), 4)},
            # By the schedule's length (4: 4 and more): where the trees, the network and the equal blend miss.
            "test_by_length": {
                str(k): {"rows": int((length == k).sum()),
                         **{name: round(mape(ys[length == k], np.exp(a[length == k])), 4)
                            for name, a in (("model", ns), ("trees", ts), ("equal_blend", equal))}}
                for k in range(5)}}


def main() -> int:
    args = parse_args()
    torch.set_num_threads(1)
    train, val, test = load_parts(args)
    out = {"rows": {"train": len(train.y), "validation": len(val.y), "test": len(test.y)},
           "features": int(train.x.shape[1]),
           "always_1": {k: round(mape(p.y, np.ones_like(p.y)), 4) for k, p in (("validation", val), ("test", test))}}
    tv, ts = train_trees(args, train, val, test, out)
    for m in args.models:
        out[m] = blend_report(m, val, test, tv, ts)
        print(m, out[m], file=sys.stderr, flush=True)
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
