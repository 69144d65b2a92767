#!/usr/bin/env python3
"""Evaluations per second: in-process libLLVM worker pool vs one `opt` process per evaluation.

Corpus: small csmith functions (10-300 instructions) plus the example file, random vocabulary
sequences of 1-10 passes, cache off, crash isolation on.  Every subprocess count is compared
with the in-process count of the same (function, pass list).

    python scripts/bench_harness.py [--seconds S] [--workers N] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import tempfile
import time
from pathlib import Path

from data_pipeline.sources.csmith import generate as csmith_program
from llmopt.harness import Harness
from llmopt.llvm.capi import Context
from llmopt.llvm.ir import normalize_ir, split_functions
from llmopt.llvm.passes import META_PASSES, vocabulary
from llmopt.llvm.subprocess_opt import count_instructions_text, run_opt
from llmopt.llvm.toolchain import find_toolchain

ROOT = Path(__file__).resolve().parent.parent


def build_corpus(n_programs: int = 6) -> list[str]:
    clang = find_toolchain().clang
    modules = [normalize_ir(m) for _, m in split_functions((ROOT / "examples" / "example.ll").read_text())]
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(1, n_programs + 1):
            src = Path(tmp) / f"p{seed}.c"
            src.write_text(csmith_program(seed, ("--max-funcs", "4", "--no-arrays")))
            out = Path(tmp) / f"p{seed}.ll"
            subprocess.run([clang, "-Oz", "-Xclang", "-disable-llvm-passes", "-emit-llvm", "-S", "-w",
                            "-I/usr/include/csmith", "-o", str(out), str(src)], check=True)
            modules += [normalize_ir(m) for name, m in split_functions(out.read_text()) if name.startswith("func_")]
    ctx = Context()
    return [m for m in modules if 10 <= ctx.parse(m).instcount() <= 300]


def random_lists(n: int, seed: int = 0) -> list[list[str]]:
    names = vocabulary()
    plain = [p for p in names if p not in META_PASSES]
    rng = random.Random(seed)
    lists = []
    for _ in range(n):
        seq = [rng.choice(plain) for _ in range(rng.randint(1, 10))]
        if rng.random() < 0.5:
            seq.insert(0, "default<Oz>")
        lists.append(seq)
    return lists


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="time per path")
    parser.add_argument("--workers", type=int, default=os.cpu_count())
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    corpus = build_corpus()
    tasks = [(corpus[i % len(corpus)], seq) for i, seq in enumerate(random_lists(200_000))]

    with Harness(workers=args.workers, cache=False) as harness:
        harness.evaluate_tasks(tasks[:200])  # warm-up: workers started, inputs parsed
        done, start = 0, time.perf_counter()
        inprocess: list = []
        while time.perf_counter() - start < args.seconds:
            chunk = tasks[done : done + 2000]
            inprocess += harness.evaluate_tasks(chunk)
            done += len(chunk)
        inprocess_rate = done / (time.perf_counter() - start)

    # The subprocess path on the same tasks, one `opt` per evaluation, on all cores.
    from concurrent.futures import ThreadPoolExecutor

    def one(task):
        ir, seq = task
        try:
            return sum(count_instructions_text(run_opt(ir, seq)).values())
        except Exception:
            return None

    sub_counts, start = [], time.perf_counter()
    with ThreadPoolExecutor(args.workers) as pool:
        while time.perf_counter() - start < args.seconds and len(sub_counts) < done:
            batch = tasks[len(sub_counts) : len(sub_counts) + 4 * args.workers]
            sub_counts += list(pool.map(one, batch))
    sub_rate = len(sub_counts) / (time.perf_counter() - start)

    agree = all(r.ok and r.instcount == c for r, c in zip(inprocess, sub_counts, strict=False))
    result = {"inprocess_evals_per_s": round(inprocess_rate, 1), "subprocess_evals_per_s": round(sub_rate, 1),
              "speedup": round(inprocess_rate / sub_rate, 1), "counts_agree": agree,
              "workers": args.workers, "corpus_functions": len(corpus), "compared": len(sub_counts)}
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:24} {value}")


if __name__ == "__main__":
    main()
