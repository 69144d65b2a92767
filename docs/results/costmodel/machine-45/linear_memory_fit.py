"""How much of log speedup the memory views explain linearly: least squares of log speedup on the traffic and
cache views' differences (transformed less untransformed, summed over computations), fitted on the training
programs >= 5 ms of this machine's three folders (forty-fifth session).  Needs `cache-view.patch` applied
(`git apply docs/results/costmodel/machine-45/cache-view.patch`) and a features cache made with it.

    python docs/results/costmodel/machine-45/linear_memory_fit.py runs/s45/cachedir-s1/features.pkl
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[4]))

from llmopt.poly.costmodel.data import load_rows  # noqa: E402
from llmopt.poly.costmodel.features import TRAFFIC_VIEW_FEATURES, VIEW_FEATURES  # noqa: E402
from llmopt.poly.costmodel.train import TrainConfig, at_least, featurize_rows  # noqa: E402

FOLDERS = ("data/poly-costmodel-fa56", "data/poly-costmodel-fa56-5ms", "data/poly-costmodel-fa56-inner")


def design(ds) -> np.ndarray:
    return np.array([np.append(t.comps.sum(0)[VIEW_FEATURES:TRAFFIC_VIEW_FEATURES]
                               - t.origin.comps.sum(0)[VIEW_FEATURES:TRAFFIC_VIEW_FEATURES], 1.0) for t in ds.trees])


def main() -> None:
    rows = at_least([r for f in FOLDERS for r in load_rows(f)], 5)
    sets = featurize_rows(rows, TrainConfig(), False, cache=sys.argv[1])
    fa56 = {r["hash"] for f in FOLDERS[:2] for r in load_rows(f)}
    w, *_ = np.linalg.lstsq(design(sets["train"]), np.log(sets["train"].speedups), rcond=None)
    for name, ds in (("train", sets["train"]), ("validation", sets["validation"]),
                     ("test, fa56", sets["test"].where(lambda h: h in fa56))):
        y = np.asarray(ds.speedups)
        pred = np.exp(design(ds) @ w)
        r2 = 1 - np.var(np.log(y) - np.log(pred)) / np.var(np.log(y))
        print(f"{name}: MAPE {np.mean(abs(pred - y) / y):.4f}, answering 1.0x {np.mean(abs(1 - y) / y):.4f}, "
              f"R2 of log speedup {r2:.3f}")


if __name__ == "__main__":
    main()
