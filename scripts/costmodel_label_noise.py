"""How far the cost model's labels agree with themselves: the MAPE of one measurement of a speedup against
another of the same (program, schedule), from folders that measured the same programs twice (issue 16).

A `*-relabel` folder holds programs of another folder searched again (same seeds, so the same hashes) on a
later day; the schedules both searches reached were timed twice, each time as every label is
(`Measurer.paired`: in alternation with the original, median of the rounds' ratios).  Their disagreement is
what a model's test MAPE is measured through: a model that knew every schedule's true speedup would still
score about this against one measurement.  Check the rows' `machine`: between machines the disagreement is
mostly the machine's (0.14-0.17 on the cost model's test programs, against 0.045 for two measurements on one
machine: `data/poly-costmodel-retest2/`).  The constant 1.0x on the same rows is printed beside it, and the
first measurement shrunk toward 1 by the best power (`mape_first_shrunk`: [MAPE, power]).

    python scripts/costmodel_label_noise.py data/poly-greedy:data/poly-greedy-relabel \
        data/poly-greedy-db:data/poly-greedy-db-relabel data/poly-greedy-hw:data/poly-greedy-hw-relabel \
        [--min-baseline-ms 5] [--out noise.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from llmopt.poly.costmodel.data import load_rows  # noqa: E402
from llmopt.poly.costmodel.train import MIN_SPEEDUP  # noqa: E402


def _by_schedule(folder: str) -> dict[tuple[str, str], dict]:
    return {(r["hash"], json.dumps(r["schedule"], sort_keys=True)): r for r in load_rows(folder)}


def measured_twice(first: str, second: str, min_baseline_ms: float = 0.0) -> list[tuple[float, float]]:
    """(first speedup, second speedup) of every transformed schedule both folders measured, on programs whose
    original runs at least `min_baseline_ms` in the second folder."""
    a, b = _by_schedule(first), _by_schedule(second)
    return [(a[k]["speedup"], r["speedup"]) for k, r in b.items()
            if k in a and r["schedule"] and 1e3 * r["baseline_seconds"] >= min_baseline_ms]


def agreement(pairs: list[tuple[float, float]]) -> dict:
    """The MAPE of each measurement taken as the prediction of the other, the median |log ratio|, and the
    MAPE of answering 1.0x against each (speedups below `MIN_SPEEDUP` count as that value, as in training)."""
    x = np.maximum(np.asarray(pairs, dtype=float).reshape(-1, 2), MIN_SPEEDUP)
    first, second = x[:, 0], x[:, 1]

    def mape(pred: np.ndarray, y: np.ndarray) -> float:
        return round(float(np.mean(np.abs(pred - y) / y)), 4)

    return {"schedules": len(x), "mape_first_as_prediction": mape(first, second),
            "mape_second_as_prediction": mape(second, first),
            "median_abs_log_ratio": round(float(np.median(np.abs(np.log(first / second)))), 4),
            # The first measurement shrunk toward 1 (first ** a, the best a of a grid): what knowing every
            # schedule's speedup on another machine is worth at best to a model judged by MAPE on this one.
            "mape_first_shrunk": min((mape(first ** a, second), round(float(a), 2)) for a in np.linspace(0, 1, 21)),
            "mape_always_1": {"second": mape(np.ones_like(second), second), "first": mape(np.ones_like(first), first)}}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("pairs", nargs="+", help="FIRST:SECOND folders that measured the same programs")
    p.add_argument("--min-baseline-ms", type=float, default=0.0)
    p.add_argument("--out", help="also write the numbers to this JSON file")
    args = p.parse_args()
    per, pooled = {}, []
    for pair in args.pairs:
        first, second = pair.split(":")
        got = measured_twice(first, second, args.min_baseline_ms)
        per[pair], pooled = agreement(got) if got else {"schedules": 0}, pooled + got
    out = {"min_baseline_ms": args.min_baseline_ms, "pooled": agreement(pooled) if pooled else {"schedules": 0},
           "pairs": per}
    print(json.dumps(out, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
