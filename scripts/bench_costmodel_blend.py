"""Answering speed of a network against a blend with trees (`llmopt.poly.costmodel.boosted`), as a search asks:
one program's candidate schedules at a time (docs/benchmarks.md).

Featurizes the rows of the first PROGRAMS programs of a collected folder (not timed), then, alternating the two
models for RUNS rounds, times `predict_trees` over each program's samples and reports the medians of the
milliseconds per sample, and the time each file takes to load.

    python scripts/bench_costmodel_blend.py DATA NETWORK.pt BLEND.pt [--programs 40] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

from llmopt.poly.costmodel.data import load_rows
from llmopt.poly.costmodel.model import load_model, predict_trees
from llmopt.poly.costmodel.train import TrainConfig, featurize_rows


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("data")
    p.add_argument("network")
    p.add_argument("blend")
    p.add_argument("--programs", type=int, default=40)
    p.add_argument("--runs", type=int, default=3)
    a = p.parse_args()
    torch.set_num_threads(1)  # as the searches score (`search.cached_model`)
    rows = load_rows(a.data)
    keep = list(dict.fromkeys(r["hash"] for r in rows))[: a.programs]
    rows = [r for r in rows if r["hash"] in set(keep)]
    ds = featurize_rows(rows, TrainConfig(fractions=(1.0, 0.0)), progress=False)["train"]
    by_program: dict[str, list] = {}
    for tree, h in zip(ds.trees, ds.programs, strict=True):
        by_program.setdefault(h, []).append(tree)
    models, load_s = {}, {}
    for name, path in (("network", a.network), ("blend", a.blend)):
        start = time.perf_counter()
        models[name] = load_model(path)[0]
        load_s[name] = time.perf_counter() - start
    per_sample: dict[str, list[float]] = {name: [] for name in models}
    for _ in range(a.runs):
        for name, model in models.items():
            start = time.perf_counter()
            for trees in by_program.values():
                predict_trees(model, trees)
            per_sample[name].append((time.perf_counter() - start) * 1e3 / len(ds.trees))
    medians = {name: statistics.median(v) for name, v in per_sample.items()}
    print(json.dumps({"samples": len(ds.trees), "programs": len(by_program), "load_seconds": load_s,
                      "ms_per_sample": per_sample, "median_ms_per_sample": medians,
                      "blend_over_network": medians["blend"] / medians["network"]}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
