"""Does a dead zone help (answer 1.0x wherever a model's answer is within exp(+-tau) of 1, tau fitted for MAPE
on the validation programs >= 5 ms)?  The models' false moves on rows that stay ~1x are a third of their error
(forty-fifth session).  One line per model: validation and test MAPE, tau, and the same with the dead zone.

    python docs/results/costmodel/machine-46/dead_zone.py FOLDERS FEATURES_PKL MODEL [MODEL ...]

FOLDERS comma-joined: the forty-sixth session ran it on the three fa56 folders' validation programs with
the fa56 test programs (`--test-folders data/poly-costmodel-fa56,data/poly-costmodel-fa56-5ms`), and on
`data/poly-costmodel-fcaa-5ms` alone.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[4]))

from llmopt.poly.costmodel.data import load_rows  # noqa: E402
from llmopt.poly.costmodel.model import load_model, predict_trees  # noqa: E402
from llmopt.poly.costmodel.train import TrainConfig, at_least, featurize_rows  # noqa: E402


def held_out(folders: str, part: str, cache: str):
    """One split's programs >= 5 ms of `folders`."""
    rows = [r for f in folders.split(",") for r in load_rows(f)]
    longer = {r["hash"] for r in at_least(rows, 5)}
    return featurize_rows(rows, TrainConfig(), False, cache=cache)[part].where(lambda h: h in longer)


def mape(pred: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean(np.abs(pred - y) / y))


def dead(pred: np.ndarray, tau: float) -> np.ndarray:
    return np.where(np.abs(np.log(pred)) < tau, 1.0, pred)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("folders")
    p.add_argument("cache")
    p.add_argument("models", nargs="+")
    p.add_argument("--test-folders", help="score the test programs of these folders instead (comma-joined)")
    args = p.parse_args()
    torch.set_num_threads(1)
    val = held_out(args.folders, "validation", args.cache)
    test = held_out(args.test_folders or args.folders, "test", args.cache)
    yv, yt = np.asarray(val.speedups), np.asarray(test.speedups)
    print(f"answering 1.0x: validation {mape(np.ones_like(yv), yv):.4f}, test {mape(np.ones_like(yt), yt):.4f}")
    for name in args.models:
        model = load_model(name, "cpu")[0]
        pv, pt = predict_trees(model, val.trees), predict_trees(model, test.trees)
        tau = min(np.linspace(0, 0.5, 51), key=lambda t: mape(dead(pv, t), yv))
        print(f"{name}: validation {mape(pv, yv):.4f}, test {mape(pt, yt):.4f}; dead zone tau {tau:.2f}: "
              f"validation {mape(dead(pv, tau), yv):.4f}, test {mape(dead(pt, tau), yt):.4f}")


if __name__ == "__main__":
    main()
