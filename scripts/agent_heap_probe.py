"""Why the agent's time inside `pearl-bench` (up to 124 ms) exceeds its cold time in a fresh process
(at most 78 ms): cold walks (`agent_time.cold_walk`) of the four slowest benchmarks in a fresh process,
then beside ~3 M live Python objects (the bench process holds beam search's caches), then the same with
the garbage collector frozen (`gc.freeze`: if the cost were GC scans, this would remove it).  Median of 3.

    python scripts/agent_heap_probe.py
"""

import gc
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from agent_time import cold_walk  # noqa: E402

from llmopt.poly.agent.policy import DEFAULT_POLICY, AgentPolicy  # noqa: E402
from llmopt.poly.benchmarks import benchmarks  # noqa: E402


def run(tag: str, policy: AgentPolicy, progs: dict) -> None:
    """Median of 3 cold walks per program, printed."""
    for name, prog in progs.items():
        ms = [cold_walk(policy, prog)[0] * 1e3 for _ in range(3)]
        print(f"{tag:9s} {name:8s} median {statistics.median(ms):6.1f} ms  ({', '.join(f'{t:.0f}' for t in ms)})",
              flush=True)


def main() -> int:
    policy = AgentPolicy(DEFAULT_POLICY)
    progs = {n: p for n, p in benchmarks().items() if n in ("heat3d", "2mm", "doitgen", "gemm")}
    run("fresh", policy, progs)
    _heap = [[i, (i,), {"k": i}] for i in range(1_000_000)]  # ~3 M live objects, alive until main returns
    run("big heap", policy, progs)
    gc.freeze()
    run("frozen", policy, progs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
