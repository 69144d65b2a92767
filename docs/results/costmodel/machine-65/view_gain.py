"""Which parts of a computation's vector the trees use: the split gain of the trees file's boosters summed by
view (`features.FEATURE_SETS`: plain, then each view's columns) over the 15 per-computation blocks of
`boosted.tree_features`, plus the last 6 scalar inputs; shares of the total.  Why: the views the shipped network
does not read cost two thirds of the trees' search time (machine-65 profile), so a cheaper search starts from
the views that carry little gain.

    python docs/results/costmodel/machine-65/view_gain.py runs/s65/trees.pt   (prints JSON)"""

import json
import sys

import numpy as np

sys.path[:0] = ["."]
from llmopt.poly.costmodel.features import COMP_FEATURES, FEATURE_SETS  # noqa: E402
from llmopt.poly.costmodel.model import load_model  # noqa: E402


def main() -> None:
    trees, _ = load_model(sys.argv[1])
    gain = np.sum([b.feature_importance(importance_type="gain") for b in trees.boosters], axis=0)
    per_column = gain[: 15 * COMP_FEATURES].reshape(15, COMP_FEATURES).sum(axis=0)
    bounds, start, out = list(FEATURE_SETS.items()), 0, {}
    for name, end in bounds:
        out[name] = float(per_column[start:end].sum())
        start = end
    out["scalars (count, fork load, changed share, work shares, removal left)"] = float(gain[15 * COMP_FEATURES:].sum())
    total = sum(out.values())
    print(json.dumps({name: round(v / total, 4) for name, v in out.items()}, indent=1))


if __name__ == "__main__":
    main()
