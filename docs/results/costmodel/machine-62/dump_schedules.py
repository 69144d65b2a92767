"""The rows' schedules in the order of runs/s60/all.*.npy and runs/s61/dom.*.npy (machine-60/trees.py load_parts,
--all-training-rows: every training row, the validation and test rows of programs >= 5 ms), checked against the
labels the sixty-first session kept (runs/s61/probe/ans.pkl), into runs/s62/schedules.pkl (probe_schedule.py)."""

import pickle
import sys

import numpy as np

sys.path[:0] = [".", "docs/results/costmodel/machine-60"]
from trees import MIN_MS, RECIPE, load_rows, split_of  # noqa: E402

rows = load_rows(sys.argv[1])
for r in rows:
    r["_split"] = split_of(r["hash"], RECIPE.fractions, RECIPE.seed)
longer = {r["hash"] for r in rows if float(r["baseline_seconds"]) * 1e3 >= MIN_MS}
kept = {s: [r for r in rows if r["_split"] == s and (s == "train" or r["hash"] in longer)]
        for s in ("train", "validation", "test")}
labels = pickle.load(open("runs/s61/probe/ans.pkl", "rb"))
for s, key in (("train", "ytr"), ("validation", "yv"), ("test", "yt")):
    assert np.allclose([max(r["speedup"], 0.01) for r in kept[s]], labels[key]), s  # train.MIN_SPEEDUP
pickle.dump({s: [r["schedule"] for r in part] for s, part in kept.items()}, open("runs/s62/schedules.pkl", "wb"))
