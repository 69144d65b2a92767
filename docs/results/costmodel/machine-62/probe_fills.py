"""One booster on the package's tree features (`boosted.feature_matrix`) of this checkout's featurizer (with the
fill view), taught what the fork term leaves, as `boosted.train_boosted` teaches it; the split and the fork cost of
the recipe's ensemble of four (runs/s59/base-ens4.pt), training rows of every length, validation and test rows of
programs >= 5 ms.  Settings one at a time (--objective, --ff, --min-leaf, --rounds, --seed, --lambda-l2, --extra).
The matrices are made once (runs/s62/TAG.*.npy, `--tag`: invariance with the fill and invariance views, the 5
columns after the pooled vectors as the invariance matrices were first made, before `features.removal_left`; fills,
the fill view alone, sliced from those); the answers
(log speedups) go to runs/s62/probe/NAME.npz; prints validation and test MAPE."""

import argparse
import json
import sys
from pathlib import Path

import lightgbm as lgb
import numpy as np

sys.path[:0] = ["."]
from llmopt.poly.costmodel.boosted import FORK_FLOOR, BoostConfig, _mape, _parts, feature_matrix  # noqa: E402
from llmopt.poly.costmodel.features import COMP_FEATURES, INVARIANCE_FEATURES  # noqa: E402
from llmopt.poly.costmodel.model import load_model  # noqa: E402

SPLITS = ("train", "validation", "test")


def matrices(data: str, tag: str) -> tuple[dict, dict]:
    """runs/s62/TAG.SPLIT.npy (and .y.npy), made from the features cached in runs/s62/TAG.features.pkl (featurized
    there first when missing: `train.featurize_rows`)."""
    prefix = f"runs/s62/{tag}"
    if tag == "fills" and not Path(f"{prefix}.test.npy").is_file():
        # the fill view without the invariance view: the invariance matrices less each block's last columns (the
        # pooled features of a prefix of the vector are that prefix's own)
        full, y = matrices(data, "invariance")
        keep = [b * COMP_FEATURES + k for b in range(15) for k in range(COMP_FEATURES - INVARIANCE_FEATURES)]
        keep += list(range(15 * COMP_FEATURES, 15 * COMP_FEATURES + 5))
        for name in SPLITS:
            np.save(f"{prefix}.{name}.npy", full[name][:, keep])
            np.save(f"{prefix}.{name}.y.npy", y[name])
    if not Path(f"{prefix}.test.npy").is_file():
        _, meta = load_model("runs/s59/base-ens4.pt")
        train, held = _parts([data], meta, Path(f"{prefix}.features.pkl"), 0.0, 5.0)
        for name, (trees, y, _) in {"train": train, **held}.items():
            # the columns of then: the pooled vectors and 5 more (no `features.removal_left`, added after)
            np.save(f"{prefix}.{name}.npy", feature_matrix(trees)[:, : 15 * COMP_FEATURES + 5])
            np.save(f"{prefix}.{name}.y.npy", y)
    return ({s: np.load(f"{prefix}.{s}.npy") for s in SPLITS}, {s: np.load(f"{prefix}.{s}.y.npy") for s in SPLITS})


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("data")
    p.add_argument("--objective", default="l1")
    p.add_argument("--ff", type=float, default=0.3)
    p.add_argument("--min-leaf", type=int, default=40)
    p.add_argument("--leaves", type=int, default=255)
    p.add_argument("--rounds", type=int, default=400)
    p.add_argument("--lr", type=float, default=0.03)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--tag", default="fills", help="the matrices' name: the checkout's features when first made")
    p.add_argument("--name", required=True)
    a = p.parse_args()
    x, y = matrices(a.data, a.tag)
    network, _ = load_model("runs/s59/base-ens4.pt")
    fork_cost = float(network.log_fork_cost.detach().exp())
    config = BoostConfig(leaves=a.leaves, rounds=a.rounds, learning_rate=a.lr, min_leaf=a.min_leaf,
                         feature_fraction=a.ff, seeds=1, objectives=(a.objective,))
    # as `boosted.train_boosted` teaches one booster, with this probe's seed
    fork = x["train"].shape[1] - 4
    ratio = 1.0 / y["train"]
    taught = 1.0 / np.maximum(ratio - fork_cost * x["train"][:, fork], FORK_FLOOR * ratio)  # as boosted.fork_free
    data = lgb.Dataset(x["train"], np.log(taught), weight=1.0 / taught)
    booster = lgb.train(config.params(a.objective, a.seed), data, a.rounds)
    fork = x["test"].shape[1] - 4  # `features.fork_load`, second of the 5 columns after the pooled vectors
    ans = {s: -np.log(np.exp(-booster.predict(x[s])) + fork_cost * x[s][:, fork]) for s in ("validation", "test")}
    print(json.dumps({"variant": vars(a), **{s: _mape(y[s], ans[s]) for s in ans}}))
    np.savez(f"runs/s62/probe/{a.name}.npz", v=ans["validation"], t=ans["test"])


if __name__ == "__main__":
    main()
