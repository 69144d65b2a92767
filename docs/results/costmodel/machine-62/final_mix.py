"""The package's final trees (runs/s62/blend-final.pt, six boosters, or the blend file given: the sixty-third
session's runs/s63/blend-stages.pt) answer by answer: MAPE of all six (the
package's answer), of the L1 and Huber halves mixed at other weights, of each booster alone, and of the answer
raised to a power (a calibration against the shrinkage toward 1.0x; weights and powers are to be chosen on the
validation rows).  Reads the invariance matrices of probe_fills.py and removal_left of probe_removal.py."""

import sys

import numpy as np

sys.path.insert(0, ".")
from llmopt.poly.costmodel.boosted import FORK_COLUMN, LEFT_COLUMN  # noqa: E402
from llmopt.poly.costmodel.model import load_model  # noqa: E402

HELD_OUT = ("validation", "test")
trees = load_model(sys.argv[1] if len(sys.argv) > 1 else "runs/s62/blend-final.pt")[0].trees
x = {s: np.hstack([np.load(f"runs/s62/invariance.{s}.npy"), np.load(f"runs/s62/left.{s}.npy")[:, None].astype(np.float32)])
     for s in HELD_OUT}
y = {s: np.load(f"runs/s62/invariance.{s}.y.npy") for s in HELD_OUT}
raw = {s: np.array([b.predict(x[s], num_threads=2) for b in trees.boosters]) for s in HELD_OUT}


def answer(s: str, learned: np.ndarray) -> np.ndarray:
    """Log speedups from the boosters' log ratio, as `boosted.Boosted.answer` makes them."""
    return -np.log(x[s][:, LEFT_COLUMN] * np.exp(-learned) + trees.fork_cost * x[s][:, FORK_COLUMN])


def mape(s: str, log_speedups: np.ndarray) -> float:
    return round(float(np.mean(np.abs(np.exp(log_speedups) - y[s]) / y[s])), 4)


print("all six", [mape(s, answer(s, raw[s].mean(0))) for s in HELD_OUT])
for w in (0.3, 0.4, 0.5, 0.6, 0.7):
    print("L1 share", w, [mape(s, answer(s, w * raw[s][:3].mean(0) + (1 - w) * raw[s][3:].mean(0))) for s in HELD_OUT])
for k, b in enumerate(trees.boosters):
    print("booster", k, b.params.get("objective", "?"), [mape(s, answer(s, raw[s][k])) for s in HELD_OUT])
for p in (1.0, 1.02, 1.04, 1.06, 1.08, 1.1, 1.15, 1.2):
    print("power", p, [mape(s, p * answer(s, raw[s].mean(0))) for s in HELD_OUT])
