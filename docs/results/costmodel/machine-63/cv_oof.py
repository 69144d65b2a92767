"""Out-of-fold answers of the package's trees on the training programs, for error analysis and choices that do
not read the test programs: the training programs (runs/s62/invariance.train.npy's rows, with removal_left last
as `boosted.tree_features` lays them out) are split by program into K folds; one booster per fold is taught on
the others exactly as `boosted.train_boosted` teaches (`boosted.taught`, `boosted._boost`) and answers the fold
as `Boosted.answer` does; with --chain-k K the trees are also taught, and answer through, the chain term: the time ratio times
(1 + (K-1) t) / (1 + (K-1) a), t and a the work shares that run a chain of at least --chain-trips trips in the
transformed and the untransformed tree (chain_columns.py).  Program ids are saved once (runs/s63/train.programs.npy, from the features cache).
Prints the out-of-fold MAPE on the rows of programs >= 5 ms; answers in runs/s63/oof/NAME.npy."""

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path[:0] = ["."]
from llmopt.poly.costmodel.boosted import (  # noqa: E402
    FORK_COLUMN,
    LEFT_COLUMN,
    BoostConfig,
    Boosted,
    _boost,
    _mape,
    taught,
)
from llmopt.poly.costmodel.model import load_model  # noqa: E402

RUNS = Path("runs/s63")


def matrix(split: str) -> tuple[np.ndarray, np.ndarray]:
    """A split's rows as `boosted.tree_features` lays them out (the sixty-second session's matrices with
    removal_left last) and their measured speedups."""
    x = np.hstack([np.load(f"runs/s62/invariance.{split}.npy"),
                   np.load(f"runs/s62/left.{split}.npy")[:, None].astype(np.float32)])
    return x, np.load(f"runs/s62/invariance.{split}.y.npy")


def programs(data: str, meta: dict | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Each training row's program hash and its program's baseline (ms), in the order of `boosted._parts`, on the
    split `meta` (default: runs/s59/base-ens4.pt's metadata)."""
    out = RUNS / "train.programs.npz"
    if not out.is_file():
        from llmopt.poly.costmodel.data import load_rows
        from llmopt.poly.costmodel.train import TrainConfig, at_least, featurize_rows

        meta = meta or load_model("runs/s59/base-ens4.pt")[1]
        split = TrainConfig(fractions=tuple(meta["fractions"]), seed=meta.get("seed", 0))
        rows = load_rows(data)
        sets = featurize_rows(rows, split, progress=False, cache=Path("runs/s62/invariance.features.pkl"))
        keep = {r["hash"] for r in at_least(rows, 0.0)}
        ds = sets["train"]
        idx = [k for k, h in enumerate(ds.programs) if h in keep and not (ds.head and ds.head[k])]
        base = {r["hash"]: 1e3 * r["baseline_seconds"] for r in rows}
        np.savez(out, programs=np.array([ds.programs[k] for k in idx]),
                 baseline=np.array([float(base.get(ds.programs[k], np.nan)) for k in idx]))
    z = np.load(out)
    return z["programs"], z["baseline"]


SETTINGS = (("--leaves", "leaves"), ("--rounds", "rounds"), ("--lr", "learning_rate"), ("--min-leaf", "min_leaf"),
            ("--ff", "feature_fraction"), ("--bagging", "bagging_fraction"))  # BoostConfig's, for the sweep


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser()
    p.add_argument("data")
    p.add_argument("--name", required=True)
    p.add_argument("--folds", type=int, default=3)
    p.add_argument("--objective", default="l1")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--chain-k", type=float, default=1.0, help="a chained iteration's time over a free one's (1: none)")
    p.add_argument("--chain-trips", type=int, default=64, help="the chains counted (chain_columns.py)")
    p.add_argument("--stages", type=int, default=1,
                   help="runs of each booster's rounds, the rows reweighted before each after the first "
                        "(`boosted._boost`; 1: none)")
    p.add_argument("--clip", type=float, default=10.0, help="the reweighted rows' weights stay within 1/CLIP..CLIP")
    p.add_argument("--train-min-ms", type=float, default=0.0, help="teach only rows of programs this long")
    p.add_argument("--chain-inputs", type=int, nargs="*", default=[],
                   help="give the trees these trips' chain shares (t, a, t - a) as inputs instead")
    p.add_argument("--extra", nargs="*", default=[],
                   help="more input columns: runs/s64/NAME.train.npy for each NAME (the sixty-fourth session's)")
    p.add_argument("--fork-cost", type=float,
                   help="the fork cost C (default: runs/s59/base-ens4.pt's, 815.24; give it before that is rebuilt)")
    p.add_argument("--pick", type=int, nargs="*", help="of the --extra columns, only these")
    d = BoostConfig()  # the package's settings unless given (the sixty-fourth session's sweep)
    for flag, key in SETTINGS:
        p.add_argument(flag, type=type(getattr(d, key)), dest=key)
    return p


def main() -> None:
    a = parser().parse_args()
    settings = {key: getattr(a, key) for _, key in SETTINGS}
    prog, base = programs(a.data)
    x, y = matrix("train")
    assert len(prog) == len(x) == len(y), (len(prog), len(x), len(y))
    if a.fork_cost is None:
        network, _ = load_model("runs/s59/base-ens4.pt")
        a.fork_cost = float(network.log_fork_cost.detach().exp())
    fork_cost = a.fork_cost
    names = np.unique(prog)
    fold_of = dict(zip(names, np.random.default_rng(1234).permutation(len(names)) % a.folds, strict=True))
    fold = np.array([fold_of[h] for h in prog])
    # the raw answers (power 1): the power is chosen from them afterwards (oof_mix.py)
    config = BoostConfig(seeds=1, objectives=(a.objective,), threads=a.threads, stages=a.stages, power=1.0,
                         **{k: v for k, v in settings.items() if v is not None})
    chained = a.chain_inputs or a.chain_k != 1.0  # chain_columns.py's columns, only when read
    z = np.load(RUNS / "chain.train.npz") if chained else None
    if a.chain_inputs:
        extra = [c for t in a.chain_inputs for c in (z[f"t{t}"], z[f"a{t}"], z[f"t{t}"] - z[f"a{t}"])]
        x = np.hstack([x, np.stack(extra, 1).astype(np.float32)])  # after removal_left: its column stays
    if a.extra:
        more = np.hstack([np.load(f"runs/s64/{n}.train.npy") for n in a.extra])
        x = np.hstack([x, (more if a.pick is None else more[:, a.pick]).astype(np.float32)])
    chain = ((1 + (a.chain_k - 1) * z[f"t{a.chain_trips}"]) / (1 + (a.chain_k - 1) * z[f"a{a.chain_trips}"])
             if chained else np.ones(len(y)))
    oof = np.zeros(len(y))
    for k in range(a.folds):
        t0, tr, te = time.time(), (fold != k) & (base >= a.train_min_ms), fold == k
        speedups, weight = taught(x[tr], y[tr], fork_cost)
        speedups = speedups * chain[tr]  # the trees learn the ratio the chain term leaves
        booster = _boost(config.params(a.objective, a.seed), x[tr], np.log(speedups), weight, config, a.clip)
        xt = x[te].astype(np.float64)
        oof[te] = -np.log(xt[:, LEFT_COLUMN] * chain[te] * np.exp(-booster.predict(x[te], num_threads=1))
                          + fork_cost * xt[:, FORK_COLUMN])
        if a.chain_k == 1.0:
            assert np.allclose(oof[te], Boosted([booster], config, fork_cost).answer(x[te]))
        print(f"fold {k}: {te.sum()} rows, MAPE {_mape(y[te], oof[te]):.4f}, {time.time() - t0:.0f} s", flush=True)
    (RUNS / "oof").mkdir(parents=True, exist_ok=True)
    np.save(RUNS / "oof" / f"{a.name}.npy", oof)
    long = base >= 5.0
    print(json.dumps({"variant": vars(a), "oof_mape": _mape(y, oof), "oof_mape_5ms": _mape(y[long], oof[long]),
                      "rows": len(y), "programs": len(names)}))


if __name__ == "__main__":
    main()
