"""`llmopt datagen`: build an autotuned dataset.  `add_parser(subparsers)` registers the subcommand;
`python -m data_pipeline.cli ...` runs it standalone.

    llmopt datagen --source csmith:1000 --source pypi:default --budget 1000 --out data/my-dataset

Real C: `pypi:default` is pycryptodome, brotli and lz4 (what the committed dataset used); `pypi:all`
is the 21 PyPI packages curated first; `packages:all` is the whole checked catalog of PyPI and npm
packages in data_pipeline/sources/catalog.py (each pinned); `pypi:zstandard,lupa` picks some.
"""

from __future__ import annotations

import argparse
import logging
import sys

ARGS = ("budget", "greedy_steps", "max_len", "seed", "max_tokens", "min_instructions", "package_cap", "shard_units",
        "shard_functions", "broadcast_top", "split", "test_share", "validation_share", "tokenizer", "workers",
        "executor", "address", "cache", "limit_shards", "shard_range", "seconds", "run_timeout", "eval_timeout")


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register `datagen` on an argparse subparsers object; the handler is `args.func(args) -> int`."""
    p = subparsers.add_parser("datagen", help="generate an autotuned (IR -> best pass list) dataset",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--source", action="append", default=None, metavar="SPEC",
                   help="csmith:N | dir:PATH[;-Iinc;-DX] | pypi:default|all|PKG,PKG | npm:PKG,PKG | packages:all | "
                        "gcc-tests[:N] (repeatable); packages:all = the checked catalog in "
                        "data_pipeline/sources/catalog.py")
    p.add_argument("--config", help="JSON file with any of the options below (command-line values win)")
    p.add_argument("--out", help="output directory (parquet splits, README.md card, work/ shards)")
    p.add_argument("--budget", type=int, help="random-search evaluations per function (default 1000)")
    p.add_argument("--seconds", type=float, help="optional wall-clock cap per function's random search")
    p.add_argument("--greedy-steps", type=int,
                   help="greedy search (and the final polish) runs until a step no longer improves, at most this "
                        "many steps; 0 disables both (default 40)")
    p.add_argument("--max-len", type=int, help="longest random pass list (default 12)")
    p.add_argument("--no-minimize", action="store_true", help="keep the best list as found")
    p.add_argument("--broadcast-top", type=int, help="distinct best lists broadcast to all functions (default 256)")
    p.add_argument("--no-safety", action="store_true", help="do not check csmith labels by running the program")
    p.add_argument("--seed", type=int, help="seed of csmith and of the search (default 0)")
    p.add_argument("--max-tokens", type=int,
                   help="largest function kept, in tokens of the model's tokenizer (default 4096)")
    p.add_argument("--min-instructions", type=int, help="smallest function kept, in instructions (default 5)")
    p.add_argument("--package-cap", type=int, help="functions kept per package at most (default 1000)")
    p.add_argument("--tokenizer", help="tokenizer folder for --max-tokens (default: the shipped model's)")
    p.add_argument("--split", choices=("package", "hash"),
                   help="package (default: test and validation from packages never in train) or hash")
    p.add_argument("--test-share", type=float, help="share of functions in test (default 0.06)")
    p.add_argument("--validation-share", type=float, help="share of functions in validation (default 0.06)")
    p.add_argument("--shard-units", type=int, help="generated programs per phase-0 work item (default 32)")
    p.add_argument("--shard-functions", type=int, help="functions per search shard (default 64)")
    p.add_argument("--limit-shards", type=int, help="only the first N shards")
    p.add_argument("--shard-range", metavar="START:END",
                   help="phases 1-2 work only on these shards of the plan (another machine takes the rest)")
    p.add_argument("--phases", help="comma-separated phases to run (default p0,p1,p2,write)")
    p.add_argument("--workers", type=int, help="harness worker processes (default: all cores)")
    p.add_argument("--executor", choices=("local", "ray"), help="local (default) or ray")
    p.add_argument("--address", help="Ray cluster address (default: start a local Ray)")
    p.add_argument("--cache", help="result cache SQLite file (default ~/.cache/llmopt/results.sqlite)")
    p.add_argument("--run-timeout", type=float, help="seconds a program may run in the safety check (default 10)")
    p.add_argument("--eval-timeout", type=float, help="seconds per compilation (default 20)")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--status", action="store_true",
                   help="report where the job in --out stands and the labels found so far, then exit")
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    p.set_defaults(func=handler)
    return p


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
    if args.config:
        return JobConfig.from_file(args.config, **overrides)
    if not args.source or not args.out:
        raise JobError("datagen needs at least one --source and an --out directory (or a --config file)")
    return JobConfig(**{k: v for k, v in overrides.items() if v is not None})


def handler(args: argparse.Namespace) -> int:
    from data_pipeline.job import run_job

    logging.basicConfig(level=logging.DEBUG if args.debug else logging.WARNING, format="%(message)s")
    if args.status:
        from pathlib import Path

        from data_pipeline.status import job_status

        if not args.out:
            print("datagen: --status needs the job's --out directory", file=sys.stderr)
            return 2
        print(job_status(Path(args.out)))
        return 0
    try:
        cfg = config_from_args(args)
        stats = run_job(cfg)
    except KeyboardInterrupt:
        print("datagen: interrupted; finished shards are kept, run the same command to resume", file=sys.stderr)
        return 130
    except Exception as err:
        if args.debug:
            raise
        from data_pipeline.job import JobError
        from data_pipeline.sources import SourceError

        print(f"datagen: {err}", file=sys.stderr)
        return 2 if isinstance(err, JobError | SourceError) else 1  # 2: bad input, fix the command
    print(f"datagen: {stats.functions} functions, {stats.evaluations} evaluations in {stats.seconds:.0f}s "
          f"-> {cfg.out}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m data_pipeline.cli")
    sub = parser.add_subparsers(dest="command", required=True)
    add_parser(sub)
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] != "datagen":
        argv = ["datagen", *argv]
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
