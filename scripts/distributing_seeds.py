"""Seeds of random programs that have the move a label folder is meant to teach (issues 15, 16).

By default: programs where an interchange that distributes a loop is legal.

An interchange of adjacent loops first distributes the outer one when statements sit directly in it
beside the branch's inner loop (`llmopt.poly.schedule.distribute`: gemm's `C[i][j] *= beta` beside
its k loop).  A label folder meant to teach that move measures only programs that have it:

    python scripts/distributing_seeds.py --first-seed 400000 --programs 400 --iterations 1.5e7 1.5e8 \\
        --limit p_init=0.8 --limit p_reduction=0.6 --limit p_transpose=0.5 > data/poly-greedy-init/seeds.txt

With `--parallel-statements N` it keeps instead the programs where at least N statements may each
parallelize their outermost spatial loop (fdtd-2d's nest: every statement of a time loop parallel):

    python scripts/distributing_seeds.py --parallel-statements 3 --first-seed 500000 --programs 200 \\
        --iterations 1.5e7 1.5e8 --limit "computations=[3,4]" --limit "depth=[3,3]" --limit p_time=1.0 \\
        --limit p_share=1.0 --limit p_reduction=0.1 --limit p_transpose=0.5 > data/poly-greedy-par/seeds.txt

The limits and `--iterations` must be the folder's (`config.json`), so that a seed names the same program.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from llmopt.poly.costmodel.data import parse_limits  # noqa: E402
from llmopt.poly.generator import random_program  # noqa: E402
from llmopt.poly.legality import is_legal  # noqa: E402
from llmopt.poly.program import Program  # noqa: E402
from llmopt.poly.schedule import Interchange, Parallel, Schedule, ScheduleError, state  # noqa: E402


def distributing_interchanges(prog: Program) -> list[Interchange]:
    """The legal interchanges of `prog` that distribute a loop (some statement's position changes)."""
    before = state(prog, Schedule())
    found = []
    for name, st in before.items():
        for level in range(st.depth - 1):
            x = Interchange(name, level)
            try:
                after = state(prog, Schedule((x,)))
            except ScheduleError:
                continue
            if any(after[n].betas != before[n].betas for n in before) and is_legal(prog, Schedule((x,))):
                found.append(x)
    return found


def outer_parallel_statements(prog: Program) -> list[str]:
    """The statements of `prog` whose outermost spatial loop (past a time loop) may run in parallel."""
    found = []
    for st in prog.statements:
        level = 1 if st.iterators[0] == "t" else 0  # the generator names a time loop `t`
        if level < len(st.iterators) and is_legal(prog, Schedule((Parallel(st.name, level),))):
            found.append(st.name)
    return found


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--first-seed", type=int, required=True)
    p.add_argument("--programs", type=int, required=True)
    p.add_argument("--iterations", type=float, nargs=2, required=True, metavar=("LO", "HI"))
    p.add_argument("--limit", action="append", default=[], metavar="NAME=VALUE", help="as in llmopt.poly.costmodel.data")
    p.add_argument("--parallel-statements", type=int, default=0, metavar="N",
                   help="keep programs with >= N statements whose outermost spatial loop may run in parallel instead")
    args = p.parse_args(argv)
    limits = parse_limits(args.limit)
    hits = 0
    for seed in range(args.first_seed, args.first_seed + args.programs):
        prog = random_program(seed, iterations=tuple(args.iterations), **limits)
        if args.parallel_statements:
            keep = len(outer_parallel_statements(prog)) >= args.parallel_statements
        else:
            keep = bool(distributing_interchanges(prog))
        if keep:
            print(seed)
            hits += 1
    what = (f">= {args.parallel_statements} statements with a parallel outer loop" if args.parallel_statements
            else "a legal distributing interchange")
    print(f"{hits} of {args.programs} programs have {what}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
