"""Batch PS@10 rate of several models, interleaved over rounds, so their ratios share the machine's noise.

    PYTHONPATH=. python docs/results/cascade-validation/batch_rounds.py llmopt/model/default \\
        llmopt/model/default/tiny llmopt/model/default/tiny,llmopt/model/default/base --rounds 3

Each round times `scripts/bench_predict.py`'s `batch()` (model loaded with `llmopt predict`'s defaults: bf16
prompt where native, every core; `predict_many` over the same 16 seeded v3 test/validation functions, 2 compile
workers, cache off) once per model; prints each rate and the medians."""

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "scripts"))
from bench_predict import _rows, batch, sample_rows  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+")
    parser.add_argument("--data", default="data/llmopt-v3")
    parser.add_argument("--functions", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    rows = sorted(_rows(args.data), key=lambda r: r["n_tokens"])  # bench_predict's order and sample
    irs = [r["ir"] for r in sample_rows(rows, args.functions)]
    rates: dict[str, list[float]] = {m: [] for m in args.models}
    for rnd in range(args.rounds):
        for model in args.models:
            rate, compilations = batch(model, irs, "priority", 10, "torch", ("auto", os.cpu_count() or 1))
            rates[model].append(round(rate, 2))
            print(rnd, model, rates[model][-1], "functions/s", compilations, "compilations", flush=True)
    print(json.dumps({m: {"rates": v, "median": statistics.median(v)} for m, v in rates.items()}, indent=1))


if __name__ == "__main__":
    main()
