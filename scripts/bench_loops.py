"""Reproduce the loop-schedule numbers in docs/benchmarks.md ("Loop schedules").

    OPENBLAS_NUM_THREADS=1 python scripts/bench_loops.py --n-shapes 20 --out docs/results/loops   # equal time
    OPENBLAS_NUM_THREADS=1 python scripts/bench_loops.py --n-shapes 20 --search-seconds 5 --out docs/results/loops/5s

Same as `llmopt loops bench ...`: results (bench.md, bench.json, bench.png) go to --out, default
runs/loops-bench; `--out docs/results/loops` regenerates the committed ones.
"""

import sys

from llmopt.loops.cli import main

if __name__ == "__main__":
    sys.exit(main(["bench", *sys.argv[1:]]))
