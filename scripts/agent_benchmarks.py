"""The agent alone on the Pearl benchmarks: a quick check of a policy file, minutes instead of the
half hour of `llmopt loops pearl-bench` (which also runs beam search with execution and Polly).

Each benchmark: `agent_search` (the bench's agent column: the greedy walk, or the policy's
`--candidates` most probable schedules, measured and kept only when faster than the original; the
greedy walk's schedule at each branch it left is measured too unless `--final-only`),
on a fresh cache, `--repeats` timed runs, each guarded against other work (`--quiet-cores`: a run
during which others took more CPU is taken again once the machine is quiet; the same schedule of
jacobi2d measured 2.15x and 1.15x in two unguarded runs on this shared 2-core machine).  Prints one line per benchmark and the geometric mean;
`--out FILE` writes them as JSON.  Compare with the beam/Polly columns of docs/results/pearl/bench.md
only loosely: those come from another run.  Run it on a quiet machine.

    python scripts/agent_benchmarks.py runs/pearl-imitate/checkpoint.pt --candidates 8 --out RESULT.json
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from llmopt.harness.cache import scratch_cache  # noqa: E402
from llmopt.poly.agent.policy import agent_search  # noqa: E402
from llmopt.poly.benchmarks import benchmarks  # noqa: E402
from llmopt.poly.measure import Measurer, machine_id  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("policy")
    p.add_argument("--candidates", type=int, default=1, help="schedules measured per benchmark (1: greedy)")
    p.add_argument("--final-only", action="store_true",
                   help="greedy walk: measure its final schedule only, not also the schedule at each earlier branch")
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--quiet-cores", type=float, default=0.15, metavar="C",
                   help="retake a timed run during which other processes used more than C cores (-1: off)")
    p.add_argument("--out", help="JSON results file")
    args = p.parse_args()
    rows = []
    for name, prog in benchmarks().items():
        measurer = Measurer(scratch_cache(), repeats=args.repeats,
                            quiet=args.quiet_cores if args.quiet_cores >= 0 else None)
        res = agent_search(prog, measurer, policy_path=args.policy, candidates=args.candidates,
                           branches=not args.final_only)
        rows.append({"benchmark": name, **res.to_dict(), "agent_seconds": res.search_seconds - res.measure_seconds})
        measurer.close()
        print(f"{name:10s} {res.speedup:6.2f}x  agent {1000 * rows[-1]['agent_seconds']:6.0f} ms  "
              f"{rows[-1]['schedule']}", flush=True)
    geomean = math.exp(sum(math.log(max(r["speedup"], 1e-9)) for r in rows) / len(rows))
    print(f"geomean {geomean:.3f}x over {len(rows)} benchmarks (candidates {args.candidates})")
    if args.out:
        Path(args.out).write_text(json.dumps({"policy": args.policy, "candidates": args.candidates,
                                              "final_only": args.final_only,
                                              "repeats": args.repeats, "machine": machine_id(),
                                              "geomean": geomean, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
