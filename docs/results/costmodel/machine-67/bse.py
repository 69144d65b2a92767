"""BSE alone on the 13 benchmarks into a reference file (`eval.costmodel_eval.reference_bse`, the settings of
machine-67/runs.sh's Table 2), so a model's evaluation later reuses it: python bse.py REFERENCE.json"""
import sys
import time

from eval.costmodel_eval import EvalConfig, reference_bse
from llmopt.poly.benchmarks import NAMES, benchmark

cfg = EvalConfig(model="-", data="-", budget_seconds=900, schedules=8, repeats=10, bse_reference=sys.argv[1])
for name in NAMES:
    t = time.monotonic()
    r = reference_bse(name, benchmark(name), cfg)
    print(name, round(r["search_seconds"], 1), round(r["speedup"], 2), round(time.monotonic() - t, 1), flush=True)
