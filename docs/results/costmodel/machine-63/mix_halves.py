"""The boosters of two package runs on the same training rows, seeds and settings, staged (runs/s63/blend-stages.pt)
and not (runs/s62/blend-final.pt; --stages 1), each L1 seeds 0-2 then Huber seeds 0-2, combined: the staged L1
half with the unstaged Huber half, either run whole, and either L1 half alone (the package's default now is the
staged one).  MAPE on the validation and test rows, averaged as `Boosted.answer` averages."""

import sys

import numpy as np

sys.path[:0] = [".", "docs/results/costmodel/machine-63"]
from cv_oof import matrix  # noqa: E402

from llmopt.poly.costmodel.boosted import Boosted  # noqa: E402
from llmopt.poly.costmodel.model import load_model  # noqa: E402

staged, plain = (load_model(f)[0].trees for f in ("runs/s63/blend-stages.pt", "runs/s62/blend-final.pt"))
variants = (("staged L1 + plain Huber", staged.boosters[:3] + plain.boosters[3:]), ("all staged", staged.boosters),
            ("none staged", plain.boosters), ("staged L1 alone (three seeds)", staged.boosters[:3]),
            ("unstaged L1 alone (three seeds)", plain.boosters[:3]))
for s in ("validation", "test"):
    x, y = matrix(s)
    for name, boosters in variants:
        model = Boosted(boosters, staged.config, staged.fork_cost)
        print(s, name, round(float(np.mean(np.abs(np.exp(model.answer(x)) - y) / y)), 4))
