"""`llmopt loops tune|bench|train`: the loop-schedule path's command line.

The main CLI calls `add_parser(subparsers)`; `python -m llmopt.loops.cli ...` runs it alone.
"""

from __future__ import annotations

import argparse
import json
import sys

from llmopt.loops.agent import DEFAULT_POLICY
from llmopt.loops.tune import DEFAULT_CANDIDATES


def _fail(msg: str) -> int:
    print(f"error: {msg}", file=sys.stderr)
    return 2


def cmd_tune(args: argparse.Namespace) -> int:
    """Apply the policy to one matmul shape and print schedule + GFLOPS (or JSON)."""
    from llmopt.loops.agent import Policy
    from llmopt.loops.backend import Backend
    from llmopt.loops.search import SEARCHES
    from llmopt.loops.tune import tune

    if min(args.M, args.N, args.K) < 1:
        return _fail("M, N and K must be positive integers, e.g. `llmopt loops tune 128 128 128`")
    if args.candidates < 1:
        return _fail("--candidates must be >= 1 (1 = the greedy policy alone, no measurement)")
    if args.search and args.search not in SEARCHES:
        return _fail(f"unknown search {args.search!r}; choose from {', '.join(SEARCHES)}")
    try:
        policy = Policy(args.policy)
    except FileNotFoundError as err:
        return _fail(str(err))
    backend = Backend()
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
    from llmopt.loops.bench import run_bench

    return run_bench(n_shapes=args.n_shapes, search_seconds=args.search_seconds, out_dir=args.out,
                     policy_path=args.policy, searches=args.searches.split(",") if args.searches else None,
                     refine=None if args.refine == "none" else args.refine, refine_seconds=args.refine_seconds,
                     candidates=args.candidates, workers=args.workers)


def cmd_train(args: argparse.Namespace) -> int:
    """Train (or resume) the MaskablePPO policy; copy it to --out when done."""
    import shutil

    from llmopt.loops.agent import TrainConfig, train

    cfg = TrainConfig(n_shapes=args.n_shapes, total_steps=args.steps, minutes=args.minutes, n_envs=args.envs,
                      seed=args.seed)
    path = train(args.run_dir, cfg)
    if args.out:
        shutil.copyfile(path, args.out)
        print(f"policy saved to {args.out}")
    return 0


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register `loops` with sub-commands `tune`, `bench`, `train` on an argparse subparsers object."""
    loops = subparsers.add_parser("loops", help="schedule tensor loop nests with LoopTune (RL policy + searches)")
    sub = loops.add_subparsers(dest="loops_command", required=True)

    p = sub.add_parser("tune", help="schedule C = A @ B (M x K times K x N) with the trained policy")
    p.add_argument("M", type=int)
    p.add_argument("N", type=int)
    p.add_argument("K", type=int)
    p.add_argument("--policy", default=str(DEFAULT_POLICY), help="trained policy (.zip)")
    p.add_argument("--candidates", type=int, default=DEFAULT_CANDIDATES,
                   help="measure the policy's N most confident distinct schedules (Priority Sampling) and keep "
                        "the fastest; 1 = greedy policy only")
    p.add_argument("--search", default=None, help="refine the policy's schedule with a search, e.g. greedy1")
    p.add_argument("--search-seconds", type=float, default=1.0)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_tune)

    p = sub.add_parser("bench", help="policy vs searches vs numpy on test shapes")
    p.add_argument("--n-shapes", type=int, default=20, help="first N test shapes (seeded order)")
    p.add_argument("--search-seconds", type=float, default=0.0,
                   help="time per search; 0 = the policy's own time (tuning + measuring its schedule)")
    p.add_argument("--searches", default=None, help="comma-separated subset of searches")
    p.add_argument("--policy", default=str(DEFAULT_POLICY))
    p.add_argument("--candidates", type=int, default=DEFAULT_CANDIDATES,
                   help="also bench 'policy-top N' (N most confident schedules, fastest kept); 0 or 1 to skip")
    p.add_argument("--refine", default="greedy1", help="also bench policy + this search ('none' to skip)")
    p.add_argument("--workers", type=int, default=3,
                   help="re-measure final schedules in this many fresh processes, report medians")
    p.add_argument("--refine-seconds", type=float, default=1.0)
    p.add_argument("--out", default="docs/results/loops")
    p.set_defaults(func=cmd_bench)

    p = sub.add_parser("train", help="train (resumably) the MaskablePPO policy")
    p.add_argument("--run-dir", default="runs/loops")
    p.add_argument("--n-shapes", type=int, default=64)
    p.add_argument("--steps", type=int, default=30_000)
    p.add_argument("--minutes", type=float, default=35.0)
    p.add_argument("--envs", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=None, help="copy the final policy here (e.g. llmopt/loops/data/policy.zip)")
    p.set_defaults(func=cmd_train)
    return loops


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="llmopt")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["loops", *(argv if argv is not None else sys.argv[1:])])
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
