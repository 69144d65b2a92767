"""One booster (255 leaves x 400 rounds unless told) on the dominant-computation matrices (probe_dominant.py) with
the fork term taken from the target (probe_forkfree.py dom), one change at a time: --second adds the second-largest
computation's vectors (transformed, untransformed, difference); --leaves/--rounds/--min-leaf/--floor the settings;
--objective, --boosting, --amdahl, --shift as their help says.  Prints validation and test MAPE, alone and blended
with the ensemble of four (runs/s61/probe/ans.pkl); keeps the answers in runs/s61/probe/NAME.npz."""

import argparse
import json
import pickle
import subprocess
import sys

import lightgbm as lgb
import numpy as np

sys.path[:0] = [".", "docs/results/costmodel/machine-60"]
C = 815.24  # the ensemble of four's fork cost
SPLITS = ("train", "validation", "test")
HELD_OUT = ("validation", "test")
FORK, CHANGED = 7657, 7658  # fork_load and changed_share in the dominant-computation matrices


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("--second", action="store_true")
    p.add_argument("--leaves", type=int, default=255)
    p.add_argument("--rounds", type=int, default=400)
    p.add_argument("--min-leaf", type=int, default=40)
    p.add_argument("--floor", type=float, default=0.2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--lr", type=float, default=0.03)
    p.add_argument("--ff", type=float, default=0.3)
    p.add_argument("--objective", default="l1", help="LightGBM's objective on the log target (l1, huber, regression)")
    p.add_argument("--shift", action="store_true", help="then shift the log answers by the constant best on validation")
    p.add_argument("--boosting", default="gbdt", help="gbdt, or rf: a random forest (bagging 0.632, every tree alone)")
    p.add_argument("--amdahl", action="store_true",
                   help="teach the time ratio of the changed computations alone (features.changed_share c of the "
                        "work): r = (1 - c) + c q, q taught, at least 0.05")
    p.add_argument("--name", required=True)
    return p.parse_args()


def mape(y: np.ndarray, p: np.ndarray) -> float:
    return float(np.mean(np.abs(p - y) / y))


def with_second(x: dict) -> dict:
    """The matrices with the second-largest computation's vectors appended (zeros for one-computation programs)."""
    import trees as T

    from llmopt.poly.costmodel.features import work_shares

    folder = subprocess.check_output(["bash", "-c", "source docs/results/costmodel/fcaa_recipe.sh && folder_at 3f5a413"],
                                     text=True).strip()
    parts = T.load_parts(argparse.Namespace(data=folder, cache="runs/s59/base-s0/features.pkl",
                                            matrices="runs/s60/all", plain=False, all_training_rows=True))

    def extra(t) -> np.ndarray:
        order = np.argsort(-work_shares(t.anchor.comps), kind="stable")
        if len(order) < 2:
            return np.zeros(3 * t.comps.shape[1], np.float32)
        k = order[1]
        return np.concatenate([t.comps[k], t.anchor.comps[k], t.comps[k] - t.anchor.comps[k]]).astype(np.float32)

    return {s: np.hstack([x[s], np.stack([extra(t) for t in part.trees])])
            for s, part in zip(SPLITS, parts, strict=True)}


def taught(a: argparse.Namespace, y: np.ndarray, load: np.ndarray, share: np.ndarray) -> np.ndarray:
    """The training speedups the booster learns: less the fork term (at least a.floor of the time), and with
    --amdahl the changed part's ratio q of r_free = (1 - c) + c q (rows with nothing changed keep theirs)."""
    r = 1 / y
    free = np.maximum(r - C * load, a.floor * r)
    if a.amdahl:
        free = np.where(share > 0.01, np.maximum((free - (1 - share)) / np.maximum(share, 0.01), 0.05), free)
    return 1 / free


def main() -> None:
    a = parse_args()
    d = pickle.load(open("runs/s61/probe/ans.pkl", "rb"))
    x = {s: np.load(f"runs/s61/dom.{s}.npy") for s in SPLITS}
    if a.second:
        x = with_second(x)
    load = {s: x[s][:, FORK].astype(np.float64) for s in SPLITS}
    share = {s: np.clip(x[s][:, CHANGED].astype(np.float64), 0.0, 1.0) for s in SPLITS}
    y = {"train": d["ytr"], "validation": d["yv"], "test": d["yt"]}
    yf = taught(a, y["train"], load["train"], share["train"])
    params = dict(objective=a.objective, learning_rate=a.lr, num_leaves=a.leaves, min_data_in_leaf=a.min_leaf,
                  bagging_fraction=0.632 if a.boosting == "rf" else 0.8, bagging_freq=1, feature_fraction=a.ff,
                  lambda_l2=1.0, num_threads=1, verbose=-1, seed=a.seed, boosting=a.boosting)
    booster = lgb.train(params, lgb.Dataset(x["train"], np.log(yf), weight=1 / yf), a.rounds)
    raw = {s: booster.predict(x[s]) for s in HELD_OUT}

    def answer(s: str, shift: float) -> np.ndarray:
        """Log speedups: the booster's ratio (of the changed part with --amdahl) plus the fork term."""
        ratio = np.exp(-(raw[s] + shift))
        if a.amdahl:
            ratio = np.where(share[s] > 0.01, (1 - share[s]) + share[s] * ratio, ratio)
        return -np.log(ratio + C * load[s])

    shift = 0.0
    if a.shift:  # the constant that minimizes validation MAPE (an L2 fit answers means, not MAPE's weighted medians)
        grid = np.arange(-0.15, 0.1501, 0.005)
        shift = float(grid[np.argmin([mape(y["validation"], np.exp(answer("validation", g))) for g in grid])])
    ans = {s: answer(s, shift) for s in HELD_OUT}
    out = {"variant": vars(a), "shift": shift, **{s: mape(y[s], np.exp(ans[s])) for s in HELD_OUT}}
    for w in (0.7, 0.8, 0.9):
        out[f"blend_{w}"] = {"validation": mape(y["validation"], np.exp(w * ans["validation"] + (1 - w) * d["nv"])),
                             "test": mape(y["test"], np.exp(w * ans["test"] + (1 - w) * d["ns"]))}
    print(json.dumps(out))
    np.savez(f"runs/s61/probe/{a.name}.npz", v=ans["validation"], t=ans["test"])


if __name__ == "__main__":
    main()
