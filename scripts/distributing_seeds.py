"""Seeds of random programs where an interchange that distributes a loop is legal (issue 15).

An interchange of adjacent loops first distributes the outer one when statements sit directly in it
beside the branch's inner loop (`llmopt.poly.schedule.distribute`: gemm's `C[i][j] *= beta` beside
its k loop).  A label folder meant to teach that move measures only programs that have it:

    python scripts/distributing_seeds.py --first-seed 400000 --programs 400 --iterations 1.5e7 1.5e8 \\
        --limit p_init=0.8 --limit p_reduction=0.6 --limit p_transpose=0.5 > data/poly-greedy-init/seeds.txt

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
from llmopt.poly.schedule import Interchange, Schedule, ScheduleError, state  # noqa: E402


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


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--first-seed", type=int, required=True)
    p.add_argument("--programs", type=int, required=True)
    p.add_argument("--iterations", type=float, nargs=2, required=True, metavar=("LO", "HI"))
    p.add_argument("--limit", action="append", default=[], metavar="NAME=VALUE", help="as in llmopt.poly.costmodel.data")
    args = p.parse_args(argv)
    limits = parse_limits(args.limit)
    hits = 0
    for seed in range(args.first_seed, args.first_seed + args.programs):
        if distributing_interchanges(random_program(seed, iterations=tuple(args.iterations), **limits)):
            print(seed)
            hits += 1
    print(f"{hits} of {args.programs} programs have a legal distributing interchange", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
