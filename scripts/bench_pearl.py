"""Reproduce the Pearl benchmark table (issue 15): beam search with execution vs Polly vs -O3 (vs the agent).

    python scripts/bench_pearl.py --out docs/results/pearl                  # all 13, 300 s of beam search each
    python scripts/bench_pearl.py --benchmarks heat2d,gemm --budget-seconds 60
    python scripts/bench_pearl.py --small --budget-seconds 5                # test sizes: checks the pipeline only

Same as `llmopt loops pearl-bench ...`: results (bench.md, bench.json, bench.png) go to --out, default
runs/pearl-bench; `--out docs/results/pearl` regenerates the committed ones.  Run it on an idle
machine: timings under load are noisy.
"""

import sys

from llmopt.loops.cli import main

if __name__ == "__main__":
    sys.exit(main(["pearl-bench", *sys.argv[1:]]))
