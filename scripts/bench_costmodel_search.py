"""The cost model's part of beam search with the model (BSM), per benchmark: `costmodel.search.model_search` on
predictions alone (featurizing, the model, the lazy legality checks; no program run), as Table 2's
`bsm_model_seconds` counts it (docs/benchmarks.md).

Each run is a fresh process (a search's caches start empty, as in `eval.costmodel_eval`) that loads the model
before the clock starts and searches each benchmark once; runs alternate this checkout with another
(`--before DIR`, e.g. a `git worktree` of the commit before a change).  Prints each run's seconds per benchmark
and, per benchmark and in total, the medians.

    python scripts/bench_costmodel_search.py MODEL.pt [--before /tmp/old-tree] [--runs 3] [--benchmarks gemm,mvt]
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
import json, sys, time
sys.path.insert(0, sys.argv[1])
from llmopt.harness.cache import scratch_cache
from llmopt.poly.benchmarks import benchmark
from llmopt.poly.costmodel.search import cached_model, model_search
from llmopt.poly.measure import Measurer
model = cached_model(sys.argv[2])
try:  # the helper processes are forked before the clock, as beam_model does (checkouts before them have none)
    from llmopt.poly.costmodel.ranker import start_helpers
    start_helpers(model)
except ImportError:
    pass
out = {}
for name in sys.argv[3].split(","):
    prog = benchmark(name)
    m = Measurer(scratch_cache(), repeats=1)
    t = time.perf_counter()
    model_search(prog, m.legality(prog), model)
    out[name] = time.perf_counter() - t
    m.close()
print(json.dumps(out))
"""


def main(argv: list[str] | None = None) -> int:
    from llmopt.poly.benchmarks import NAMES

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model", help="a cost model file (network, ensemble, blend or trees)")
    p.add_argument("--before", help="another checkout's root, timed as 'before'")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--benchmarks", default=",".join(NAMES), help="comma-separated (default all 13)")
    args = p.parse_args(argv)
    variants = [("this checkout", str(ROOT))] + ([("before", args.before)] if args.before else [])
    got: dict[str, list[dict]] = {name: [] for name, _ in variants}
    for _ in range(args.runs):
        for name, root in variants:
            out = subprocess.run([sys.executable, "-c", CODE, root, str(Path(args.model).resolve()), args.benchmarks],
                                 capture_output=True, text=True, cwd="/tmp", check=True)
            got[name].append(json.loads(out.stdout.splitlines()[-1]))
    report = {}
    for name, runs in got.items():
        per = {b: round(statistics.median(r[b] for r in runs), 3) for b in runs[0]}
        report[name] = {"median_s": per, "total_median_s": round(statistics.median(sum(r.values()) for r in runs), 2),
                        "runs_total_s": [round(sum(r.values()), 2) for r in runs]}
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
