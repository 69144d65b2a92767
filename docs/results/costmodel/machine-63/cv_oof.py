"""Out-of-fold answers of the package's trees on the training programs, for error analysis and choices that do
not read the test programs: the training programs (runs/s62/invariance.train.npy's rows, with removal_left last
as `boosted.tree_features` lays them out) are split by program into K folds; one booster per fold is taught on
the others exactly as `boosted.train_boosted` teaches (`boosted.taught`) and answers the fold as `Boosted.answer`
does; with --chain-k K the trees are also taught, and answer through, the chain term: the time ratio times
(1 + (K-1) t) / (1 + (K-1) a), t and a the work shares that run a chain of at least --chain-trips trips in the
transformed and the untransformed tree (chain_columns.py).  Program ids are saved once (runs/s63/train.programs.npy, from the features cache).
Prints the out-of-fold MAPE on the rows of programs >= 5 ms; answers in runs/s63/oof/NAME.npy."""

import argparse
import json
import sys
import time
from pathlib import Path

import lightgbm as lgb
import numpy as np

sys.path[:0] = ["."]
from llmopt.poly.costmodel.boosted import FORK_COLUMN, LEFT_COLUMN, BoostConfig, Boosted, _mape, taught  # noqa: E402
from llmopt.poly.costmodel.model import load_model  # noqa: E402

RUNS = Path("runs/s63")


def programs(data: str) -> tuple[np.ndarray, np.ndarray]:
    """Each training row's program hash and its program's baseline (ms), in the order of `boosted._parts`."""
    out = RUNS / "train.programs.npz"
    if not out.is_file():
        from llmopt.poly.costmodel.data import load_rows
        from llmopt.poly.costmodel.train import TrainConfig, at_least, featurize_rows

        _, meta = load_model("runs/s59/base-ens4.pt")
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


def staged(params: dict, x: np.ndarray, target: np.ndarray, weight: np.ndarray, rounds: int, stages: int,
           clip: float) -> list:
    """Boosters whose sum answers `target` (log speedups): `stages` runs of rounds/stages each, every run after the
    first continuing from the sum so far (init_score) with each row weighted by its answer so far over its target
    (clipped): the weight MAPE gives a row's error in log space near the answer, where 1/speedup is its weight
    only for an answer of 1.  One stage is the package's booster."""
    data = lgb.Dataset(x, target, weight=weight, free_raw_data=False)
    score, boosters = np.zeros(len(target)), []
    for stage in range(stages):
        if stage:
            data.set_init_score(score)
            data.set_weight(np.clip(np.exp(score - target), 1 / clip, clip))
        boosters.append(lgb.train(params, data, rounds // stages))
        score = score + boosters[-1].predict(x, num_threads=params["num_threads"])
    return boosters


def main() -> None:
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
                   help="reweight the rows this many times while boosting (`staged`): 1, the package's way")
    p.add_argument("--clip", type=float, default=10.0, help="the reweighted rows' weights stay within 1/CLIP..CLIP")
    p.add_argument("--train-min-ms", type=float, default=0.0, help="teach only rows of programs this long")
    p.add_argument("--chain-inputs", type=int, nargs="*", default=[],
                   help="give the trees these trips' chain shares (t, a, t - a) as inputs instead")
    a = p.parse_args()
    prog, base = programs(a.data)
    x = np.hstack([np.load("runs/s62/invariance.train.npy"),
                   np.load("runs/s62/left.train.npy")[:, None].astype(np.float32)])
    y = np.load("runs/s62/invariance.train.y.npy")
    assert len(prog) == len(x) == len(y), (len(prog), len(x), len(y))
    network, _ = load_model("runs/s59/base-ens4.pt")
    fork_cost = float(network.log_fork_cost.detach().exp())
    names = np.unique(prog)
    fold_of = dict(zip(names, np.random.default_rng(1234).permutation(len(names)) % a.folds, strict=True))
    fold = np.array([fold_of[h] for h in prog])
    config = BoostConfig(seeds=1, objectives=(a.objective,), threads=a.threads)
    z = np.load(RUNS / "chain.train.npz")
    if a.chain_inputs:
        extra = [c for t in a.chain_inputs for c in (z[f"t{t}"], z[f"a{t}"], z[f"t{t}"] - z[f"a{t}"])]
        x = np.hstack([x, np.stack(extra, 1).astype(np.float32)])  # after removal_left: its column stays
    chain = (1 + (a.chain_k - 1) * z[f"t{a.chain_trips}"]) / (1 + (a.chain_k - 1) * z[f"a{a.chain_trips}"])
    oof = np.zeros(len(y))
    for k in range(a.folds):
        t0, tr, te = time.time(), (fold != k) & (base >= a.train_min_ms), fold == k
        speedups, weight = taught(x[tr], y[tr], fork_cost)
        speedups = speedups * chain[tr]  # the trees learn the ratio the chain term leaves
        boosters = staged(config.params(a.objective, a.seed), x[tr], np.log(speedups), weight, config.rounds,
                          a.stages, a.clip)
        one = Boosted(boosters, config, fork_cost)
        learned = np.sum([b.predict(x[te], num_threads=1) for b in boosters], axis=0)
        xt = x[te].astype(np.float64)
        oof[te] = -np.log(xt[:, LEFT_COLUMN] * chain[te] * np.exp(-learned) + fork_cost * xt[:, FORK_COLUMN])
        if a.chain_k == 1.0 and not a.chain_inputs and a.stages == 1:
            assert np.allclose(oof[te], one.answer(x[te]))
        print(f"fold {k}: {te.sum()} rows, MAPE {_mape(y[te], oof[te]):.4f}, {time.time() - t0:.0f} s", flush=True)
    (RUNS / "oof").mkdir(parents=True, exist_ok=True)
    np.save(RUNS / "oof" / f"{a.name}.npy", oof)
    long = base >= 5.0
    print(json.dumps({"variant": vars(a), "oof_mape": _mape(y, oof), "oof_mape_5ms": _mape(y[long], oof[long]),
                      "rows": len(y), "programs": len(names)}))


if __name__ == "__main__":
    main()
