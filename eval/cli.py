"""`llmopt eval` (and `python -m eval.cli`): batch evaluation vs -Oz with tables, plots and a report.

    llmopt eval --dataset data/DS:test --limit 500 --methods model,baselines --samples 1,3,5,10,30,100 --out runs/e
    llmopt eval --dataset examples --methods random,oz --samples 1,10 --out runs/ll   # .ll files, no labels
    llmopt eval --report-only --out runs/e   # tables, plots and REPORT.md again from runs/e/results.json
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from llmopt.cli_options import (
    MAX_SAMPLES,
    add_cache_flags,
    add_metric_flag,
    add_progress_flag,
    add_workers_flag,
    cache_choice,
    nonnegative_int,
    positive_int,
    samples_int,
    temperature_float,
    top_p_float,
)


def _ints(text: str) -> list[int]:
    values = [samples_int(x) for x in text.replace(" ", "").split(",") if x]
    if not values:
        raise argparse.ArgumentTypeError(f"expected comma-separated sample budgets such as 1,3,10, got {text!r}")
    return values


def _temperatures(text: str) -> list[float]:
    return [temperature_float(x) for x in text.replace(" ", "").split(",") if x]


def _methods(text: str) -> list[str]:
    return [m for m in text.replace(" ", ",").split(",") if m]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register the `eval` subcommand; its `func(args) -> int` runs the evaluation."""
    from eval.methods import DEFAULT_METHODS
    from eval.runner import DEFAULT_SAMPLES
    from llmopt.sampling.config import DEFAULTS, PREFILL_DTYPES

    p = subparsers.add_parser("eval", help="batch evaluation against -Oz: sampling curves, tables, plots, report",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dataset", default=None,
                   help="PATH[:split] of a datagen dataset (default split: test), a directory of .ll files, or a .ll "
                        "(required unless --report-only)")
    p.add_argument("--out", required=True, help="output directory (resumable: a rerun skips finished work)")
    p.add_argument("--report-only", action="store_true",
                   help="only write the tables, plots and REPORT.md of --out again from its results.json (stored "
                        "numbers; nothing is sampled or compiled; the other options are ignored)")
    p.add_argument("--methods", type=_methods, default=list(DEFAULT_METHODS),
                   help="comma list: greedy, nucleus[_tT], priority[_noregex|_geomean|_nooz|_lists|_branchN...], feedback[_fast|"
                        "_short|_long], random, coreset, coreset_cover, greedy_search, autotuner, oz; groups: model, "
                        f"baselines, ablations (default: {','.join(DEFAULT_METHODS)})")
    p.add_argument("--samples", type=_ints, default=list(DEFAULT_SAMPLES),
                   help=f"sample budgets k, each in [1, {MAX_SAMPLES}] (default 1,3,5,10,30,100)")
    add_metric_flag(p, "instcount", "the methods (and the report)")
    p.add_argument("--limit", type=positive_int, default=None, help="evaluate a seeded random subset of N functions")
    p.add_argument("--model", default=None, help="model directory (default: the shipped model); several joined by commas decode as one ensemble")
    p.add_argument("--train-dataset", default=None,
                   help="PATH[:split] whose pass lists make the coreset (default: the eval dataset's train split)")
    p.add_argument("--seed", type=nonnegative_int, default=0)
    p.add_argument("--temperature", type=temperature_float, default=DEFAULTS.temperature,
                   help=f"temperature of `nucleus` (default {DEFAULTS.temperature})")
    p.add_argument("--temperatures", type=_temperatures, default=[],
                   help="extra nucleus sweep, e.g. 0.8,1.2,1.6 (adds methods nucleus_tT)")
    p.add_argument("--top-p", type=top_p_float, default=DEFAULTS.top_p,
                   help=f"nucleus top-p in (0, 1] (default {DEFAULTS.top_p})")
    p.add_argument("--feedback-rounds", type=nonnegative_int, default=2)
    p.add_argument("--greedy-search-budget", type=positive_int, default=300,
                   help="compilations per function for greedy_search")
    p.add_argument("--coreset-candidates", type=positive_int, default=100, help="lists ranked by coreset_cover")
    p.add_argument("--coreset-train", type=positive_int, default=300, help="training functions coreset_cover compiles on")
    p.add_argument("--list-vocabulary", default=None, metavar="FILE",
                   help="the lists priority_lists ranks (JSON; default: coreset_cover's candidates)")
    p.add_argument("--quality-limit", type=nonnegative_int, default=0,
                   help="decode full answers (with optimized IR) on N functions for code-quality metrics")
    p.add_argument("--quality-max-new-tokens", type=positive_int, default=2048)
    p.add_argument("--no-objsize", action="store_true", help="skip object sizes of the chosen lists")
    add_workers_flag(p, None)
    p.add_argument("--threads", type=positive_int, default=None, help="torch threads for the model")
    p.add_argument("--prefill-dtype", choices=PREFILL_DTYPES, default="float32",
                   help="encode prompts in bfloat16, float32 (default) or auto (as `llmopt predict`)")
    p.add_argument("--max-passes", type=positive_int, default=DEFAULTS.max_passes,
                   help="longest pass list the model may generate")
    add_cache_flags(p)
    p.add_argument("--chunk", type=positive_int, default=16, help="functions per resumable chunk")
    add_progress_flag(p)
    p.add_argument("--quiet", dest="no_progress", action="store_true", help=argparse.SUPPRESS)  # old spelling
    p.set_defaults(func=handler)
    return p


def handler(args: argparse.Namespace) -> int:
    from eval.methods import MethodOptions
    from eval.runner import EvalConfig, run_eval
    from llmopt.errors import UsageError

    out = Path(args.out)
    if args.report_only:
        from eval.report import rewrite

        return _print_summary(rewrite(out), out)
    if args.dataset is None:
        raise UsageError("--dataset is required (unless --report-only)")
    methods = list(args.methods) + [f"nucleus_t{t:g}" for t in args.temperatures]
    options = MethodOptions(seed=args.seed, model=args.model, temperature=args.temperature, top_p=args.top_p,
                            greedy_search_budget=args.greedy_search_budget, coreset_candidates=args.coreset_candidates,
                            coreset_train=args.coreset_train, feedback_rounds=args.feedback_rounds,
                            threads=args.threads, max_passes=args.max_passes, metric=args.metric,
                            list_vocabulary=args.list_vocabulary, prefill_dtype=args.prefill_dtype)
    cfg = EvalConfig(dataset=args.dataset, out=out, methods=methods, samples=args.samples,
                     limit=args.limit, seed=args.seed, train_dataset=args.train_dataset, options=options,
                     quality_limit=args.quality_limit, quality_max_new_tokens=args.quality_max_new_tokens,
                     objsize=not args.no_objsize, workers=args.workers, cache=cache_choice(args), chunk=args.chunk,
                     progress=not args.no_progress, metric=args.metric)
    return _print_summary(run_eval(cfg), out)


def _print_summary(results: dict, out: Path) -> int:
    """The improvement table on stdout and where the report is."""
    ks = [str(k) for k in results["samples"]]
    width = max((len(m) for m in results["methods"]), default=8)
    # results.json from before --metric has neither field: it counted instructions
    print(f"{results['n_functions']} functions, -Oz total {results['instcount_oz']} "
          f"{results.get('unit', 'instructions')}; improvement over -Oz in {results.get('metric', 'instcount')} [%] "
          "(raw / with -Oz backup):")
    print(f"{'method':<{width}}  " + "  ".join(f"{'@' + k:>15}" for k in ks))
    for method, entry in results["methods"].items():
        cells = []
        for k in ks:
            s = entry["samples"][k]
            cells.append(f"{s['overall_improvement_pct']:+7.2f}/{s['oz_backup']['overall_improvement_pct']:+7.2f}")
        print(f"{method:<{width}}  " + "  ".join(f"{c:>15}" for c in cells))
    print(f"report: {out / 'REPORT.md'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """`python -m eval.cli ARGS` = `llmopt eval ARGS`: the same options and error contract."""
    from llmopt.cli import main as llmopt_main

    return llmopt_main(["eval", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
