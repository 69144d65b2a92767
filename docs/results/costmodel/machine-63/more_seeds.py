"""Staged L1 boosters of bagging seeds 3-5, trained as the package trains its seeds 0-2 (`boosted._boost` on the
rows `boosted.taught` makes), averaged with runs/s63/blend-stages.pt's L1 boosters 0-2: MAPE of three and of six
seeds on the validation and test rows (out of fold, two seeds averaged beat one by 0.0005).  Reads the sixty-second
session's matrices (machine-62/runs.sh); writes runs/s63/blend-l1x6.pt (the six-seed blend, weight 1.0)."""

import dataclasses
import sys

import numpy as np

sys.path[:0] = [".", "docs/results/costmodel/machine-63"]
from cv_oof import matrix  # noqa: E402

from llmopt.poly.costmodel.boosted import Boosted, _boost, taught  # noqa: E402
from llmopt.poly.costmodel.model import Blend, load_model, save_model  # noqa: E402

blend, meta = load_model("runs/s63/blend-stages.pt")
staged = blend.trees
config = dataclasses.replace(staged.config, objectives=("l1",), seeds=6, threads=2)
x, y = (dict(zip(("train", "validation", "test"), parts, strict=True))
        for parts in zip(*(matrix(s) for s in ("train", "validation", "test")), strict=True))
speedups, weight = taught(x["train"], y["train"], staged.fork_cost)
more = [_boost(config.params("l1", seed), x["train"], np.log(speedups), weight, config) for seed in (3, 4, 5)]
for name, boosters in (("three seeds", staged.boosters[:3]), ("six seeds", staged.boosters[:3] + more)):
    model = Boosted(boosters, config, staged.fork_cost)
    print(name, {s: round(float(np.mean(np.abs(np.exp(model.answer(x[s])) - y[s]) / y[s])), 4)
                 for s in ("validation", "test")}, flush=True)
save_model(Blend(blend.network, Boosted(staged.boosters[:3] + more, config, staged.fork_cost), 1.0),
           "runs/s63/blend-l1x6.pt", meta)
