"""The staged L1 boosters (runs/s63/blend-stages.pt, boosters 0-2) with the unstaged Huber ones of the sixty-second
session's package run (runs/s62/blend-final.pt, boosters 3-5; the same training rows, seeds and settings but
--stages 1), as the package now trains them (`BoostConfig.stages` applies to L1 only): MAPE on the validation
and test rows, averaged as `Boosted.answer` averages."""

import sys

import numpy as np

sys.path.insert(0, ".")
from llmopt.poly.costmodel.boosted import Boosted  # noqa: E402
from llmopt.poly.costmodel.model import load_model  # noqa: E402

staged, plain = (load_model(f)[0].trees for f in ("runs/s63/blend-stages.pt", "runs/s62/blend-final.pt"))
mixed = Boosted(staged.boosters[:3] + plain.boosters[3:], staged.config, staged.fork_cost)
for s in ("validation", "test"):
    x = np.hstack([np.load(f"runs/s62/invariance.{s}.npy"), np.load(f"runs/s62/left.{s}.npy")[:, None].astype(np.float32)])
    y = np.load(f"runs/s62/invariance.{s}.y.npy")
    for name, model in (("staged L1 + plain Huber", mixed), ("all staged", staged), ("none staged", plain)):
        print(s, name, round(float(np.mean(np.abs(np.exp(model.answer(x)) - y) / y)), 4))
    l1 = Boosted(staged.boosters[:3], staged.config, staged.fork_cost)
    print(s, "staged L1 alone (three seeds)", round(float(np.mean(np.abs(np.exp(l1.answer(x)) - y) / y)), 4))
    l1 = Boosted(plain.boosters[:3], plain.config, plain.fork_cost)
    print(s, "unstaged L1 alone (three seeds)", round(float(np.mean(np.abs(np.exp(l1.answer(x)) - y) / y)), 4))
