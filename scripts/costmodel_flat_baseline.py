"""A diagnostic for the cost model (issue 16): how far a gradient-boosted regressor on *flattened*
features gets on the same program-level split, and a constant predictor, so the network's test MAPE
can be read against both (underfitting vs too few programs).

Each (program, schedule) tree becomes the sum, max and min of its computation vectors plus the number
of computations; the regressor is scikit-learn's `HistGradientBoostingRegressor` with the absolute
error weighted by 1/speedup (that is, MAPE).  Needs scikit-learn (`pip install scikit-learn`; not a
dependency of llmopt).  Reuses the training run's feature cache:

    python scripts/costmodel_flat_baseline.py data/poly-costmodel --cache runs/cm-673/features.pkl --out F.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from llmopt.poly.costmodel.data import load_rows  # noqa: E402
from llmopt.poly.costmodel.train import SPLITS, TrainConfig, featurize_rows  # noqa: E402


def flat(tree) -> np.ndarray:
    comps = np.asarray(tree.comps, dtype=float)
    return np.concatenate([comps.sum(0), comps.max(0), comps.min(0), [len(comps)]])


def mape(pred: np.ndarray, target: np.ndarray) -> float:
    return float(np.mean(np.abs(pred - target) / target))


def main() -> int:
    from sklearn.ensemble import HistGradientBoostingRegressor

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("data")
    p.add_argument("--cache", default=None, help="a training run's features.pkl (featurizing is slow)")
    p.add_argument("--iterations", type=int, default=600)
    p.add_argument("--out", default=None, help="write the MAPEs as JSON here")
    args = p.parse_args()

    sets = featurize_rows(load_rows(args.data), TrainConfig(), progress=False, cache=args.cache)
    x = {s: np.stack([flat(t) for t in sets[s].trees]) for s in SPLITS}
    y = {s: np.asarray(sets[s].speedups) for s in SPLITS}
    start = time.time()
    model = HistGradientBoostingRegressor(loss="absolute_error", max_iter=args.iterations, learning_rate=0.05,
                                          max_leaf_nodes=63, random_state=0)
    model.fit(x["train"], y["train"], sample_weight=1 / y["train"])
    result = {"samples": {s: len(y[s]) for s in SPLITS},
              "programs": {s: len(set(sets[s].programs)) for s in SPLITS},
              "constant_1": {s: mape(np.ones_like(y[s]), y[s]) for s in SPLITS},
              "flat_gbt": {s: mape(model.predict(x[s]), y[s]) for s in SPLITS},
              "fit_seconds": round(time.time() - start, 1)}
    print(json.dumps(result, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
