"""Benchmark `llmopt predict`: cold-start wall time for one median function, and batch functions/s.

    python scripts/bench_predict.py [--model DIR] [--data DIR] [--write docs/benchmarks.md]

Cold: `llmopt predict FILE --samples K --no-cache` in a fresh process (imports, model load, worker
start, sampling, compiling) for greedy and PS@10.  Batch: one process, model loaded, `predict_many`
over the functions (sampling per function, verification batched on 2 compile workers), cache off.
Functions: the dataset's test split (default: the sample dataset of training/sample_data.py).
Each is measured with both inference engines (the plain-PyTorch Llama and `transformers`).
Targets (issue 5): <= 3 s cold with PS@10 on 2 cores; >= 5 functions/s batch with PS@10.

    python scripts/bench_predict.py --untrained-preset tiny,base,small [--config training/configs/v3-{preset}.json]

Before training (issue 14): what each model preset would cost, timed on a randomly initialised model with
the config's tokenizer and context (`untrained_model`), pass lists capped at the label's length (a random
model's run to --max-passes), fp32 and `--int8`; `--write` fills '## Prediction cost by model size'.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SECTION = "## Prediction"
COST_SECTION = "## Prediction cost by model size"
ENGINES = ("torch", "transformers")


def _rows(data: str | None) -> list[dict]:
    from llmopt.dataset import read_rows

    if data is None:
        from training.sample_data import cached_sample_dataset

        data = str(cached_sample_dataset(Path(tempfile.gettempdir()) / "llmopt_bench_sample_data"))
    return read_rows(data, "test") + read_rows(data, "validation")


def _median_s(run, repeats: int) -> float:
    """Median wall seconds of `repeats` calls of `run()`."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def sample_rows(rows: list[dict], functions: int) -> list[dict]:
    """The batch functions: a seeded sample of `rows` (sorted by tokens), not the shortest, so the batch rate
    reflects the split's function sizes."""
    return random.Random(0).sample(rows, min(functions, len(rows)))


def cold(model: str | None, ir_file: Path, strategy: str, samples: int, repeats: int, engine: str,
         extra: tuple[str, ...] = ()) -> float:
    """Median wall seconds of a fresh `llmopt predict` process (`extra`: more predict options)."""
    cmd = [sys.executable, "-m", "llmopt.cli", "predict", str(ir_file), "--strategy", strategy, "--samples",
           str(samples), "--no-cache", "--json", *extra] + (["--model", model] if model else [])
    env = {**os.environ, "LLMOPT_ENGINE": engine}
    return _median_s(lambda: subprocess.run(cmd, check=True, capture_output=True, env=env), repeats)


def batch(model: str | None, irs: list[str], strategy: str, samples: int, engine: str,
          setting: tuple[str, int] = ("float32", 1)) -> tuple[float, int]:
    """(functions per second, compilations) of in-process prediction over `irs`; `setting` = (prefill dtype,
    torch threads) of the model, as `llmopt predict --prefill-dtype D --threads N` loads it."""
    from llmopt.harness import Harness
    from llmopt.predict import predict_many
    from llmopt.sampling import PassListLM, strategy_from_name

    lm = PassListLM.load(model, engine=engine, prefill_dtype=setting[0], threads=setting[1])
    strat = strategy_from_name(strategy, lm=lm)
    with Harness(workers=2, cache=False) as harness:
        predict_many(irs[:1], strat, samples, harness)  # warm: workers started, first forward done
        start = time.perf_counter()
        out = predict_many(irs, strat, samples, harness)
        elapsed = time.perf_counter() - start
    return len(irs) / elapsed, sum(f.compilations for f in out)


def decode_step_ms(lm, prompt_ir: str, steps: int = 200) -> float:
    """Median ms of one KV-cached decoding step of `lm` (a PassListLM) after `prompt_ir`'s prompt (what sampling
    repeats); an ensemble's step is one step of each member."""
    import torch

    from llmopt.sampling.lm import crop_cache

    if hasattr(lm, "members"):  # llmopt.sampling.ensemble.EnsembleLM
        return sum(decode_step_ms(member, prompt_ir, steps) for member in lm.members)
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


def untrained_model(config: str, preset: str, out: Path, tokenizer_rows: int = 3000) -> Path:
    """A randomly initialised `preset` Llama with `config`'s tokenizer, context and answer format, exported like a
    trained model (`training.train.export_model`) to `out/<preset>-<config stem>`, so predict can time it.

    The tokenizer is trained as training would (same vocabulary size) on a seeded sample of `tokenizer_rows`
    train functions, and kept in `out` for the other presets and later runs.
    """
    import dataclasses

    from llmopt.dataset import read_rows
    from llmopt.llvm.passes import vocabulary
    from llmopt.model.tokenizer import ModelMeta
    from training.config import load_config
    from training.train import build_model, build_tokenizer, export_model

    cfg = dataclasses.replace(load_config(config), model_preset=preset)
    target = out / f"{preset}-{Path(config).stem}"
    if (target / "model.safetensors").exists():
        return target
    rows = read_rows(cfg.data_dir, "train", columns=["ir", "optimized_ir", "llvm_version"])
    rows = random.Random(0).sample(rows, min(tokenizer_rows, len(rows)))
    version = rows[0]["llvm_version"]
    passes = vocabulary(version)
    tokenizer_dir = out / f"{Path(cfg.data_dir).name}-vocab{cfg.tokenizer_vocab_size}-rows{tokenizer_rows}"
    tokenizer = build_tokenizer(cfg, rows, passes, version, tokenizer_dir)
    model, tokenizer = build_model(cfg, passes, tokenizer, target)
    meta = ModelMeta(passes=passes, llvm_version=version, with_ir=cfg.with_ir,
                     extra={"context_length": cfg.context_length, "preset": preset, "untrained": True})
    export_model(model, tokenizer, meta, target)
    return target


def parameters(model: Path) -> int:
    """Parameters in `model`'s weights file."""
    import math

    from safetensors import safe_open

    with safe_open(str(model / "model.safetensors"), "pt") as f:
        return sum(math.prod(f.get_slice(name).get_shape()) for name in f.keys())


def cold_load_s(model: Path, int8: bool, repeats: int) -> float:
    """Median wall seconds of a fresh process that imports llmopt's sampling and loads `model` (what every cold
    `llmopt predict` pays before its first token)."""
    code = "import sys; from llmopt.sampling import PassListLM; PassListLM.load(sys.argv[1], int8=sys.argv[2] == '1')"
    cmd = [sys.executable, "-c", code, str(model), "1" if int8 else "0"]
    return _median_s(lambda: subprocess.run(cmd, check=True, capture_output=True), repeats)


def capped(lm, row: dict):
    """Priority Sampling on `lm`'s weights with pass lists at most as long as `row`'s label: an untrained model's
    answers have random lengths, a trained one's about the label's."""
    from llmopt.sampling import PassListLM, PrioritySampling

    return PrioritySampling(PassListLM(lm.model, lm.tokenizer, lm.passes, max_passes=len(row["passes"]),
                                       context_length=lm.context_length))


def model_costs(model: Path, rows: dict[str, dict], batch_rows: list[dict], int8: bool, repeats: int) -> dict:
    """In-process costs of `model` (one torch thread, as `llmopt predict`): prompt tokens and prefill seconds of
    each of `rows` (label -> dataset row), one decoding step, PS@10 (pass lists as long as the label) on the
    median row and over `batch_rows`."""
    from llmopt.model.format import build_prompt
    from llmopt.sampling import PassListLM

    lm = PassListLM.load(model, int8=int8)
    median = rows["median"]
    r = {"decode_ms": decode_step_ms(lm, median["ir"], steps=50)}
    for label, row in rows.items():
        r[f"tokens[{label}]"] = len(lm.prompt_ids(build_prompt(row["ir"])))
        r[f"prefill_s[{label}]"] = _median_s(lambda ir=row["ir"]: lm.decoder(ir), repeats)
    strategy = capped(lm, median)
    r["ps10_s"] = _median_s(lambda: strategy.sample(median["ir"], 10), repeats)
    r["ps10_decode_tokens"] = strategy.last_decoder.tokens_run - len(strategy.last_decoder.prompt_ids)
    strategies = [capped(lm, row) for row in batch_rows]
    start = time.perf_counter()
    for strat, row in zip(strategies, batch_rows, strict=True):
        strat.sample(row["ir"], 10)
    r["batch_model_fps"] = len(batch_rows) / (time.perf_counter() - start)
    return r


def shipped_decode_tokens(ir: str) -> int | None:
    """Tokens the shipped (trained) model decodes after the prompt in PS@10 on `ir`, uncapped: how long real
    Priority Sampling answers run (None if `ir` does not fit its context).  One model: the shipped ensemble's
    first member (an ensemble's decoder counts every member's tokens)."""
    from llmopt.model.loading import single_model_dir
    from llmopt.sampling import PassListLM, PrioritySampling, PromptTooLongError

    strategy = PrioritySampling(PassListLM.load(single_model_dir()))
    try:
        strategy.sample(ir, 10)
    except PromptTooLongError:
        return None
    return strategy.last_decoder.tokens_run - len(strategy.last_decoder.prompt_ids)


def preset_costs(args: argparse.Namespace) -> dict:
    """Cost of every `--untrained-preset` (fp32 and int8) on its config's test split: see `_write_costs`."""
    import random

    from llmopt.dataset import read_rows
    from training.config import load_config

    presets = args.untrained_preset.split(",")
    configs = {p: args.config.format(preset=p) for p in presets}
    test = sorted(read_rows(args.data or load_config(configs[presets[0]]).data_dir, "test"), key=lambda r: r["n_tokens"])
    rows = {"median": test[len(test) // 2], "p90": test[int(len(test) * 0.9)]}
    batch_rows = random.Random(0).sample(test, args.functions)
    cache = Path(tempfile.gettempdir()) / "llmopt_bench_untrained"
    results = {"configs": configs, "cpus": os.cpu_count(), "load_average": os.getloadavg()[0], "repeats": args.repeats,
               "rows": {k: {"name": v["name"], "n_tokens": v["n_tokens"], "label": v["passes"]} for k, v in rows.items()},
               "batch_functions": len(batch_rows), "batch_mean_n_tokens": statistics.mean(r["n_tokens"] for r in batch_rows),
               "shipped_ps10_decode_tokens": shipped_decode_tokens(rows["median"]["ir"]), "presets": {}}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "median.ll"
        path.write_text(rows["median"]["ir"])
        cap = ("--max-passes", str(len(rows["median"]["passes"])))
        for preset in presets:
            model = untrained_model(configs[preset], preset, cache, args.tokenizer_rows)
            for int8 in (False, True):
                r = {"parameters": parameters(model), "file_mb": (model / "model.safetensors").stat().st_size / 1e6,
                     **model_costs(model, rows, batch_rows, int8, args.repeats),
                     "cold_load_s": cold_load_s(model, int8, args.repeats),
                     "cold_predict_s": cold(str(model), path, "priority", 10, args.repeats, "torch",
                                            cap + (("--int8",) if int8 else ()))}
                results["presets"][f"{preset}{', int8' if int8 else ''}"] = r
                print(preset, "int8" if int8 else "fp32", json.dumps(r), file=sys.stderr, flush=True)
    return results


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="model directory (default: the shipped model)")
    parser.add_argument("--data", help="dataset directory (default: the sample dataset)")
    parser.add_argument("--functions", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--strategies", default="greedy:1,priority:10", metavar="NAME:K[,NAME:K...]",
                        help="registry strategies and their sample counts to time (default: greedy:1,priority:10)")
    parser.add_argument("--engines", default=",".join(ENGINES), help="inference engines to time (default: both)")
    parser.add_argument("--settings", default="float32:1,auto:0", metavar="DTYPE:THREADS[,...]",
                        help="model settings to time: prefill dtype (float32, bfloat16, auto) and torch threads (0: "
                             "every core); default: the old predict (float32 on 1 thread) and today's "
                             "(auto on every core)")
    parser.add_argument("--write", help="update the '## Prediction' section of this markdown file")
    parser.add_argument("--untrained-preset", metavar="P[,P...]",
                        help="time randomly initialised models of these presets (tiny,base,small) with --config's "
                             "tokenizer and context instead of --model (writes '## Prediction cost by model size')")
    parser.add_argument("--config", default="training/configs/v3-{preset}.json",
                        help="training config of each --untrained-preset (tokenizer size, context, data); {preset} "
                             "is replaced by the preset's name (default: %(default)s)")
    parser.add_argument("--tokenizer-rows", type=int, default=3000,
                        help="train functions the --untrained-preset tokenizer is trained on")
    return parser


def predict_costs(args: argparse.Namespace) -> dict:
    """Cold start and batch rate of every engine x setting x strategy, and the decode step, on `args.data`."""
    rows = sorted(_rows(args.data), key=lambda r: r["n_tokens"])
    median = rows[len(rows) // 2]
    batch_rows = sample_rows(rows, args.functions)
    irs = [r["ir"] for r in batch_rows]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "median.ll"
        path.write_text(median["ir"])
        results = {"median_function": {"name": median["name"], "n_tokens": median["n_tokens"],
                                       "instcount_input": median["instcount_input"]},
                   "functions": len(irs), "mean_tokens": round(statistics.mean(r["n_tokens"] for r in batch_rows)),
                   "load_average": os.getloadavg()[0], "cpus": os.cpu_count(), "model": args.model or "default"}
        results["labels"] = []
        # Both inference engines in the same run: their ratio is what survives a noisy machine.
        for engine in args.engines.split(","):
            from llmopt.sampling import PassListLM

            lm = PassListLM.load(args.model, engine=engine)
            results[f"decode_step_ms[{engine}]"] = round(decode_step_ms(lm, median["ir"]), 2)
            for dtype, threads in _settings(args.settings):
                if engine == "transformers" and dtype == "bfloat16":
                    continue  # the bf16 prefill is the torch engine's
                extra = ("--prefill-dtype", dtype, "--threads", str(threads))
                for strategy, k in _strategies(args.strategies):
                    label = f"{_short(strategy, k)}, {engine}, {dtype} x{threads}"
                    results["labels"].append(label)
                    results[f"cold_s[{label}]"] = round(cold(args.model, path, strategy, k, args.repeats, engine,
                                                             extra), 2)
                    fps, comps = batch(args.model, irs, strategy, k, engine, (dtype, threads))
                    results[f"batch_functions_per_s[{label}]"] = round(fps, 2)
                    results[f"batch_compilations[{label}]"] = comps
    return results


def main() -> int:
    args = _parser().parse_args()
    if args.untrained_preset:
        results = preset_costs(args)
        print(json.dumps(results, indent=1))
        if args.write:
            _write_costs(Path(args.write), results)
        return 0
    results = predict_costs(args)
    print(json.dumps(results, indent=1))
    if args.write:
        _write(Path(args.write), results)
    return 0


def _strategies(spec: str) -> list[tuple[str, int]]:
    """`greedy:1,priority:10` -> [("greedy", 1), ("priority", 10)]."""
    out = []
    for part in spec.split(","):
        name, _, k = part.partition(":")
        out.append((name, int(k or 1)))
    return out


def _settings(spec: str) -> list[tuple[str, int]]:
    """`float32:1,auto:0` -> [("float32", 1), ("auto", <cores>)]."""
    out = []
    for part in spec.split(","):
        dtype, _, threads = part.partition(":")
        out.append((dtype, int(threads or 1) or os.cpu_count() or 1))
    return out


def _short(strategy: str, k: int) -> str:
    """A table label: greedy, PS@10, priority_rerank@10."""
    return "greedy" if strategy == "greedy" else f"PS@{k}" if strategy == "priority" else f"{strategy}@{k}"


def _write(path: Path, r: dict) -> None:
    lines = [SECTION, "",
             f"`python scripts/bench_predict.py` ({time.strftime('%Y-%m-%d')}; model `{r['model']}`; "
             f"{r['cpus']} CPUs, load average {r['load_average']:.1f} at the start). Cold = a fresh `llmopt predict` "
             f"process on the median function ({r['median_function']['n_tokens']} tokens, "
             f"{r['median_function']['instcount_input']} instructions), result cache off, median of repeats. "
             f"Batch = `predict_many` over {r['functions']} functions (mean {r['mean_tokens']} tokens), model loaded, "
             "2 compile workers, cache off. `float32 x1` = the model's prompt in float32 on 1 torch thread, `auto x2` = "
             "`llmopt predict`'s default (bfloat16 prompt where the CPU has it natively, every core).", "",
             "| strategy | cold start (s) | batch (functions/s) | compilations (batch) |", "|---|---|---|---|"]
    for label in r["labels"]:
        lines.append(f"| {label} | {r[f'cold_s[{label}]']} | {r[f'batch_functions_per_s[{label}]']} | "
                     f"{r[f'batch_compilations[{label}]']} |")
    engines = [e for e in ENGINES if f"decode_step_ms[{e}]" in r]
    lines += ["", "One KV-cached decoding step after the median function's prompt (median ms): "
              + ", ".join(f"{e} {r[f'decode_step_ms[{e}]']}" for e in engines) + "."]
    lines += ["", "Targets: <= 3 s cold with PS@10; >= 5 functions/s batch with PS@10. Engine `torch` is the "
              "plain-PyTorch Llama (`llmopt.model.llama`, the default), `transformers` the HF model on the same "
              "weights.", ""]
    _replace_section(path, SECTION, lines)


def _replace_section(path: Path, section: str, lines: list[str]) -> None:
    """Put `lines` (starting with the `section` heading) in place of that section of `path`, or append them."""
    text = path.read_text() if path.exists() else "# Benchmarks\n\n"
    block = "\n".join(lines)
    if re.search(rf"^{re.escape(section)}$", text, flags=re.M):
        text = re.sub(rf"^{re.escape(section)}\n.*?(?=\n## |\Z)", lambda _: block.rstrip("\n") + "\n", text,
                      flags=re.S | re.M)
    else:
        text = text.rstrip("\n") + "\n\n" + block
    path.write_text(text)


def _write_costs(path: Path, r: dict) -> None:
    """The '## Prediction cost by model size' section: one table row per preset and precision."""
    med, p90 = r["rows"]["median"], r["rows"]["p90"]
    lines = [COST_SECTION, "",
             f"`python scripts/bench_predict.py --untrained-preset {','.join(dict.fromkeys(k.split(',')[0] for k in r['presets']))} "
             f"--functions {r['batch_functions']} --repeats {r['repeats']}` ({time.strftime('%Y-%m-%d')}; configs "
             f"{', '.join(f'`{c}`' for c in dict.fromkeys(r['configs'].values()))}; {r['cpus']} CPUs, load average "
             f"{r['load_average']:.1f} at the start; medians of {r['repeats']}). Randomly initialised models of each "
             f"preset with its config's tokenizer (trained on a sample of the train split) and context, saved in the "
             f"shipped format. Test-split functions by length: median `{med['name']}` ({med['n_tokens']} estimated "
             f"tokens, label {' '.join(med['label'])}), 90th percentile `{p90['name']}` ({p90['n_tokens']}).", "",
             "| model | parameters | weights (MB) | prompt tokens (median / p90) | import + load (s) | prefill median (s) "
             "| prefill p90 (s) | decode (ms/token) | PS@10 decode tokens | model part of cold PS@10 (s) "
             "| cold `llmopt predict` PS@10 (s) | batch, model only (functions/s) |", "|" + "---|" * 12]
    for name, c in r["presets"].items():
        model_s = c["cold_load_s"] + c["prefill_s[median]"] + c["ps10_decode_tokens"] * c["decode_ms"] / 1000
        lines.append(f"| {name} | {c['parameters'] / 1e6:.1f}M | {c['file_mb']:.0f} | {c['tokens[median]']} / "
                     f"{c['tokens[p90]']} | {c['cold_load_s']:.2f} | {c['prefill_s[median]']:.2f} | "
                     f"{c['prefill_s[p90]']:.2f} | {c['decode_ms']:.1f} | {c['ps10_decode_tokens']} | {model_s:.2f} | "
                     f"**{c['cold_predict_s']:.2f}** | {c['batch_model_fps']:.1f} |")
    lines += ["", f"Model part = import + load + prefill + decode tokens x ms/token. Cold `llmopt predict` is measured "
              f"end to end (`--samples 10 --max-passes {len(med['label'])} --no-cache`, `--int8` on the int8 rows). "
              f"Batch: PS@10 on {r['batch_functions']} random test functions (mean {r['batch_mean_n_tokens']:.0f} "
              f"estimated tokens), compilations left out. The shipped trained model decodes "
              f"{r['shipped_ps10_decode_tokens']} tokens in PS@10 on the median function (uncapped).", ""]
    _replace_section(path, COST_SECTION, lines)


if __name__ == "__main__":
    sys.exit(main())
