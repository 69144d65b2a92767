"""The package's trees (`boosted.train_boosted`, `boosted.BoostConfig` with the settings given) trained on the
training matrix (matrices.py) with the recipe's ensemble's fork cost (815.24, runs/s59/base-ens4.pt's), scored on
the validation and test rows of programs >= 5 ms: the "trees" numbers `python -m llmopt.poly.costmodel.boosted`
reports with that network (its blend's fitted weight has been 1.0 since the sixty-second session), without
training the four networks first.  Each booster's answers are kept (runs/s64/final/NAME.SPLIT.npy, one row each),
so that seeds and settings can be mixed afterwards.
    python final.py NAME [--seeds 3] [--leaves ...] [--with-validation]   (prints JSON)"""

import argparse
import dataclasses
import json
import sys
from pathlib import Path

import numpy as np

sys.path[:0] = ["."]
from llmopt.poly.costmodel.boosted import BoostConfig, Boosted, _mape, train_boosted  # noqa: E402

sys.path[:0] = [str(Path(__file__).parents[1] / "machine-63")]
from cv_oof import matrix  # noqa: E402, F401  (more_seeds.py takes it from here too)

FORK_COST = 815.2423706054688
OUT = Path("runs/s64/final")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("name")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--with-validation", action="store_true",
                   help="teach the validation rows too (the refit once the choices are made; validation then scores "
                        "nothing)")
    d = BoostConfig()
    for field in dataclasses.fields(BoostConfig):
        if field.name not in ("threads", "objectives"):
            p.add_argument("--" + field.name.replace("_", "-"), type=type(getattr(d, field.name)),
                           default=getattr(d, field.name))
    a = p.parse_args()
    config = dataclasses.replace(d, **{f.name: getattr(a, f.name) for f in dataclasses.fields(BoostConfig)
                                       if f.name != "objectives"})
    x, y = matrix("train")
    if a.with_validation:
        xv, yv = matrix("validation")
        x, y = np.vstack([x, xv]), np.concatenate([y, yv])
    model = train_boosted(x, y, config, FORK_COST, log=lambda m: print(m, file=sys.stderr, flush=True))
    OUT.mkdir(parents=True, exist_ok=True)
    report = {"name": a.name, "config": dataclasses.asdict(config), "fork_cost": FORK_COST, "rows_taught": len(y),
              "with_validation": a.with_validation}
    for split in ("validation", "test"):
        xs, ys = matrix(split)
        each = np.stack([Boosted([b], config, FORK_COST).answer(xs) for b in model.boosters])
        np.save(OUT / f"{a.name}.{split}.npy", each)
        answer = model.answer(xs)
        report[split] = {"rows": len(ys), "trees": _mape(ys, answer),
                         "each": [round(_mape(ys, e), 4) for e in each]}
    print(json.dumps(report))


if __name__ == "__main__":
    main()
