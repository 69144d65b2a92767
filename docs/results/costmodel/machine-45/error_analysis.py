"""Where a cost model's MAPE on the fa56 test programs >= 5 ms comes from (forty-fifth session): by measured
speedup, by transformation, by program, and what an oracle per-program scale would leave.

    python docs/results/costmodel/machine-45/error_analysis.py runs/s43/inner-s1/costmodel.pt \
        --cache runs/s43/inner-s1/features.pkl
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch
from scipy.optimize import minimize_scalar

sys.path.insert(0, str(Path(__file__).resolve().parents[4]))

from llmopt.poly.costmodel.data import load_rows  # noqa: E402
from llmopt.poly.costmodel.model import load_model, predict_trees  # noqa: E402
from llmopt.poly.costmodel.train import TrainConfig, at_least, featurize_rows, split_of  # noqa: E402

FOLDERS = ("data/poly-costmodel-fa56", "data/poly-costmodel-fa56-5ms")
KINDS = ("parallelization", "tiling", "interchange", "unrolling", "skewing", "reversal")
BUCKETS = ((0, 0.25), (0.25, 0.5), (0.5, 0.8), (0.8, 1.25), (1.25, 2), (2, 4), (4, 1e9))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("model")
    p.add_argument("--cache", help="a training run's features.pkl (the features the model was trained on)")
    args = p.parse_args()
    torch.set_num_threads(1)
    rows = [r for f in FOLDERS for r in load_rows(f)]
    longer = {r["hash"] for r in at_least(rows, 5)}
    cfg = TrainConfig()
    test_rows = [r for r in rows if split_of(r["hash"], cfg.fractions, cfg.seed) == "test" and r["hash"] in longer]
    test = featurize_rows(rows, cfg, False, cache=args.cache)["test"].where(lambda h: h in longer)
    y, progs = np.asarray(test.speedups), np.asarray(test.programs)
    pred = predict_trees(load_model(args.model, "cpu")[0], test.trees)
    ape, ape1 = np.abs(pred - y) / y, np.abs(1 - y) / y
    print(f"{len(y)} rows, {len(set(progs))} programs: MAPE {ape.mean():.4f}, answering 1.0x {ape1.mean():.4f}")
    for lo, hi in BUCKETS:
        m = (y >= lo) & (y < hi)
        print(f"measured [{lo}, {hi}): {m.sum()} rows, part of the MAPE {ape[m].sum() / len(y):.4f} "
              f"(1.0x: {ape1[m].sum() / len(y):.4f}), median answer {np.median(pred[m]):.2f}, measured {np.median(y[m]):.2f}")
    for kind in KINDS:
        m = np.array([any(t["kind"] == kind for t in r["schedule"]) for r in test_rows])
        print(f"{kind}: {m.sum()} rows, MAPE {ape[m].mean():.3f} (1.0x: {ape1[m].mean():.3f})")
    parts = sorted((ape[progs == h].sum() / len(y) for h in set(progs)), reverse=True)
    print(f"the 10 worst programs make {sum(parts[:10]) / ape.mean():.0%} of the MAPE")
    scaled = 0.0
    for h in set(progs):
        m = progs == h
        scaled += minimize_scalar(lambda a, m=m: np.mean(np.abs(pred[m] * np.exp(a) - y[m]) / y[m]),
                                  bounds=(-2, 2), method="bounded").fun * m.sum()
    print(f"with each program's answers rescaled by its best factor (an oracle): {scaled / len(y):.4f}")


if __name__ == "__main__":
    main()
