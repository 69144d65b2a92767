"""Does shrinking log-predictions toward 1.0x (pred**alpha), fitted on validation, lower test MAPE?"""
import json, sys
import numpy as np, torch
from llmopt.poly.costmodel.data import load_rows
from llmopt.poly.costmodel.model import load_model, predict_trees
from llmopt.poly.costmodel.train import TrainConfig, featurize_rows, at_least
torch.set_num_threads(1)
model = load_model(sys.argv[1], "cpu")[0]
cache = "runs/s43/inner-s0/features.pkl"
def parts(folders):
    rows = [r for f in folders.split(",") for r in load_rows(f)]
    sets = featurize_rows(rows, TrainConfig(), False, cache=cache)
    longer = {r["hash"] for r in at_least(rows, 5)}
    return {k: sets[k].where(lambda h: h in longer) for k in ("validation", "test")}
train_folders = "data/poly-costmodel-fa56,data/poly-costmodel-fa56-5ms,data/poly-costmodel-fa56-inner"
val = parts(train_folders)["validation"]
pv, yv = predict_trees(model, val.trees), np.asarray(val.speedups)
alphas = np.linspace(0.0, 1.2, 25)
mape = lambda p, y: float(np.mean(np.abs(p - y) / y))
vm = [mape(pv ** a, yv) for a in alphas]
best = float(alphas[int(np.argmin(vm))])
print("validation mape by alpha", {round(float(a),2): round(m,4) for a, m in zip(alphas, vm)}, "best", best)
for name, folders in [("fa56", "data/poly-costmodel-fa56,data/poly-costmodel-fa56-5ms"), ("inner", "data/poly-costmodel-fa56-inner"),
                      ("retest", "data/poly-costmodel-retest"), ("retest2", "data/poly-costmodel-retest2")]:
    t = parts(folders)["test"]
    p, y = predict_trees(model, t.trees), np.asarray(t.speedups)
    print(name, "n", len(y), "raw", round(mape(p, y), 4), f"alpha {best}", round(mape(p ** best, y), 4), "const", round(mape(np.ones_like(y), y), 4))
