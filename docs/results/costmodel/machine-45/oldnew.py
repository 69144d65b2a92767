"""Cost models' MAPE on the test programs >= 5 ms of the fa56 folders (seeds below 7485) and of the programs
seeds 7485-7675 (timed on fcaa1a686a5a63e3, now `data/poly-costmodel-fcaa-5ms`): the forty-fifth session's
accidental mix of two machines' labels.  Run it with the fcaa rows beside the fa56 ones, as they were then:

    python docs/results/costmodel/machine-45/oldnew.py FEATURES_PKL MODEL [MODEL ...]
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[4]))

from llmopt.poly.costmodel.data import load_rows  # noqa: E402
from llmopt.poly.costmodel.model import load_model, predict_trees  # noqa: E402
from llmopt.poly.costmodel.train import TrainConfig, at_least, featurize_rows  # noqa: E402

FOLDERS = ("data/poly-costmodel-fa56", "data/poly-costmodel-fa56-5ms", "data/poly-costmodel-fcaa-5ms")


def main() -> None:
    torch.set_num_threads(1)
    rows = [r for f in FOLDERS for r in load_rows(f)]
    longer = {r["hash"] for r in at_least(rows, 5)}
    old = {r["hash"] for r in rows if r["seed"] < 7485}
    test = featurize_rows(rows, TrainConfig(), False, cache=sys.argv[1])["test"]
    for name, ds in (("fa56 test >= 5 ms", test.where(lambda h: h in longer and h in old)),
                     ("fcaa test >= 5 ms", test.where(lambda h: h in longer and h not in old))):
        y = np.asarray(ds.speedups)
        line = f"{name}: {len(set(ds.programs))} programs, {len(y)} rows, 1.0x {np.mean(abs(1 - y) / y):.4f}"
        for m in sys.argv[2:]:
            pred = predict_trees(load_model(m, "cpu")[0], ds.trees)
            line += f"  {m}: {np.mean(abs(pred - y) / y):.4f}"
        print(line)


if __name__ == "__main__":
    main()
