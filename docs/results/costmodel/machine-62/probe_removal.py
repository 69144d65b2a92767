"""Teach the trees what the removal of invariant innermost loops leaves (`features.removal_left`, L), as they are
taught what the fork term leaves: the time ratio r = L x q + C x load, q taught (each row weighted by its fork-free
ratio), answered back through the same formula (`boosted.taught` and `Boosted.answer`, which took it over).  One
booster on runs/s62/invariance.*.npy (probe_fills.py --tag invariance made them); L of each row is made once from
the features cached there (runs/s62/left.*.npy).  Prints validation and test MAPE; answers in
runs/s62/probe/NAME.npz."""

import argparse
import json
import sys
from pathlib import Path

import lightgbm as lgb
import numpy as np

sys.path[:0] = ["."]
from llmopt.poly.costmodel.boosted import BoostConfig, Boosted, _mape, _parts, taught  # noqa: E402
from llmopt.poly.costmodel.features import removal_left  # noqa: E402
from llmopt.poly.costmodel.model import load_model  # noqa: E402

SPLITS = ("train", "validation", "test")


def lefts(data: str) -> dict:
    if not Path("runs/s62/left.test.npy").is_file():
        _, meta = load_model("runs/s59/base-ens4.pt")
        train, held = _parts([data], meta, Path("runs/s62/invariance.features.pkl"), 0.0, 5.0)
        for name, (trees, _, _) in {"train": train, **held}.items():
            np.save(f"runs/s62/left.{name}.npy", np.array([removal_left(t) for t in trees]))
    return {s: np.load(f"runs/s62/left.{s}.npy") for s in SPLITS}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("data")
    p.add_argument("--objective", default="l1")
    p.add_argument("--ff", type=float, default=0.5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--name", required=True)
    a = p.parse_args()
    left = lefts(a.data)
    # the matrices of then (the pooled vectors and 5 columns) with L last: `boosted.tree_features`' layout now
    x = {s: np.hstack([np.load(f"runs/s62/invariance.{s}.npy"), left[s][:, None].astype(np.float32)]) for s in SPLITS}
    y = {s: np.load(f"runs/s62/invariance.{s}.y.npy") for s in SPLITS}
    network, _ = load_model("runs/s59/base-ens4.pt")
    fork_cost = float(network.log_fork_cost.detach().exp())
    speedups, weight = taught(x["train"], y["train"], fork_cost)
    config = BoostConfig(feature_fraction=a.ff, seeds=1, objectives=(a.objective,), power=1.0)  # as then: unscaled
    booster = lgb.train(config.params(a.objective, a.seed), lgb.Dataset(x["train"], np.log(speedups), weight=weight),
                        config.rounds)
    one = Boosted([booster], config, fork_cost)
    ans = {s: one.answer(x[s]) for s in ("validation", "test")}
    print(json.dumps({"variant": vars(a), **{s: _mape(y[s], ans[s]) for s in ans}}))
    np.savez(f"runs/s62/probe/{a.name}.npz", v=ans["validation"], t=ans["test"])


if __name__ == "__main__":
    main()
