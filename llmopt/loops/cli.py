"""`llmopt loops tune|bench|train|schedule|pearl-bench`: the loop-schedule path's command line.

The main CLI calls `add_parser(subparsers)`; `python -m llmopt.loops.cli ...` runs it alone.
`schedule` and `pearl-bench` (affine programs, Pearl) live in `llmopt.poly.cli`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from llmopt.cli_options import (
    add_cache_flags,
    add_json_flag,
    float_in,
    int_at_least,
    nonnegative_int,
    positive_int,
)
from llmopt.errors import UsageError, one_line
from llmopt.loops import DEFAULT_CANDIDATES, DEFAULT_POLICY, MAX_CANDIDATES

BENCH_OUT = "runs/loops-bench"  # the committed tables are regenerated with --out docs/results/loops
_search_seconds = float_in(0.0, 3600.0, what="seconds")
_n_test_shapes = int_at_least(1, 440)  # the test split of llmopt.loops.dataset
_n_train_shapes = int_at_least(1, 1757)


def _search_name(text: str) -> str:
    from llmopt.loops.search import SEARCHES

    if text not in SEARCHES:
        raise argparse.ArgumentTypeError(f"unknown search {text!r}; choose from {', '.join(SEARCHES)}")
    return text


def _search_names(text: str) -> list[str]:
    names = [_search_name(t) for t in text.replace(" ", "").split(",") if t]
    if not names:
        raise argparse.ArgumentTypeError("expected comma-separated search names")
    return names


def load_policy(path: str):
    """The trained policy at `path`, or a UsageError that says what is wrong with the file."""
    from llmopt.loops.policy import Policy

    p = Path(path)
    if not p.is_file():
        what = "is a directory" if p.is_dir() else "no such file"
        raise UsageError(f"--policy {path}: {what} (train one with `llmopt loops train`)")
    try:
        return Policy(p)
    except Exception as err:  # stable-baselines3 raises many kinds for a file that is not its zip
        raise UsageError(f"--policy {path}: not a policy saved by `llmopt loops train` ({one_line(err)})") from None


def _backend(args: argparse.Namespace):
    from llmopt.harness.cache import open_cache, scratch_cache
    from llmopt.loops.backend import Backend

    if args.no_cache:
        return Backend(scratch_cache())
    if args.cache:
        return Backend(open_cache(args.cache) or scratch_cache())
    return Backend()


def cmd_tune(args: argparse.Namespace) -> int:
    """Apply the policy to one matmul shape and print schedule + GFLOPS (or JSON)."""
    from llmopt.loops.tune import check_shape, tune

    if problem := check_shape(args.M, args.N, args.K):
        raise UsageError(problem)
    policy = load_policy(args.policy)
    backend = _backend(args)
    try:
        res = tune(args.M, args.N, args.K, policy, backend, args.search, args.search_seconds, args.candidates)
    finally:
        backend.close()
    if args.json:
        print(json.dumps(res))
        return 0
    print(f"matmul {args.M}x{args.N}x{args.K}")
    print(f"  schedule     {res['schedule']}")
    print(f"  actions      {' '.join(res['actions'])}")
    if res["candidates"] > 1:
        print(f"  candidate    #{res['candidate_rank'] + 1} of the policy's {res['candidates']} most confident")
    print(f"  GFLOPS       {res['gflops']:.2f}  (start {res['gflops_start']:.2f}, "
          f"x{res['gflops'] / max(res['gflops_start'], 1e-9):.2f})")
    print(f"  numpy 1-thr  {res['gflops_numpy']:.2f} GFLOPS  (kernel/numpy {res['gflops'] / res['gflops_numpy']:.2f})")
    print(f"  peak         {res['peak_gflops']:.2f} GFLOPS")
    print(f"  tuning time  {res['seconds']:.3f} s")
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    """Policy vs searches vs numpy on test shapes; writes a Markdown table and a plot."""
    from eval.loops_bench import run_bench
    from llmopt.outputs import check_output_dir

    out = check_output_dir(args.out)
    policy = load_policy(args.policy).path
    return run_bench(n_shapes=args.n_shapes, search_seconds=args.search_seconds, out_dir=out,
                     policy_path=policy, searches=args.searches,
                     refine=None if args.refine == "none" else args.refine, refine_seconds=args.refine_seconds,
                     candidates=args.candidates, workers=args.remeasure)


def cmd_train(args: argparse.Namespace) -> int:
    """Train (or resume) the MaskablePPO policy; copy it to --out when done."""
    import shutil

    from llmopt.loops.train import TrainConfig, train
    from llmopt.outputs import check_output_dir, check_output_file

    run_dir = check_output_dir(args.run_dir, "--run-dir")
    out = check_output_file(args.out, "--out") if args.out else None
    cfg = TrainConfig(n_shapes=args.n_shapes, total_steps=args.steps, minutes=args.minutes, n_envs=args.envs,
                      seed=args.seed)
    path = train(run_dir, cfg)
    if out is not None:
        shutil.copyfile(path, out)
        print(f"policy saved to {out}")
    return 0


def _add_tune(sub) -> None:
    p = sub.add_parser("tune", help="schedule C = A @ B (M x K times K x N) with the trained policy")
    p.add_argument("M", type=positive_int)
    p.add_argument("N", type=positive_int)
    p.add_argument("K", type=positive_int)
    p.add_argument("--policy", default=str(DEFAULT_POLICY), help="trained policy (.zip)")
    p.add_argument("--candidates", type=int_at_least(1, MAX_CANDIDATES), default=DEFAULT_CANDIDATES,
                   help="measure the policy's N most confident distinct schedules (Priority Sampling) and keep "
                        f"the fastest; 1 = greedy policy only (at most {MAX_CANDIDATES})")
    p.add_argument("--search", type=_search_name, default=None,
                   help="refine the policy's schedule with a search, e.g. greedy1")
    p.add_argument("--search-seconds", type=_search_seconds, default=1.0)
    add_json_flag(p)
    add_cache_flags(p)  # the kernel cache: default loops.sqlite next to results.sqlite
    p.set_defaults(func=cmd_tune)


def _add_bench(sub) -> None:
    p = sub.add_parser("bench", help="policy vs searches vs numpy on test shapes")
    p.add_argument("--n-shapes", type=_n_test_shapes, default=20, help="first N test shapes (seeded order)")
    p.add_argument("--search-seconds", type=_search_seconds, default=0.0,
                   help="time per search; 0 = the policy's own time (tuning + measuring its schedule)")
    p.add_argument("--searches", type=_search_names, default=None, help="comma-separated subset of searches")
    p.add_argument("--policy", default=str(DEFAULT_POLICY))
    p.add_argument("--candidates", type=int_at_least(0, MAX_CANDIDATES), default=DEFAULT_CANDIDATES,
                   help="also bench 'policy-top N' (N most confident schedules, fastest kept); 0 or 1 to skip")
    p.add_argument("--refine", type=lambda t: t if t == "none" else _search_name(t), default="greedy1",
                   help="also bench policy + this search ('none' to skip)")
    p.add_argument("--remeasure", type=int_at_least(1, 16), default=3,
                   help="re-measure final schedules in this many fresh processes, report medians (default 3)")
    p.add_argument("--refine-seconds", type=_search_seconds, default=1.0)
    p.add_argument("--out", default=BENCH_OUT,
                   help=f"output folder (default {BENCH_OUT}; the committed results: --out docs/results/loops)")
    p.set_defaults(func=cmd_bench)


def _add_train(sub) -> None:
    p = sub.add_parser("train", help="train (resumably) the MaskablePPO policy")
    p.add_argument("--run-dir", default="runs/loops")
    p.add_argument("--n-shapes", type=_n_train_shapes, default=64)
    p.add_argument("--steps", type=positive_int, default=30_000)
    p.add_argument("--minutes", type=float_in(0.0, low_open=True, what="minutes"), default=35.0,
                   help="wall-clock budget in minutes")
    p.add_argument("--envs", type=int_at_least(1, 64), default=2)
    p.add_argument("--seed", type=nonnegative_int, default=0)
    p.add_argument("--out", default=None, help="copy the final policy here (e.g. llmopt/loops/data/policy.zip)")
    p.set_defaults(func=cmd_train)


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register `loops` with sub-commands `tune`, `bench`, `train` (LoopTune) and `schedule`,
    `pearl-bench` (affine programs, `llmopt.poly.cli`) on an argparse subparsers object."""
    from llmopt.poly.cli import add_parsers as add_poly_parsers

    loops = subparsers.add_parser("loops", help="schedule loop nests: LoopTune (tensor nests) and Pearl "
                                  "(affine programs), RL policies + searches")
    sub = loops.add_subparsers(dest="loops_command", required=True)
    _add_tune(sub)
    _add_bench(sub)
    _add_train(sub)
    add_poly_parsers(sub)
    return loops


def main(argv: list[str] | None = None) -> int:
    """`python -m llmopt.loops.cli ARGS` = `llmopt loops ARGS`: the same options and error contract."""
    from llmopt.cli import main as llmopt_main

    return llmopt_main(["loops", *(argv if argv is not None else sys.argv[1:])])


if __name__ == "__main__":
    sys.exit(main())
