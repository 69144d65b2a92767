"""The agent's own time on the Pearl benchmarks, cold, without measuring anything: policies side by side.

For each round, benchmark and policy: the process's program-fact memo (`llmopt.poly.agent.state`) and
isl caches are cleared and the legality checker is fresh, then the greedy walk (`AgentPolicy.walk`,
what `agent_search` does before it measures) is timed.  So every policy pays the cold isl checks a
first look at a program pays, and the order of the policies does not favour the later ones.  Prints
the median over rounds per benchmark and policy, and whether the policies walk to the same schedules
(the same schedules are the same speedups: `agent_search` measures exactly the walk's list).

    python scripts/agent_time.py llmopt/poly/data/agent.pt runs/pearl-distill/checkpoint.pt --rounds 3 --out FILE.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from llmopt.harness.cache import scratch_cache  # noqa: E402
from llmopt.poly import polyhedral  # noqa: E402
from llmopt.poly.agent import state  # noqa: E402
from llmopt.poly.agent.policy import AgentPolicy  # noqa: E402
from llmopt.poly.benchmarks import benchmarks  # noqa: E402
from llmopt.poly.measure import Measurer  # noqa: E402


def cold_walk(policy: AgentPolicy, prog) -> tuple[float, list]:
    """(seconds, the walk's schedules) of one greedy walk with nothing of `prog` cached."""
    state._memo.clear()
    for name in dir(polyhedral):
        fn = getattr(polyhedral, name)
        if hasattr(fn, "cache_clear"):
            fn.cache_clear()
    measurer = Measurer(scratch_cache(), repeats=1)
    t0 = time.perf_counter()
    walk = policy.walk(prog, measurer)
    seconds = time.perf_counter() - t0
    measurer.close()
    return seconds, [s.to_list() for s in walk]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("policies", nargs="+")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--out", help="JSON results file")
    args = p.parse_args()
    policies = [AgentPolicy(path) for path in args.policies]
    times: dict[str, list[list[float]]] = {}
    walks: dict[str, list] = {}
    for _ in range(args.rounds):
        for name, prog in benchmarks().items():
            for k, policy in enumerate(policies):
                seconds, walk = cold_walk(policy, prog)
                times.setdefault(name, [[] for _ in policies])[k].append(seconds)
                walks.setdefault(name, [None] * len(policies))[k] = walk
    rows = []
    for name in times:
        ms = [1000 * statistics.median(t) for t in times[name]]
        same = all(w == walks[name][0] for w in walks[name])
        rows.append({"benchmark": name, "median_ms": ms, "same_walk": same, "walks": walks[name]})
        print(f"{name:10s} " + "  ".join(f"{m:6.0f} ms" for m in ms) + ("" if same else "   walks differ"))
    worst = [max(r["median_ms"][k] for r in rows) for k in range(len(policies))]
    mid = [statistics.median(r["median_ms"][k] for r in rows) for k in range(len(policies))]
    for path, w, m in zip(args.policies, worst, mid, strict=True):
        print(f"{path}: median {m:.0f} ms, max {w:.0f} ms")
    print(f"same walk on {sum(r['same_walk'] for r in rows)} of {len(rows)} benchmarks")
    if args.out:
        Path(args.out).write_text(json.dumps({"policies": args.policies, "rounds": args.rounds, "rows": rows},
                                             indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
