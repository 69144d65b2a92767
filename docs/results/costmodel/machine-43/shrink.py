"""Does shrinking log-predictions toward 1.0x (pred**alpha), fitted on validation, lower test MAPE?

    PYTHONPATH=. python docs/results/costmodel/machine-43/shrink.py MODEL.pt [FEATURES.pkl]

FEATURES.pkl: a training run's features cache (the forty-third session used runs/s43/inner-s0/features.pkl)."""

import sys

import numpy as np
import torch

from llmopt.poly.costmodel.data import load_rows
from llmopt.poly.costmodel.model import load_model, predict_trees
from llmopt.poly.costmodel.train import TrainConfig, at_least, featurize_rows

TRAIN = "data/poly-costmodel-fa56,data/poly-costmodel-fa56-5ms,data/poly-costmodel-fa56-inner"
TESTS = [("fa56", "data/poly-costmodel-fa56,data/poly-costmodel-fa56-5ms"), ("inner", "data/poly-costmodel-fa56-inner"),
         ("retest", "data/poly-costmodel-retest"), ("retest2", "data/poly-costmodel-retest2")]


def mape(pred: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean(np.abs(pred - y) / y))


def parts(folders: str, cache: str | None) -> dict:
    """The validation and test programs >= 5 ms of `folders` (comma-joined)."""
    rows = [r for f in folders.split(",") for r in load_rows(f)]
    sets = featurize_rows(rows, TrainConfig(), False, cache=cache)
    longer = {r["hash"] for r in at_least(rows, 5)}
    return {k: sets[k].where(lambda h: h in longer) for k in ("validation", "test")}


def main() -> None:
    torch.set_num_threads(1)
    model = load_model(sys.argv[1], "cpu")[0]
    cache = sys.argv[2] if len(sys.argv) > 2 else None
    val = parts(TRAIN, cache)["validation"]
    pv, yv = predict_trees(model, val.trees), np.asarray(val.speedups)
    alphas = np.linspace(0.0, 1.2, 25)
    by_alpha = [mape(pv ** a, yv) for a in alphas]
    best = float(alphas[int(np.argmin(by_alpha))])
    print("validation mape by alpha", {round(float(a), 2): round(m, 4) for a, m in zip(alphas, by_alpha, strict=True)},
          "best", best)
    for name, folders in TESTS:
        t = parts(folders, cache)["test"]
        p, y = predict_trees(model, t.trees), np.asarray(t.speedups)
        print(name, "n", len(y), "raw", round(mape(p, y), 4), f"alpha {best}", round(mape(p ** best, y), 4),
              "const", round(mape(np.ones_like(y), y), 4))


if __name__ == "__main__":
    main()
