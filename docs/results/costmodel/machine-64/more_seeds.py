"""Three more seeds (3-5) of the default trees (staged L1, p = 1.08), as `boosted.train_boosted` trains them, to
see how far another three seeds move the test number final.py default-power gave: the three alone (the package's
answer), and all six as the mean of each booster's answer (final.py keeps seeds 0-2's: runs/s64/final/
default-power.SPLIT.npy; the mean of answers matched the package's mean of ratios to the fourth digit).
    python more_seeds.py   (prints JSON)"""

import json
import sys

import numpy as np

sys.path[:0] = ["."]
from final import FORK_COST, OUT, matrix  # noqa: E402

from llmopt.poly.costmodel.boosted import BoostConfig, Boosted, _boost, _mape, taught  # noqa: E402

config = BoostConfig(threads=2)
x, y = matrix("train")
speedups, weight = taught(x, y, FORK_COST)
boosters = [_boost(config.params("l1", seed), x, np.log(speedups), weight, config) for seed in (3, 4, 5)]
report = {"seeds": [3, 4, 5], "config": {"power": config.power, "stages": config.stages}}
for split in ("validation", "test"):
    xs, ys = matrix(split)
    each = np.stack([Boosted([b], config, FORK_COST).answer(xs) for b in boosters])
    first = np.load(OUT / f"default-power.{split}.npy")
    report[split] = {"seeds_3_5": _mape(ys, Boosted(boosters, config, FORK_COST).answer(xs)),
                     "each": [round(_mape(ys, e), 4) for e in each],
                     "seeds_0_2_mean_of_answers": _mape(ys, first.mean(0)),
                     "six_seeds_mean_of_answers": _mape(ys, np.vstack([first, each]).mean(0))}
print(json.dumps(report))
