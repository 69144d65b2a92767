"""MAPE of the mean log answer of a probe group's boosters (two L1 seeds and one Huber: NAME, NAME-s1, NAME-huber;
for "rm": rm-l1, rm-l1-s1, rm-huber) and of each pair, on the validation and test rows (runs/s62/probe/*.npz)."""

import itertools
import json
import sys

import numpy as np

group = sys.argv[1]
names = ["rm-l1", "rm-l1-s1", "rm-huber"] if group == "rm" else [group, f"{group}-s1", f"{group}-huber"]
y = {"v": np.load("runs/s62/invariance.validation.y.npy"), "t": np.load("runs/s62/invariance.test.y.npy")}
answers = {n: np.load(f"runs/s62/probe/{n}.npz") for n in names}
for k in (3, 2):
    for chosen in itertools.combinations(names, k):
        mape = {s: round(float(np.mean(np.abs(np.exp(np.mean([answers[n][s] for n in chosen], 0)) - y[s]) / y[s])), 4)
                for s in "vt"}
        print(json.dumps({"boosters": chosen, "validation": mape["v"], "test": mape["t"]}))
