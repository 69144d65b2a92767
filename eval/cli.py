"""`llmopt eval` (and `python -m eval.cli`): batch evaluation vs -Oz with tables, plots and a report.

    llmopt eval --dataset data/DS:test --limit 500 --methods model,baselines --samples 1,3,5,10,30,100 --out runs/e
    llmopt eval --dataset examples --methods random,oz --samples 1,10 --out runs/ll   # .ll files, no labels
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def _ints(text: str) -> list[int]:
    try:
        values = [int(x) for x in text.replace(" ", "").split(",") if x]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return values


def _methods(text: str) -> list[str]:
    return [m for m in text.replace(" ", ",").split(",") if m]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register the `eval` subcommand; its `func(args) -> int` runs the evaluation."""
    from eval.methods import DEFAULT_METHODS
    from eval.runner import DEFAULT_SAMPLES

    p = subparsers.add_parser("eval", help="batch evaluation against -Oz: sampling curves, tables, plots, report",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dataset", required=True,
                   help="PATH[:split] of a datagen dataset (default split: test), or a directory of .ll files")
    p.add_argument("--out", required=True, help="output directory (resumable: a rerun skips finished work)")
    p.add_argument("--methods", type=_methods, default=list(DEFAULT_METHODS),
                   help="comma list: greedy, nucleus[_tT], priority[_noregex|_geomean|_branchN...], feedback[_fast|"
                        "_short|_long], random, coreset, coreset_cover, greedy_search, autotuner, oz; groups: model, "
                        f"baselines, ablations (default: {','.join(DEFAULT_METHODS)})")
    p.add_argument("--samples", type=_ints, default=list(DEFAULT_SAMPLES), help="sample budgets k (default 1,3,5,10,30,100)")
    p.add_argument("--limit", type=int, default=None, help="evaluate a seeded random subset of N functions")
    p.add_argument("--model", default=None, help="model directory (default: the shipped model)")
    p.add_argument("--train-dataset", default=None,
                   help="PATH[:split] whose pass lists make the coreset (default: the eval dataset's train split)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--temperature", type=float, default=1.2, help="temperature of `nucleus` (default 1.2)")
    p.add_argument("--temperatures", type=lambda s: [float(x) for x in s.split(",") if x], default=[],
                   help="extra nucleus sweep, e.g. 0.8,1.2,1.6 (adds methods nucleus_tT)")
    p.add_argument("--top-p", type=float, default=0.95)
    p.add_argument("--feedback-rounds", type=int, default=2)
    p.add_argument("--greedy-search-budget", type=int, default=300, help="compilations per function for greedy_search")
    p.add_argument("--coreset-candidates", type=int, default=100, help="lists ranked by coreset_cover")
    p.add_argument("--coreset-train", type=int, default=300, help="training functions coreset_cover compiles on")
    p.add_argument("--quality-limit", type=int, default=0,
                   help="decode full answers (with optimized IR) on N functions for code-quality metrics")
    p.add_argument("--quality-max-new-tokens", type=int, default=2048)
    p.add_argument("--no-objsize", action="store_true", help="skip object sizes of the chosen lists")
    p.add_argument("--workers", type=int, default=None, help="harness worker processes")
    p.add_argument("--threads", type=int, default=None, help="torch threads for the model")
    p.add_argument("--max-passes", type=int, default=48, help="longest pass list the model may generate")
    p.add_argument("--cache", default=None, help="harness cache file (default: the shared cache)")
    p.add_argument("--no-cache", action="store_true", help="do not use the harness cache")
    p.add_argument("--chunk", type=int, default=16, help="functions per resumable chunk")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=handler)
    return p


def handler(args: argparse.Namespace) -> int:
    from eval.inputs import InputError
    from eval.methods import MethodError, MethodOptions
    from eval.runner import EvalConfig, run_eval
    from llmopt.errors import UsageError

    if args.limit is not None and args.limit < 1:
        raise UsageError("--limit must be a positive number of functions")
    methods = list(args.methods) + [f"nucleus_t{t:g}" for t in args.temperatures]
    options = MethodOptions(seed=args.seed, model=args.model, temperature=args.temperature, top_p=args.top_p,
                            greedy_search_budget=args.greedy_search_budget, coreset_candidates=args.coreset_candidates,
                            coreset_train=args.coreset_train, feedback_rounds=args.feedback_rounds,
                            threads=args.threads, max_passes=args.max_passes)
    cache: str | bool = False if args.no_cache else (args.cache or True)
    cfg = EvalConfig(dataset=args.dataset, out=Path(args.out), methods=methods, samples=args.samples,
                     limit=args.limit, seed=args.seed, train_dataset=args.train_dataset, options=options,
                     quality_limit=args.quality_limit, quality_max_new_tokens=args.quality_max_new_tokens,
                     objsize=not args.no_objsize, workers=args.workers, cache=cache, chunk=args.chunk,
                     progress=not args.quiet)
    try:
        results = run_eval(cfg)
    except (InputError, MethodError) as err:
        raise UsageError(str(err)) from None
    ks = [str(k) for k in results["samples"]]
    width = max((len(m) for m in results["methods"]), default=8)
    print(f"{results['n_functions']} functions, -Oz total {results['instcount_oz']} instructions; "
          "improvement over -Oz [%] (raw / with -Oz backup):")
    print(f"{'method':<{width}}  " + "  ".join(f"{'@' + k:>15}" for k in ks))
    for method, entry in results["methods"].items():
        cells = []
        for k in ks:
            s = entry["samples"][k]
            cells.append(f"{s['overall_improvement_pct']:+7.2f}/{s['oz_backup']['overall_improvement_pct']:+7.2f}")
        print(f"{method:<{width}}  " + "  ".join(f"{c:>15}" for c in cells))
    print(f"report: {Path(args.out) / 'REPORT.md'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    from llmopt.errors import UsageError

    parser = argparse.ArgumentParser(prog="python -m eval.cli")
    sub = parser.add_subparsers(dest="command")
    add_parser(sub)
    args = parser.parse_args(["eval", *(sys.argv[1:] if argv is None else argv)])
    try:
        return args.func(args)
    except UsageError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: finished work is kept; rerun the same command to resume", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
