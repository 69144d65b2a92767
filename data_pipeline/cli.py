"""The data commands: `llmopt datagen` (an autotuned dataset) and `llmopt feedback-data` (a compiler-feedback
training set).  `add_parser(subparsers)` registers both; `python -m data_pipeline.cli ...` runs datagen
standalone.  The work happens in data_pipeline.job and data_pipeline.feedback_data, imported when a command runs.
"""

from __future__ import annotations

import argparse
import logging
import sys

from llmopt.cli_options import (
    add_cache_flags,
    add_json_flag,
    add_metric_flag,
    add_progress_flag,
    add_workers_flag,
    cache_choice,
    float_in,
    nonnegative_int,
    positive_int,
    seconds_float,
)

DATAGEN_DESCRIPTION = """`llmopt datagen`: build an autotuned dataset.

    llmopt datagen --source csmith:1000 --source pypi:default --budget 1000 --out data/my-dataset

Real C: `pypi:default` is pycryptodome, brotli and lz4 (what the committed dataset used); `pypi:all`
is the 21 PyPI packages curated first; `packages:all` is the whole checked catalog of PyPI and npm
packages in data_pipeline/sources/catalog.py (each pinned); `pypi:zstandard,lupa` picks some.
"""
_share = float_in(0.0, 1.0, what="share")
ARGS = ("metric", "budget", "greedy_steps", "max_len", "seed", "max_tokens", "min_instructions", "package_cap", "shard_units",
        "shard_functions", "broadcast_top", "split", "test_share", "validation_share", "tokenizer", "workers",
        "executor", "address", "cache", "limit_shards", "shard_range", "seconds", "run_timeout", "eval_timeout")


def add_parser(subparsers) -> None:
    """Register `datagen` and `feedback-data` on an argparse subparsers object; handlers are `args.func(args) -> int`."""
    add_datagen_parser(subparsers)
    add_feedback_data_parser(subparsers)


def add_datagen_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("datagen", help="generate an autotuned (IR -> best pass list) dataset",
                              description=DATAGEN_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--source", action="append", default=None, metavar="SPEC",
                   help="csmith:N | dir:PATH[;-Iinc;-DX] | pypi:default|all|PKG,PKG | npm:PKG,PKG | packages:all | "
                        "gcc-tests[:N] (repeatable); packages:all = the checked catalog in "
                        "data_pipeline/sources/catalog.py")
    p.add_argument("--config", help="JSON file with any of the options below (command-line values win)")
    p.add_argument("--out", help="output directory (parquet splits, README.md card, work/ shards)")
    add_metric_flag(p, None, "the labels")
    p.add_argument("--budget", type=positive_int, help="random-search evaluations per function (default 1000)")
    p.add_argument("--seconds", type=seconds_float, help="optional wall-clock cap per function's random search")
    p.add_argument("--greedy-steps", type=nonnegative_int,
                   help="greedy search (and the final polish) runs until a step no longer improves, at most this "
                        "many steps; 0 disables both (default 40)")
    p.add_argument("--max-len", type=positive_int, help="longest random pass list (default 12)")
    p.add_argument("--no-minimize", action="store_true", help="keep the best list as found")
    p.add_argument("--broadcast-top", type=nonnegative_int,
                   help="distinct best lists broadcast to all functions (default 256)")
    p.add_argument("--no-safety", action="store_true", help="do not check csmith labels by running the program")
    p.add_argument("--seed", type=nonnegative_int, help="seed of csmith and of the search (default 0)")
    p.add_argument("--max-tokens", type=positive_int,
                   help="largest function kept, in tokens of the model's tokenizer (default 4096)")
    p.add_argument("--min-instructions", type=nonnegative_int, help="smallest function kept, in instructions (default 5)")
    p.add_argument("--package-cap", type=positive_int, help="functions kept per package at most (default 1000)")
    p.add_argument("--tokenizer", help="tokenizer folder for --max-tokens (default: the shipped model's)")
    p.add_argument("--split", choices=("package", "hash"),
                   help="package (default: test and validation from packages never in train) or hash")
    p.add_argument("--test-share", type=_share, help="share of functions in test (default 0.06)")
    p.add_argument("--validation-share", type=_share, help="share of functions in validation (default 0.06)")
    p.add_argument("--shard-units", type=positive_int, help="generated programs per phase-0 work item (default 32)")
    p.add_argument("--shard-functions", type=positive_int, help="functions per search shard (default 64)")
    p.add_argument("--limit-shards", type=nonnegative_int, help="only the first N shards")
    p.add_argument("--shard-range", metavar="START:END",
                   help="phases 1-2 work only on these shards of the plan (another machine takes the rest)")
    p.add_argument("--phases", help="comma-separated phases to run (default p0,p1,p2,write)")
    add_workers_flag(p, None, "harness worker processes")
    p.add_argument("--executor", choices=("local", "ray"), help="local (default) or ray")
    p.add_argument("--address", help="Ray cluster address host:port (default: start a local Ray)")
    add_cache_flags(p)
    p.add_argument("--run-timeout", type=seconds_float, help="seconds a program may run in the safety check (default 10)")
    p.add_argument("--eval-timeout", type=seconds_float, help="seconds per compilation (default 20)")
    add_progress_flag(p)
    p.add_argument("--status", action="store_true",
                   help="report where the job in --out stands and the labels found so far, then exit")
    p.set_defaults(func=handler)
    return p


def add_feedback_data_parser(subparsers) -> argparse.ArgumentParser:
    f = subparsers.add_parser(
        "feedback-data", help="build a compiler-feedback training set from a model's answers (thesis ch. 5)",
        description="Answer every row of a dataset split with the base model, compile, and write rows whose "
                    "prompt carries (answer, feedback) and whose target is the verdict + the best pass list.")
    f.add_argument("data", help="dataset directory (train/validation/test parquet)")
    f.add_argument("out", help="output dataset directory")
    f.add_argument("--model", help="base model directory (default: the shipped model)")
    f.add_argument("--format", choices=("fast", "short", "long"), default="fast")
    f.add_argument("--splits", default="train,validation", help="splits to convert (default train,validation)")
    f.add_argument("--limit", type=positive_int, help="at most this many rows per split")
    add_workers_flag(f, 2)
    add_cache_flags(f)
    add_progress_flag(f)
    add_json_flag(f)
    f.set_defaults(func=run_feedback_data)
    return f


def config_from_args(args: argparse.Namespace):
    from data_pipeline.job import JobConfig, JobError

    overrides = {k: getattr(args, k, None) for k in ARGS}
    overrides["sources"] = args.source
    if args.phases:
        overrides["phases"] = tuple(p.strip() for p in args.phases.split(",") if p.strip())
    overrides["out"] = args.out
    if args.no_minimize:
        overrides["minimize"] = False
    if args.no_safety:
        overrides["safety"] = False
    if args.no_progress:
        overrides["progress"] = False
    if args.no_cache:
        overrides["use_cache"] = False
    if args.config:
        return JobConfig.from_file(args.config, **overrides)
    if not args.source or not args.out:
        raise JobError("datagen needs at least one --source and an --out directory (or a --config file)")
    return JobConfig(**{k: v for k, v in overrides.items() if v is not None})


def handler(args: argparse.Namespace) -> int:
    from data_pipeline.job import run_job
    from llmopt.errors import LlmoptError, UsageError, one_line

    debug = getattr(args, "debug", False)
    logging.basicConfig(level=logging.DEBUG if debug else logging.WARNING, format="%(message)s")
    if args.status:
        from pathlib import Path

        from data_pipeline.status import job_status

        if not args.out:
            raise UsageError("datagen --status needs the job's --out directory")
        if not (Path(args.out) / "work" / "config.json").is_file():
            raise UsageError(f"{args.out}: no datagen job here (no work/config.json)")
        print(job_status(Path(args.out)))
        return 0
    try:
        cfg = config_from_args(args)
        stats = run_job(cfg)
    except KeyboardInterrupt:
        print("datagen: interrupted; finished shards are kept, run the same command to resume", file=sys.stderr)
        return 130
    except LlmoptError:
        raise  # bad input: one line, exit 2 (llmopt.cli.main)
    except Exception as err:
        if debug:
            raise
        print(f"llmopt datagen: failed: {one_line(err)} (rerun with --debug for the traceback; finished work "
              "is kept)", file=sys.stderr)
        return 1
    print(f"datagen: {stats.functions} functions, {stats.evaluations} evaluations in {stats.seconds:.0f}s "
          f"-> {cfg.out}")
    return 0


def run_feedback_data(args: argparse.Namespace) -> int:
    """`llmopt feedback-data`: the dataset, the splits and the output folder are checked before the model loads."""
    import json
    from pathlib import Path

    from data_pipeline.feedback_data import check_dataset, write_feedback_dataset
    from llmopt.errors import UsageError
    from llmopt.harness import Harness
    from llmopt.outputs import check_output_dir
    from llmopt.predict_cli import load_lm

    splits = [s.strip() for s in args.splits.split(",") if s.strip()]
    check_dataset(args.data, splits)
    if not splits:
        raise UsageError("--splits names no split (e.g. --splits train,validation)")
    out = check_output_dir(args.out, "output dataset")
    lm = load_lm(args.model)
    with Harness(workers=args.workers, cache=cache_choice(args)) as harness:
        counts = write_feedback_dataset(lm, Path(args.data), out, harness, form=args.format, splits=splits,
                                        limit=args.limit, progress=not args.no_progress and sys.stderr.isatty())
    if args.json:
        print(json.dumps({"out": str(out), "rows": counts, "format": args.format, "model": lm.path}))
    else:
        print(f"feedback dataset written to {out}: " + ", ".join(f"{s} {n} rows" for s, n in counts.items()))
    return 0


def main(argv: list[str] | None = None) -> int:
    """`python -m data_pipeline.cli ARGS` = `llmopt datagen ARGS`: the same options and error contract."""
    from llmopt.cli import main as llmopt_main

    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["datagen"]:
        argv = argv[1:]
    return llmopt_main(["datagen", *argv])


if __name__ == "__main__":
    sys.exit(main())
