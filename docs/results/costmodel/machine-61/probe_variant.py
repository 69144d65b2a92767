"""One booster (255 leaves x 400 rounds unless told) on the dominant-computation matrices (probe_dominant.py) with
the fork term taken from the target (probe_forkfree.py dom), one change at a time: --second adds the second-largest
computation's vectors (transformed, untransformed, difference); --leaves/--rounds/--min-leaf/--floor the settings.
Prints validation and test MAPE, alone and blended with the ensemble of four (runs/s61/probe/ans.pkl)."""
import argparse, json, pickle, subprocess, sys
import numpy as np
import lightgbm as lgb
sys.path[:0] = [".", "docs/results/costmodel/machine-60"]
p = argparse.ArgumentParser()
p.add_argument("--second", action="store_true"); p.add_argument("--leaves", type=int, default=255)
p.add_argument("--rounds", type=int, default=400); p.add_argument("--min-leaf", type=int, default=40)
p.add_argument("--floor", type=float, default=0.2); p.add_argument("--seed", type=int, default=0)
p.add_argument("--lr", type=float, default=0.03); p.add_argument("--ff", type=float, default=0.3)
p.add_argument("--objective", default="l1", help="LightGBM's objective on the log target (l1, huber, regression)")
p.add_argument("--shift", action="store_true", help="then shift the log answers by the constant best on validation")
p.add_argument("--boosting", default="gbdt", help="gbdt, or rf: a random forest (bagging 0.632, every tree alone)")
p.add_argument("--amdahl", action="store_true",
               help="teach the time ratio of the changed computations alone (features.changed_share c of the work): "
                    "r = (1 - c) + c q, q taught, at least 0.05")
p.add_argument("--name", required=True)
a = p.parse_args()
C = 815.24
d = pickle.load(open("runs/s61/probe/ans.pkl", "rb"))
S = ("train", "validation", "test")
x = {s: np.load(f"runs/s61/dom.{s}.npy") for s in S}
if a.second:
    import trees as T
    from llmopt.poly.costmodel.features import work_shares
    D = subprocess.check_output(["bash", "-c", "source docs/results/costmodel/fcaa_recipe.sh && folder_at 3f5a413"], text=True).strip()
    args = argparse.Namespace(data=D, cache="runs/s59/base-s0/features.pkl", matrices="runs/s60/all", plain=False, all_training_rows=True)
    parts = T.load_parts(args)
    def extra(t):
        w = work_shares(t.anchor.comps); o = np.argsort(-w, kind="stable")
        if len(o) < 2:
            return np.zeros(3 * t.comps.shape[1], np.float32)
        k = o[1]
        return np.concatenate([t.comps[k], t.anchor.comps[k], t.comps[k] - t.anchor.comps[k]]).astype(np.float32)
    x = {s: np.hstack([x[s], np.stack([extra(t) for t in part.trees])]) for s, part in zip(S, parts)}
load = {s: x[s][:, 7657].astype(np.float64) for s in S}
y = {"train": d["ytr"], "validation": d["yv"], "test": d["yt"]}
mape = lambda y, p: float(np.mean(np.abs(p - y) / y))
r = 1 / y["train"]; yf = 1 / np.maximum(r - C * load["train"], a.floor * r)
share = {s: np.clip(x[s][:, 7658].astype(np.float64), 0.0, 1.0) for s in S}
if a.amdahl:  # the changed part's ratio q: r_free = (1 - c) + c q; rows with nothing changed keep theirs
    c = share["train"]; rf = 1 / yf
    q = np.where(c > 0.01, np.maximum((rf - (1 - c)) / np.maximum(c, 0.01), 0.05), rf)
    yf = 1 / q
params = dict(objective=a.objective, learning_rate=a.lr, num_leaves=a.leaves, min_data_in_leaf=a.min_leaf, bagging_fraction=0.8,
              bagging_freq=1, feature_fraction=a.ff, lambda_l2=1.0, num_threads=1, verbose=-1, seed=a.seed,
              boosting=a.boosting)
if a.boosting == "rf":
    params["bagging_fraction"] = 0.632
b = lgb.train(params, lgb.Dataset(x["train"], np.log(yf), weight=1 / yf), a.rounds)
raw = {s: b.predict(x[s]) for s in ("validation", "test")}
shift = 0.0
if a.shift:  # the constant that minimizes validation MAPE (an L2 fit answers means, not MAPE's weighted medians)
    grid = np.arange(-0.15, 0.1501, 0.005)
    shift = float(grid[np.argmin([mape(y["validation"], np.exp(-np.log(np.exp(-raw["validation"] - g) + C * load["validation"]))) for g in grid])])
def ratio(s, learned):
    if not a.amdahl:
        return np.exp(-learned)
    c = share[s]
    return np.where(c > 0.01, (1 - c) + c * np.exp(-learned), np.exp(-learned))
ans = {s: -np.log(ratio(s, raw[s] + shift) + C * load[s]) for s in ("validation", "test")}
out = {"variant": vars(a), "shift": shift, "validation": mape(y["validation"], np.exp(ans["validation"])), "test": mape(y["test"], np.exp(ans["test"]))}
for w in (0.7, 0.8, 0.9):
    out[f"blend_{w}"] = {"validation": mape(y["validation"], np.exp(w * ans["validation"] + (1 - w) * d["nv"])),
                         "test": mape(y["test"], np.exp(w * ans["test"] + (1 - w) * d["ns"]))}
print(json.dumps(out))
np.savez(f"runs/s61/probe/{a.name}.npz", v=ans["validation"], t=ans["test"])
