"""syrk's key schedules: each model's predicted speedup beside the speedup measured side by side (sixty-eighth session).

    python docs/results/costmodel/machine-68/syrk_probe.py MODEL.pt [MODEL.pt ...] [--measure]

The trees of the sixty-seventh session ranked `S0: P(0)` (the loop S0 and S1 share, the outer loop of their
triangle `j <= i`) at 1.86x, above the interchange of S1's k and j loops (`S1: I(1,2)`, 1.18x); measured, the
first runs 1.3x (one of two threads gets three quarters of the triangle) and the second 2.8x.  `syrk-rect` is the
same program over the whole square, where the parallel loop splits evenly.
"""

from __future__ import annotations

import copy
import json
import sys

from llmopt.poly.benchmarks import SIZES, SPECS
from llmopt.poly.costmodel.search import cached_model, rank_by_model
from llmopt.poly.measure import Measurer
from llmopt.poly.program import program_from_dict
from llmopt.poly.schedule import Schedule, state
from llmopt.poly.search import notation


def schedule(*steps: tuple) -> Schedule:
    kinds = {"I": lambda lv, other: {"kind": "interchange", "level": lv, "other": other},
             "P": lambda lv: {"kind": "parallelization", "level": lv},
             "T": lambda lv, a, b: {"kind": "tiling", "level": lv, "sizes": [a, b]},
             "S": lambda lv: {"kind": "skewing", "level": lv, "factor": 1}}
    return Schedule.from_list([{"stmt": stmt, **kinds[kind](*args)} for stmt, kind, *args in steps])


def variant(name: str, triangle: bool):
    spec = copy.deepcopy(SPECS["syrk"])
    if not triangle:
        spec["statements"][0]["domain"] = "0 <= i < N and 0 <= j < N"
        spec["statements"][1]["domain"] = "0 <= i < N and 0 <= k < M and 0 <= j < N"
    return program_from_dict({"name": name, "params": SIZES["syrk"][0], **spec})


SCHEDULES = [schedule(), schedule(("S1", "I", 1, 2)), schedule(("S1", "I", 1, 2), ("S1", "P", 1)),
             schedule(("S1", "I", 1, 2), ("S0", "P", 0)), schedule(("S0", "P", 0)),
             schedule(("S1", "I", 1, 2), ("S1", "T", 1, 128, 32), ("S1", "P", 1), ("S1", "S", 1))]  # BSE's answer


def main() -> None:
    paths = [a for a in sys.argv[1:] if not a.startswith("--")]
    out = []
    for prog in (variant("syrk", True), variant("syrk-rect", False)):
        kids = [(s, state(prog, s)) for s in SCHEDULES]
        predicted = [{json.dumps(s.key()): p for p, s in rank_by_model(prog, cached_model(path), kids)} for path in paths]
        measured = (Measurer(repeats=10).side_by_side(prog, SCHEDULES, rounds=5)["schedules"] if "--measure" in sys.argv
                    else [{}] * len(SCHEDULES))
        for s, m in zip(SCHEDULES, measured, strict=True):
            row = {"program": prog.name, "schedule": notation(s), "measured": m.get("speedup"),
                   "predicted": {path: pred.get(json.dumps(s.key())) for path, pred in zip(paths, predicted, strict=True)}}
            out.append(row)
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
