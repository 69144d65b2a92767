"""Do the trees gain from the schedule itself (not carried by a `Tree`)?  One booster (seed 0, 255 leaves x 400
rounds, L1 unless told) on the sixty-first session's dominant-computation matrices (runs/s61/dom.*.npy), taught
what the fork term leaves (machine-61/probe_variant.py), with schedule columns appended:
  --counts: its length and its transformations of each kind (the sixtieth session's columns);
  --rich:   those, plus each kind's first and last position (share of the length, -1 absent), the first and
            last kind, the distinct statements touched, tile sizes (log2 max, min, product, count), the largest
            unroll factor, skew factor, the levels of parallelization and interchange, and tiling's level.
Prints validation and test MAPE; keeps the answers in runs/s62/probe/NAME.npz."""

import argparse
import json
import math
import pickle
import sys

import lightgbm as lgb
import numpy as np

sys.path[:0] = [".", "docs/results/costmodel/machine-60", "docs/results/costmodel/machine-61"]
from probe_variant import FORK, C, mape  # noqa: E402

SPLITS = ("train", "validation", "test")
KINDS = ("interchange", "reversal", "skewing", "tiling", "unrolling", "parallelization", "fusion")


def counts(schedule: list[dict]) -> list[float]:
    return [len(schedule), *(sum(t["kind"] == k for t in schedule) for k in KINDS)]


def rich(schedule: list[dict]) -> list[float]:
    n = len(schedule)
    kinds = [KINDS.index(t["kind"]) for t in schedule]
    first = [next((i / n for i, k in enumerate(kinds) if k == j), -1.0) for j in range(len(KINDS))]
    last = [next((i / n for i, k in reversed(list(enumerate(kinds))) if k == j), -1.0) for j in range(len(KINDS))]
    sizes = [s for t in schedule if t["kind"] == "tiling" for s in t["sizes"]]
    lg = [math.log2(s) for s in sizes]
    unroll = [math.log2(t["factor"]) for t in schedule if t["kind"] == "unrolling"]
    skew = [t["factor"] for t in schedule if t["kind"] == "skewing"]
    level = lambda kind: min((t["level"] for t in schedule if t["kind"] == kind), default=-1)  # noqa: E731
    return [*counts(schedule), *first, *last, kinds[0] if n else -1, kinds[-1] if n else -1,
            len({t["stmt"] for t in schedule}), max(lg, default=0), min(lg, default=0), sum(lg), len(sizes),
            max(unroll, default=0), max(skew, default=0), level("parallelization"), level("interchange"),
            level("tiling"), sum(1 for t in schedule if t["kind"] == "interchange" and t["level"] == 0)]


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--features", choices=["none", "counts", "rich"], default="counts")
    p.add_argument("--objective", default="l1")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--name", required=True)
    a = p.parse_args()
    d = pickle.load(open("runs/s61/probe/ans.pkl", "rb"))
    x = {s: np.load(f"runs/s61/dom.{s}.npy") for s in SPLITS}
    if a.features != "none":
        schedules = pickle.load(open("runs/s62/schedules.pkl", "rb"))
        f = counts if a.features == "counts" else rich
        x = {s: np.hstack([x[s], np.array([f(sc) for sc in schedules[s]], np.float32)]) for s in SPLITS}
    y = {"train": d["ytr"], "validation": d["yv"], "test": d["yt"]}
    load = {s: x[s][:, FORK].astype(np.float64) for s in SPLITS}
    r = 1 / y["train"]
    taught = 1 / np.maximum(r - C * load["train"], 0.2 * r)
    params = dict(objective=a.objective, learning_rate=0.03, num_leaves=255, min_data_in_leaf=40,
                  bagging_fraction=0.8, bagging_freq=1, feature_fraction=0.3, lambda_l2=1.0, num_threads=1,
                  verbose=-1, seed=a.seed)
    booster = lgb.train(params, lgb.Dataset(x["train"], np.log(taught), weight=1 / taught), 400)
    ans = {s: -np.log(np.exp(-booster.predict(x[s])) + C * load[s]) for s in ("validation", "test")}
    print(json.dumps({"variant": vars(a), **{s: mape(y[s], np.exp(ans[s])) for s in ans}}))
    np.savez(f"runs/s62/probe/{a.name}.npz", v=ans["validation"], t=ans["test"])


if __name__ == "__main__":
    main()
