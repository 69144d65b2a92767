"""Does a program's measured -O3 time per iteration say how much its schedules can gain?  Correlation of log ns
per iteration with the log median (and 90th percentile) speedup of its schedules, programs >= 5 ms of this
machine's three folders (forty-fifth session).

    python docs/results/costmodel/machine-45/headroom.py
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[4]))

from llmopt.poly.agent.state import loop_flags  # noqa: E402
from llmopt.poly.costmodel.data import load_rows  # noqa: E402
from llmopt.poly.costmodel.features import _level_trips  # noqa: E402
from llmopt.poly.program import program_from_dict  # noqa: E402
from llmopt.poly.schedule import Schedule, state  # noqa: E402

FOLDERS = ("data/poly-costmodel-fa56", "data/poly-costmodel-fa56-5ms", "data/poly-costmodel-fa56-inner")


def main() -> None:
    by: dict[str, list[dict]] = {}
    for r in (r for f in FOLDERS for r in load_rows(f)):
        if r["baseline_seconds"] >= 0.005:
            by.setdefault(r["hash"], []).append(r)
    ns, median, p90 = [], [], []
    for rows in by.values():
        prog = program_from_dict(rows[0]["program"])
        st = state(prog, Schedule())
        points = sum(math.prod(_level_trips(prog, st, s.name, loop_flags(prog, s.name, st[s.name])))
                     for s in prog.statements)
        speedups = np.array([r["speedup"] for r in rows])
        ns.append(math.log(rows[0]["baseline_seconds"] * 1e9 / points))
        median.append(math.log(np.median(speedups)))
        p90.append(math.log(np.quantile(speedups, 0.9)))
    ns, median, p90 = map(np.array, (ns, median, p90))
    print(f"{len(ns)} programs: correlation with the median speedup {np.corrcoef(ns, median)[0, 1]:.2f}, "
          f"with the 90th percentile {np.corrcoef(ns, p90)[0, 1]:.2f}")
    for part in np.array_split(np.argsort(ns), 6):
        print(f"ns per iteration {math.exp(ns[part].min()):.2f}-{math.exp(ns[part].max()):.2f}: geometric mean of "
              f"the median speedup {math.exp(median[part].mean()):.2f}, of the 90th percentile {math.exp(p90[part].mean()):.2f}")


if __name__ == "__main__":
    main()
