"""Featurizing speed of the cost model, with and without the compiler and traffic views (docs/benchmarks.md).

Featurizes every row of a collected folder with one `features.featurizer` per program (as training and the
searches do), in fresh processes, alternating: this tree with the views, this tree without them (what a
model trained before the compiler view gets: `model.model_featurizer`), and optionally another checkout
(`--before DIR`, e.g. a `git worktree` of the commit before a view).  Prints rows/s per run and the medians.

    python scripts/bench_costmodel_features.py data/poly-costmodel-fa56 [--before /tmp/old-tree] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CODE = """
import sys, time
sys.path.insert(0, sys.argv[1])
from llmopt.poly.costmodel.data import load_rows
from llmopt.poly.costmodel.features import featurizer
from llmopt.poly.program import program_from_dict
from llmopt.poly.schedule import Schedule, state
rows = load_rows(sys.argv[2])
view = {"on": {}, "off": {"compiler_view": False}, "before": {}}[sys.argv[3]]
t, made = time.perf_counter(), {}
for r in rows:
    if r["hash"] not in made:
        prog = program_from_dict(r["program"])
        made[r["hash"]] = (prog, featurizer(prog, **view))
    prog, featurize = made[r["hash"]]
    featurize(state(prog, Schedule.from_list(r["schedule"])))
print(len(rows) / (time.perf_counter() - t))
"""


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("data", help="a collected folder")
    p.add_argument("--before", help="another checkout's root, timed as 'before'")
    p.add_argument("--runs", type=int, default=3)
    args = p.parse_args(argv)
    variants = [("with the views", str(ROOT), "on"), ("without them", str(ROOT), "off")]
    if args.before:
        variants.append(("before", args.before, "before"))
    got: dict[str, list[float]] = {name: [] for name, _, _ in variants}
    for _ in range(args.runs):
        for name, root, mode in variants:
            out = subprocess.run([sys.executable, "-c", CODE, root, str(Path(args.data).resolve()), mode],
                                 capture_output=True, text=True, cwd="/tmp", check=True)
            got[name].append(round(float(out.stdout.split()[-1]), 1))
    print(json.dumps({name: {"rows_per_s": runs, "median": statistics.median(runs)} for name, runs in got.items()},
                     indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
