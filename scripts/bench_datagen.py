"""Benchmark: functions selected and autotuned per hour on this machine, at the job's default search.

    python scripts/bench_datagen.py --source pypi:lz4 --shards 2

Runs phase 0 (compile, select functions by the real tokenizer's budget) and then phase 1 (random
search, greedy until no gain, minimization) on the first `--shards` shards, with a fresh result cache
so nothing is answered from earlier runs, and prints one line for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--units", type=int, default=64, help="csmith programs")
    ap.add_argument("--source", default=None, help="override the source spec (default csmith:UNITS)")
    ap.add_argument("--budget", type=int, default=1000)
    ap.add_argument("--greedy-steps", type=int, default=40)
    ap.add_argument("--shards", type=int, default=2, help="phase-1 shards of 64 functions to time")
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--seed", type=int, default=42)
    args = ap.parse_args()
    from data_pipeline.job import JobConfig, run_job

    with tempfile.TemporaryDirectory(prefix="bench-datagen-") as tmp:
        cfg = JobConfig(sources=[args.source or f"csmith:{args.units}"], out=str(Path(tmp) / "out"),
                        budget=args.budget, greedy_steps=args.greedy_steps, seed=args.seed,
                        shard_units=16, workers=args.workers, cache=str(Path(tmp) / "c.sqlite"),
                        limit_shards=args.shards, progress=False)
        start = time.monotonic()
        run_job(cfg, phases=("p0",))
        select_seconds = time.monotonic() - start
        start = time.monotonic()
        stats = run_job(cfg, phases=("p1",))
        seconds = time.monotonic() - start
    load = os.getloadavg()[0]
    result = {
        "select_seconds": round(select_seconds, 1),
        "functions": stats.functions, "evaluations": stats.evaluations, "seconds": round(seconds, 1),
        "functions_per_hour": round(3600 * stats.functions / seconds),
        "evals_per_second": round(stats.evaluations / seconds),
        "budget": args.budget, "greedy_steps": args.greedy_steps, "cpus": os.cpu_count(),
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
        "loadavg_at_end": round(load, 1),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
