"""Does a monotone recalibration of a cost model's answers pass answering 1.0x on one machine's labels?

Fits p -> p**a, then 1.0 where |log| < t (a shrink toward 1 and a dead zone: monotone, so a search's ranking
of one program's schedules is unchanged) on the validation programs >= 5 ms of VALDATA (labels of the machine
the test labels come from), then scores raw, constant and recalibrated MAPE on the test programs of each TEST
folder and of VALDATA.

    python scripts/costmodel_shrink.py llmopt/poly/data/costmodel.pt runs/cm-x/costmodel.pt \\
        --val data/poly-costmodel-fa56,data/poly-costmodel-fa56-5ms \\
        --test data/poly-costmodel-retest data/poly-costmodel-retest2
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from llmopt.poly.costmodel.data import load_folders  # noqa: E402
from llmopt.poly.costmodel.model import load_model, predict_trees  # noqa: E402
from llmopt.poly.costmodel.model import mape as mape_tensor  # noqa: E402
from llmopt.poly.costmodel.train import TrainConfig, at_least, featurize_rows  # noqa: E402

GRID = [(a, t) for a in np.linspace(0.0, 1.2, 25) for t in (0.0, 0.05, 0.1, 0.2, 0.3, 0.5)]


def mape(pred, y) -> float:
    """The training metric (`model.mape`) on numpy predictions."""
    return float(mape_tensor(torch.as_tensor(np.asarray(pred, dtype=float)), torch.as_tensor(np.asarray(y, dtype=float))))


def shrink(pred, a: float, t: float):
    q = pred ** a
    return np.where(np.abs(np.log(q)) < t, 1.0, q)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("models", nargs="+")
    p.add_argument("--val", required=True, help="folders (comma-separated) whose validation programs fit the shrink")
    p.add_argument("--test", nargs="*", default=[], help="more folders whose test programs are scored")
    p.add_argument("--min-baseline-ms", type=float, default=5.0)
    args = p.parse_args()
    torch.set_num_threads(1)
    sets = featurize_rows(at_least(load_folders(args.val), args.min_baseline_ms), TrainConfig(), False)
    tests = {f: featurize_rows(load_folders(f), TrainConfig(), False)["test"] for f in args.test}
    tests[f"{args.val} (test >= {args.min_baseline_ms:g} ms)"] = sets["test"]
    for m in args.models:
        model = load_model(m, "cpu")[0]
        pv, yv = predict_trees(model, sets["validation"].trees), sets["validation"].speedups
        a, t = min(GRID, key=lambda g: mape(shrink(pv, *g), yv))
        print(f"{m}: fitted a={a:.2f} t={t:.2f} on validation (raw {mape(pv, yv):.4f}, "
              f"constant {mape(np.ones(len(pv)), yv):.4f}, recalibrated {mape(shrink(pv, a, t), yv):.4f})")
        for name, ds in tests.items():
            pred = predict_trees(model, ds.trees)
            print(f"   {name}: raw {mape(pred, ds.speedups):.4f}, constant {mape(np.ones(len(pred)), ds.speedups):.4f}, "
                  f"recalibrated {mape(shrink(pred, a, t), ds.speedups):.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
