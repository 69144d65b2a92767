"""Rows whose schedule moves a loop that no access of an idempotent statement moves with (a time loop around
B[i] = f(A[i])) innermost, where LLVM can hoist the statement out of it: measured speedup against a model's
answer.  A lead for a feature, fifty-third session (docs/results/costmodel/README.md); from the repo root:

    python docs/results/costmodel/machine-53/hoisted.py DATA MODEL FEATURES.pkl validation
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[4]))

from llmopt.poly.costmodel.data import load_rows  # noqa: E402
from llmopt.poly.costmodel.features import _flags, _level_trips, _stride_maps, _strides_along  # noqa: E402
from llmopt.poly.costmodel.model import load_model, predict_trees  # noqa: E402
from llmopt.poly.costmodel.train import TrainConfig, at_least, featurize_rows, split_of  # noqa: E402
from llmopt.poly.program import program_from_dict  # noqa: E402
from llmopt.poly.schedule import Schedule, state  # noqa: E402


def hoisted(prog, st) -> float:
    """log2 of the trips LLVM can hoist an idempotent statement out of (its innermost loops along which no
    access moves), averaged over the statements weighted by their iterations."""
    names, total, work = set(prog.tensors), 0.0, 0.0
    for s in prog.statements:
        levels, maps = _flags(prog, s.name, st[s.name]), _stride_maps(prog, s)
        trips = _level_trips(prog, st, s.name, levels)
        idempotent = "+=" not in s.body and s.write(names).tensor not in {a.tensor for a in s.reads(names)}
        gone = 0.0
        for flags, trip in zip(reversed(levels), reversed(trips), strict=True):
            if any(_strides_along(flags["step"], maps)):
                break
            gone += math.log2(max(trip, 1))
        iterations = 2 ** sum(math.log2(max(t, 1)) for t in trips)
        total, work = total + iterations, work + iterations * (gone if idempotent else 0.0)
    return work / max(total, 1)


def main() -> None:
    data, model_path, cache, split = sys.argv[1:5]
    torch.set_num_threads(1)
    rows = at_least(load_rows(data), 5)
    model, meta = load_model(model_path, "cpu")
    cfg = TrainConfig(fractions=tuple(meta["fractions"]))
    ds = featurize_rows(rows, cfg, False, cache=cache)[split]
    rs = [r for r in rows if split_of(r["hash"], cfg.fractions, cfg.seed) == split]
    pred, y = predict_trees(model, ds.trees), np.asarray(ds.speedups)
    programs, gain = {}, []
    for r in rs:
        if r["hash"] not in programs:
            prog = program_from_dict(r["program"])
            programs[r["hash"]] = (prog, hoisted(prog, state(prog, Schedule())))
        prog, base = programs[r["hash"]]
        gain.append(hoisted(prog, state(prog, Schedule.from_list(r["schedule"]))) - base)
    h, ape = np.asarray(gain), np.abs(pred - y) / y
    print(split, "rows", len(y), "MAPE", round(float(ape.mean()), 4))
    for lo, hi in [(-99, -0.5), (-0.5, 0.5), (0.5, 2), (2, 99)]:
        m = (h >= lo) & (h < hi)
        if m.any():
            print(f"hoisted log2 gain [{lo},{hi}): rows {m.sum()}, measured median {np.median(y[m]):.2f}, answer "
                  f"median {np.median(pred[m]):.2f}, MAPE {ape[m].mean():.3f}, of the total {ape[m].sum() / len(y):.4f}")


if __name__ == "__main__":
    main()
