"""`llmopt loops schedule PROGRAM` and `llmopt loops pearl-bench`: the affine-program path's commands.

`llmopt.loops.cli.add_parser` calls `add_parsers(sub)`, so both live under `llmopt loops` beside
LoopTune's `tune`, `bench`, `train`.  Nothing heavy (islpy, clang) is imported until a command runs.

`schedule` searches a schedule for one program (a benchmark name of `llmopt.poly.benchmarks.NAMES`
or a program file, format in `llmopt.poly.program`), prints it in Pearl's notation with the speedup
over the untransformed program at -O3 and Polly's, and writes the scheduled C with `-o`.  `--json`
prints one object: `schedule` (Pearl's notation), `transforms` (the JSON form, for
`Schedule.from_list`), `speedup`, `speedup_polly` (null when Polly's build fails or is wrong),
`speedup_o3` (1.0: the untransformed -O3 program is what speedups divide), `seconds` (wall time of
the search), `run_seconds` (the schedule's run time), `baseline_seconds`, `polly_seconds`,
`evaluations`, `search`.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from llmopt.cli_options import add_cache_flags, add_json_flag, cache_choice, float_in, int_at_least
from llmopt.errors import UsageError

BENCH_OUT = "runs/pearl-bench"  # the committed results: --out docs/results/pearl
SCHEDULE_BUDGET = 30.0  # seconds: a quick answer; the bench gives beam search more
BENCH_BUDGET = 300.0
_budget = float_in(0.0, 86400.0, low_open=True, what="seconds")


def _search_name(text: str) -> str:
    from llmopt.poly.search import SEARCHES

    if text not in SEARCHES:
        raise argparse.ArgumentTypeError(f"unknown search {text!r}; choose from {', '.join(SEARCHES)}")
    return text


def _benchmark_names(text: str) -> list[str]:
    from llmopt.poly.benchmarks import NAMES

    names = [t for t in text.replace(" ", "").split(",") if t]
    bad = [n for n in names if n not in NAMES]
    if bad or not names:
        what = ", ".join(map(repr, bad)) or repr(text)
        raise argparse.ArgumentTypeError(f"unknown benchmark {what}; choose from {', '.join(NAMES)}")
    return names


def load_program_arg(text: str, small: bool):
    """PROGRAM: a benchmark name (at its measured or `small` size) or a program file, bounds checked."""
    from llmopt.poly.benchmarks import NAMES, benchmark
    from llmopt.poly.polyhedral import check_bounds
    from llmopt.poly.program import load_program

    if text in NAMES:
        return benchmark(text, small)
    if not Path(text).exists():
        raise UsageError(f"PROGRAM {text!r}: not a benchmark ({', '.join(NAMES)}) nor a program file")
    if small:
        raise UsageError("--small picks the test size of a benchmark; a program file has its own sizes (params)")
    prog = load_program(text)
    check_bounds(prog)
    return prog


def make_measurer(args: argparse.Namespace):
    """A Measurer on the cache that --cache / --no-cache choose (default: poly.sqlite in the cache folder)."""
    from llmopt.harness.cache import open_cache, scratch_cache
    from llmopt.poly.measure import Measurer

    choice = cache_choice(args)
    cache = None if choice is True else scratch_cache() if choice is False else open_cache(choice) or scratch_cache()
    return Measurer(cache, repeats=args.repeats, threads=args.threads)


def _search_options(args: argparse.Namespace) -> dict:
    options = {"budget_seconds": args.budget_seconds}
    if args.search in ("beam", "greedy", "beam-model", "beam-model-agent", "mcts-model") and args.depth is not None:
        options["depth"] = args.depth
    if args.search in ("beam", "beam-model", "beam-model-agent") and args.width is not None:
        options["width"] = args.width
    if args.search in ("beam-model", "beam-model-agent", "mcts-model") and getattr(args, "cost_model", None):
        options["model_path"] = args.cost_model
    if args.search in ("agent", "beam-model-agent") and getattr(args, "policy", None):
        options["policy_path"] = args.policy
    return options


def schedule_program(prog, measurer, search: str, options: dict, log=None) -> tuple[dict, object]:
    """Run `search` on `prog`; (the documented JSON result, the SearchResult)."""
    from llmopt.poly.search import SEARCHES

    t0 = time.monotonic()
    res = SEARCHES[search](prog, measurer, log=log, **options)
    seconds = time.monotonic() - t0
    polly = measurer.baseline_polly(prog)
    out = {"program": prog.name, "params": prog.params, "search": search, **res.to_dict(), "seconds": seconds,
           "run_seconds": res.seconds, "speedup_o3": 1.0,
           "speedup_polly": res.baseline_seconds / polly["seconds"] if polly.get("ok") else None,
           "polly_seconds": polly.get("seconds"), "polly_error": polly.get("error")}
    for key in ("trace", "search_seconds"):
        out.pop(key)
    return out, res


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.4g} ms"


def times(x: float) -> str:
    """A speedup as text: 2 decimals, or 2 significant digits below 0.01x."""
    return f"{x:.2f}x" if x >= 0.01 else f"{x:.2g}x"


def _print_text(out: dict) -> None:
    sizes = ", ".join(f"{k}={v}" for k, v in out["params"].items())
    polly = (f"{times(out['speedup_polly'])}  ({_ms(out['polly_seconds'])})" if out["speedup_polly"] is not None
             else f"failed ({out['polly_error']})")
    print(f"program    {out['program']} ({sizes})")
    print(f"schedule   {out['schedule']}")
    print(f"speedup    {times(out['speedup'])}  ({_ms(out['baseline_seconds'])} -> {_ms(out['run_seconds'])})")
    print(f"polly      {polly}")
    print("-O3        1.00x  (the untransformed program, what every speedup divides)")
    print(f"search     {out['search']}: {out['evaluations']} schedules measured in {out['seconds']:.1f} s")


def cmd_schedule(args: argparse.Namespace) -> int:
    """Search a schedule for PROGRAM; print it (text or JSON), write its C with -o."""
    import sys

    from llmopt.outputs import check_output_file
    from llmopt.poly.emit import program_c

    output = check_output_file(args.output, "-o") if args.output else None
    prog = load_program_arg(args.program, args.small)
    measurer = make_measurer(args)
    log = None if args.json else (lambda msg: print(msg, file=sys.stderr))
    try:
        out, res = schedule_program(prog, measurer, args.search, _search_options(args), log)
    finally:
        measurer.close()
    if output is not None:
        output.write_text(program_c(prog, res.schedule))
    if args.json:
        print(json.dumps(out))
    else:
        _print_text(out)
        if output is not None:
            print(f"C          {output}")
    return 0


def cmd_pearl_bench(args: argparse.Namespace) -> int:
    """Beam search vs Polly vs -O3 (vs the agent, given a policy) on the benchmarks; table + chart."""
    from eval.pearl_bench import BenchConfig, run_bench
    from llmopt.outputs import check_output_dir

    out = check_output_dir(args.out)
    cfg = BenchConfig(names=args.benchmarks, budget_seconds=args.budget_seconds, width=args.width,
                      depth=args.depth, repeats=args.repeats, threads=args.threads, small=args.small,
                      policy=args.policy, quiet=args.quiet_cores if args.quiet_cores >= 0 else None)
    run_bench(cfg, out)
    return 0


def _add_common(p: argparse.ArgumentParser, budget: float) -> None:
    p.add_argument("--budget-seconds", type=_budget, default=budget,
                   help=f"time budget of the search in seconds (default {budget:g})")
    # None: the search's own default (llmopt.poly.search.DEFAULT_WIDTH / DEFAULT_DEPTH, 4 and 4); not
    # imported here because building the parser must not load islpy.
    p.add_argument("--width", type=int_at_least(1, 64), default=None, help="beam width (default 4)")
    p.add_argument("--depth", type=int_at_least(1, 16), default=None, help="actions per schedule, at most (default 4)")
    p.add_argument("--repeats", type=int_at_least(1, 1000), default=30,
                   help="timed runs per program; the minimum is reported (default 30)")
    p.add_argument("--threads", type=int_at_least(1, 256), default=2, help="OpenMP threads (default 2)")
    p.add_argument("--small", action="store_true", help="benchmarks at their test sizes (microseconds)")


def _add_schedule(sub) -> None:
    p = sub.add_parser("schedule", help="schedule an affine program (Pearl's actions) and report its speedup")
    p.add_argument("program", metavar="PROGRAM",
                   help="a benchmark name (blur, heat2d, gemm, ...) or a program JSON file (llmopt/poly/program.py)")
    p.add_argument("--search", type=_search_name, default="beam",
                   help="search: beam (default), greedy, beam-model (beam search scored by the cost model), "
                        "beam-model-agent (the same, the agent's schedule verified too), mcts-model (MCTS scored "
                        "by the cost model) or agent (the trained Pearl agent's schedule)")
    p.add_argument("--cost-model", metavar="PATH", default=None,
                   help="cost model of --search beam-model / beam-model-agent / mcts-model "
                        "(default llmopt/poly/data/costmodel.pt)")
    p.add_argument("--policy", metavar="PATH", default=None,
                   help="agent of --search agent / beam-model-agent: a training checkpoint "
                        "(default llmopt/poly/data/agent.pt)")
    p.add_argument("-o", "--output", help="write the scheduled program's C here")
    _add_common(p, SCHEDULE_BUDGET)
    add_json_flag(p)
    add_cache_flags(p)  # the timing cache: default poly.sqlite next to results.sqlite
    p.set_defaults(func=cmd_schedule)


def _add_bench(sub) -> None:
    p = sub.add_parser("pearl-bench", help="beam search vs Polly vs -O3 (vs the agent) on the affine benchmarks")
    p.add_argument("--benchmarks", type=_benchmark_names, default=None,
                   help="comma-separated subset of the benchmarks (default all 13)")
    p.add_argument("--out", default=BENCH_OUT,
                   help=f"output folder (default {BENCH_OUT}; the committed results: --out docs/results/pearl)")
    p.add_argument("--policy", metavar="PATH", default=None,
                   help="the agent's policy for its column (default llmopt/poly/data/agent.pt; n/a without one)")
    p.add_argument("--quiet-cores", type=float, default=0.15, metavar="C",
                   help="retake a timed run during which other processes used more than C cores, once the "
                        "machine is quiet (default 0.15; -1: off)")
    _add_common(p, BENCH_BUDGET)
    p.set_defaults(func=cmd_pearl_bench)


def add_parsers(sub) -> None:
    """Register `schedule` and `pearl-bench` on `llmopt loops`' subparsers."""
    _add_schedule(sub)
    _add_bench(sub)
