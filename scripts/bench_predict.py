"""Benchmark `llmopt predict`: cold-start wall time for one median function, and batch functions/s.

    python scripts/bench_predict.py [--model DIR] [--data DIR] [--write docs/benchmarks.md]

Cold: `llmopt predict FILE --samples K --no-cache` in a fresh process (imports, model load, worker
start, sampling, compiling) for greedy and PS@10.  Batch: one process, model loaded, `predict_many`
over the functions (sampling per function, verification batched on 2 compile workers), cache off.
Functions: the dataset's test split (default: the sample dataset of training/sample_data.py).
Each is measured with both inference engines (the plain-PyTorch Llama and `transformers`).
Targets (issue 5): <= 3 s cold with PS@10 on 2 cores; >= 5 functions/s batch with PS@10.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SECTION = "## Prediction"
ENGINES = ("torch", "transformers")


def _rows(data: str | None) -> list[dict]:
    from llmopt.dataset import read_rows

    if data is None:
        from training.sample_data import cached_sample_dataset

        data = str(cached_sample_dataset(Path(tempfile.gettempdir()) / "llmopt_bench_sample_data"))
    return read_rows(data, "test") + read_rows(data, "validation")


def cold(model: str | None, ir_file: Path, strategy: str, samples: int, repeats: int, engine: str) -> float:
    """Median wall seconds of a fresh `llmopt predict` process."""
    cmd = [sys.executable, "-m", "llmopt.cli", "predict", str(ir_file), "--strategy", strategy, "--samples",
           str(samples), "--no-cache", "--json"] + (["--model", model] if model else [])
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True, env={**os.environ, "LLMOPT_ENGINE": engine})
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def batch(model: str | None, irs: list[str], strategy: str, samples: int, engine: str) -> tuple[float, int]:
    """(functions per second, compilations) of in-process prediction over `irs`."""
    from llmopt.harness import Harness
    from llmopt.predict import predict_many
    from llmopt.sampling import PassListLM, strategy_from_name

    lm = PassListLM.load(model, engine=engine)
    strat = strategy_from_name(strategy, lm=lm)
    with Harness(workers=2, cache=False) as harness:
        predict_many(irs[:1], strat, samples, harness)  # warm: workers started, first forward done
        start = time.perf_counter()
        out = predict_many(irs, strat, samples, harness)
        elapsed = time.perf_counter() - start
    return len(irs) / elapsed, sum(f.compilations for f in out)


def decode_step_ms(model: str | None, prompt_ir: str, engine: str, steps: int = 200) -> float:
    """Median ms of one KV-cached decoding step after `prompt_ir`'s prompt (what sampling repeats)."""
    import torch

    from llmopt.sampling import PassListLM
    from llmopt.sampling.lm import crop_cache

    lm = PassListLM.load(model, engine=engine)
    decoder = lm.decoder(prompt_ir)
    cache, length, token = decoder._cache, len(decoder.prompt_ids), torch.tensor([[lm.open_id]])
    times = []
    with torch.no_grad():
        for _ in range(steps):
            start = time.perf_counter()
            lm.model(input_ids=token, past_key_values=cache, use_cache=True)
            times.append(time.perf_counter() - start)
            crop_cache(cache, length)  # back to the prompt (either engine's cache)
    return statistics.median(times) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="model directory (default: the shipped model)")
    parser.add_argument("--data", help="dataset directory (default: the sample dataset)")
    parser.add_argument("--functions", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--write", help="update the '## Prediction' section of this markdown file")
    args = parser.parse_args()

    rows = _rows(args.data)
    rows.sort(key=lambda r: r["n_tokens"])
    median = rows[len(rows) // 2]
    irs = [r["ir"] for r in rows[: args.functions]]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "median.ll"
        path.write_text(median["ir"])
        results = {"median_function": {"name": median["name"], "n_tokens": median["n_tokens"],
                                       "instcount_input": median["instcount_input"]},
                   "functions": len(irs), "mean_tokens": round(statistics.mean(r["n_tokens"] for r in rows[:len(irs)])),
                   "load_average": os.getloadavg()[0], "cpus": os.cpu_count(), "model": args.model or "default"}
        # Both inference engines in the same run: their ratio is what survives a noisy machine.
        for engine in ENGINES:
            results[f"decode_step_ms[{engine}]"] = round(decode_step_ms(args.model, median["ir"], engine), 2)
            for strategy, k in (("greedy", 1), ("priority", 10)):
                label = f"{'greedy' if strategy == 'greedy' else f'PS@{k}'}, {engine}"
                results[f"cold_s[{label}]"] = round(cold(args.model, path, strategy, k, args.repeats, engine), 2)
                fps, comps = batch(args.model, irs, strategy, k, engine)
                results[f"batch_functions_per_s[{label}]"] = round(fps, 2)
                results[f"batch_compilations[{label}]"] = comps
    print(json.dumps(results, indent=1))
    if args.write:
        _write(Path(args.write), results)
    return 0


def _write(path: Path, r: dict) -> None:
    lines = [SECTION, "",
             f"`python scripts/bench_predict.py` ({time.strftime('%Y-%m-%d')}; model `{r['model']}`; "
             f"{r['cpus']} CPUs, load average {r['load_average']:.1f} at the start). Cold = a fresh `llmopt predict` "
             f"process on the median function ({r['median_function']['n_tokens']} tokens, "
             f"{r['median_function']['instcount_input']} instructions), result cache off, median of repeats. "
             f"Batch = `predict_many` over {r['functions']} functions (mean {r['mean_tokens']} tokens), model loaded, "
             "2 compile workers, cache off.", "",
             "| strategy | cold start (s) | batch (functions/s) | compilations (batch) |", "|---|---|---|---|"]
    for label in (f"{s}, {e}" for e in ENGINES for s in ("greedy", "PS@10")):
        lines.append(f"| {label} | {r[f'cold_s[{label}]']} | {r[f'batch_functions_per_s[{label}]']} | "
                     f"{r[f'batch_compilations[{label}]']} |")
    lines += ["", "One KV-cached decoding step after the median function's prompt (median ms): "
              + ", ".join(f"{e} {r[f'decode_step_ms[{e}]']}" for e in ENGINES) + "."]
    lines += ["", "Targets: <= 3 s cold with PS@10; >= 5 functions/s batch with PS@10. Engine `torch` is the "
              "plain-PyTorch Llama (`llmopt.model.llama`, the default), `transformers` the HF model on the same "
              "weights.", ""]
    text = path.read_text() if path.exists() else "# Benchmarks\n\n"
    block = "\n".join(lines)
    if SECTION in text:
        text = re.sub(rf"{re.escape(SECTION)}\n.*?(?=\n## |\Z)", block.rstrip("\n") + "\n", text, flags=re.S)
    else:
        text = text.rstrip("\n") + "\n\n" + block
    path.write_text(text)


if __name__ == "__main__":
    sys.exit(main())
