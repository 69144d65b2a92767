"""`llmopt predict FILE.ll` (and `llmopt feedback-data`): model-predicted pass lists, verified by LLVM.

Imports of torch / transformers happen inside the command, after the input has been checked, so
`llmopt --help` and bad-input errors stay fast.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

DEFAULT_SAMPLES = 10


def add_parser(subparsers: Any) -> None:
    """Register `predict` and `feedback-data`; each `func(args)` returns an exit code."""
    p = subparsers.add_parser(
        "predict", help="predict a pass list with the model, verify it with LLVM, write the optimized IR",
        description="Sample candidate pass lists from the model, compile each distinct one, keep the fewest "
                    "instructions (never worse than -Oz unless --no-oz-backup). A module with several functions "
                    "is predicted per function; the written module is optimized with the single per-function "
                    "winner (or -Oz) that gives the fewest instructions on the whole module.")
    p.add_argument("file", help="LLVM IR (.ll) or bitcode (.bc)")
    p.add_argument("-o", "--output", help="write the optimized module here")
    p.add_argument("--strategy", choices=("greedy", "nucleus", "priority", "random", "coreset"), default="priority")
    p.add_argument("--samples", "-k", type=int, default=DEFAULT_SAMPLES, help="candidates per function (default 10)")
    p.add_argument("--temperature", type=float, default=1.2, help="nucleus sampling temperature (default 1.2)")
    p.add_argument("--top-p", type=float, default=0.95, help="nucleus sampling top-p (default 0.95)")
    p.add_argument("--max-branch", type=int, help="Priority Sampling: alternatives pushed per token")
    p.add_argument("--priority", choices=("prefix", "geometric", "token"), default="prefix",
                   help="Priority Sampling queue order (default: prefix probability)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--feedback", choices=("fast", "short", "long"), help="add compiler-feedback rounds (thesis ch. 5)")
    p.add_argument("--rounds", type=int, default=2, help="feedback rounds (default 2)")
    p.add_argument("--model", help="model directory (default: the shipped model)")
    p.add_argument("--data", help="dataset directory for --strategy coreset (its train split)")
    p.add_argument("--no-oz-backup", action="store_true", help="keep the best model answer even if -Oz is better")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the result cache")
    p.add_argument("--workers", type=int, default=2, help="compile workers (default 2)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run_predict)

    f = subparsers.add_parser(
        "feedback-data", help="build a compiler-feedback training set from a model's answers (thesis ch. 5)",
        description="Answer every row of a dataset split with the base model, compile, and write rows whose "
                    "prompt carries (answer, feedback) and whose target is the verdict + the best pass list.")
    f.add_argument("data", help="dataset directory (train/validation/test parquet)")
    f.add_argument("out", help="output dataset directory")
    f.add_argument("--model", help="base model directory (default: the shipped model)")
    f.add_argument("--format", choices=("fast", "short", "long"), default="fast")
    f.add_argument("--splits", default="train,validation", help="splits to convert (default train,validation)")
    f.add_argument("--limit", type=int, help="at most this many rows per split")
    f.set_defaults(func=run_feedback_data)


def _load_lm(path: str | None) -> Any:
    from llmopt.errors import UsageError
    from llmopt.model.loading import ModelNotFoundError

    try:
        from llmopt.sampling.lm import PassListLM

        return PassListLM.load(path)
    except ModelNotFoundError as err:
        raise UsageError(str(err)) from None


def build_strategy(args: argparse.Namespace, harness: Any = None) -> tuple[Any, str | None]:
    """(strategy, model directory or None) for the parsed CLI arguments."""
    from llmopt.errors import UsageError
    from llmopt.sampling import make_strategy

    if args.samples < 1:
        raise UsageError("--samples must be at least 1")
    lm, model = None, None
    train_lists = None
    if args.strategy in ("greedy", "nucleus", "priority") or args.feedback:
        lm = _load_lm(args.model)
        model = lm.path
    if args.strategy == "coreset":
        from llmopt.sampling.baselines import Coreset

        if not args.data:
            raise UsageError("--strategy coreset needs --data DIR (a dataset with a train split)")
        try:
            train_lists = Coreset.from_dataset(args.data).lists
        except FileNotFoundError as err:
            raise UsageError(str(err)) from None
    strategy = make_strategy(args.strategy, lm=lm, temperature=args.temperature, top_p=args.top_p, seed=args.seed,
                             max_branch=args.max_branch, priority=args.priority, train_pass_lists=train_lists,
                             passes=lm.passes if lm is not None else None)
    if args.feedback:
        from llmopt.feedback import FeedbackStrategy

        strategy = FeedbackStrategy(lm, harness, form=args.feedback, rounds=args.rounds, base=strategy)
    return strategy, model


def run_predict(args: argparse.Namespace) -> int:
    from llmopt.errors import UsageError
    from llmopt.inputs import prepare_input

    if args.output and Path(args.output).is_dir():
        raise UsageError(f"{args.output}: is a directory, expected a file name for the optimized IR")
    ir, notes = prepare_input(args.file)
    from llmopt.harness import Harness
    from llmopt.predict import predict_module

    with Harness(workers=args.workers, cache=not args.no_cache) as harness:
        harness.pool.start()  # workers start up while the model loads
        strategy, model = build_strategy(args, harness)
        result = predict_module(ir, strategy, args.samples, harness, oz_backup=not args.no_oz_backup)
        version = harness.version
    notes += result.notes
    if args.output:
        Path(args.output).write_text(result.ir or "")
    if args.json:
        print(json.dumps({
            "functions": [f.to_json() for f in result.functions],
            "instcount_input": result.instcount_input, "instcount_oz": result.instcount_oz,
            "instcount_result": result.instcount_result, "passes": result.passes, "module_mode": result.mode,
            "compilations": result.compilations, "strategy": args.strategy, "samples": args.samples,
            "feedback": args.feedback, "llvm_version": version, "model": model, "notes": notes,
        }))
        return 0
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    _print_table(result, args, model)
    return 0


def _saving(oz: int | None, res: int | None) -> str:
    if not oz or res is None:
        return ""
    return f"{100.0 * (oz - res) / oz:+.1f}%"


def _print_table(result: Any, args: argparse.Namespace, model: str | None) -> None:
    rows = [(f.name, f.instcount_input, f.instcount_oz, f.instcount_result, _saving(f.instcount_oz, f.instcount_result),
             ",".join(f.passes) + ("  (-Oz backup)" if f.source == "oz-backup" else "")) for f in result.functions]
    width = max([8, *(len(r[0]) for r in rows)])
    print(f"{'function':<{width}}  {'input':>6}  {'-Oz':>6}  {'result':>6}  {'vs -Oz':>7}  passes")
    for name, inp, oz, res, saving, passes in rows:
        print(f"{name:<{width}}  {inp if inp is not None else '?':>6}  {oz if oz is not None else '?':>6}  "
              f"{res if res is not None else '?':>6}  {saving:>7}  {passes}")
    module_passes = ",".join(result.passes) if result.mode == "single-list" else "(each function its own list)"
    print(f"{'module':<{width}}  {result.instcount_input:>6}  {result.instcount_oz:>6}  {result.instcount_result:>6}  "
          f"{_saving(result.instcount_oz, result.instcount_result):>7}  {module_passes}")
    saved = (result.instcount_oz or 0) - (result.instcount_result or 0)
    print(f"saving over -Oz: {saved} instructions ({_saving(result.instcount_oz, result.instcount_result) or '0%'}); "
          f"{result.compilations} compilations; strategy {args.strategy}@{args.samples}"
          + (f" + {args.feedback} feedback x{args.rounds}" if args.feedback else "")
          + (f"; model {model}" if model else ""))
    print(f"module answer ({result.mode}): the fewer instructions of one list for the whole module (the best of "
          "the per-function winners and -Oz) and each function optimized with its own list")


def run_feedback_data(args: argparse.Namespace) -> int:
    from llmopt.errors import UsageError
    from llmopt.feedback import write_feedback_dataset
    from llmopt.harness import Harness

    if not Path(args.data).is_dir():
        raise UsageError(f"{args.data}: no such dataset directory")
    lm = _load_lm(args.model)
    with Harness() as harness:
        out = write_feedback_dataset(lm, args.data, args.out, harness, fmt=args.format,
                                     splits=args.splits.split(","), limit=args.limit)
    print(f"feedback dataset written to {out}")
    return 0
