"""A policy's greedy walks scored on search-labelled programs without running anything: a validation
signal for imitation runs that does not spend the benchmarks (which are never trained on, and which
choosing among runs would turn into a training signal).

Each program of the data (`llmopt.poly.costmodel.data` rows, e.g. data/poly-greedy) is walked
greedily by the policy; when the schedule it ends on was measured in the data (a greedy search
measured every candidate one action beyond its path, so a walk that follows the search or leaves
it by one action usually was), its measured speedup counts; `--measure` times the others as the
data was timed (`Measurer.paired`, 5 rounds, busy-machine guard on; run it on a quiet machine), so
every walk counts and "covered" is 1.  Reported separately for the programs
`imitate` trained on and those it held out (same split: `--validation`, `--split-seed`), and with
`--trained SPEC` for every program the policy never saw ("unseen": held out, or past SPEC's `:N`):

- covered: the share of walks whose schedule was measured;
- speedup: geometric mean of the walk's measured speedup, over the covered programs;
- of best: geometric mean of walk speedup / the program's best measured speedup, covered programs;
- identity: the share of walks that changed nothing.

    python scripts/agent_offline.py runs/pearl-imitate/checkpoint.pt data/poly-greedy [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from llmopt.harness.cache import scratch_cache  # noqa: E402
from llmopt.poly.agent.imitate import ImitateConfig, split, teaching_programs  # noqa: E402
from llmopt.poly.agent.policy import AgentPolicy  # noqa: E402
from llmopt.poly.costmodel.data import load_folders  # noqa: E402
from llmopt.poly.measure import Measurer, machine_id  # noqa: E402
from llmopt.poly.program import program_from_dict  # noqa: E402
from llmopt.poly.schedule import Schedule  # noqa: E402


def _geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(max(x, 1e-9)) for x in xs) / len(xs)) if xs else float("nan")


def score(policy: AgentPolicy, programs: dict[str, list[dict]], measurer: Measurer, measure: bool = False) -> dict:
    walks, bests, identity = [], [], 0
    for rows in programs.values():
        prog = program_from_dict(rows[0]["program"])
        measured = {json.dumps(Schedule.from_list(r["schedule"]).key()): r["speedup"] for r in rows}
        sched = policy.schedule(prog, measurer)
        identity += not sched.transforms
        got = measured.get(json.dumps(sched.key()))
        if got is None and measure:
            timed = measurer.paired(prog, sched, rounds=5)
            got = timed["speedup"] if timed["ok"] else 0.0  # a walk whose program fails is a loss
        if got is not None:
            walks.append(got)
            bests.append(got / max(measured.values()))
    n = len(programs)
    return {"programs": n, "covered": len(walks) / n if n else float("nan"), "speedup": _geomean(walks),
            "of_best": _geomean(bests), "identity": identity / n if n else float("nan")}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("policy")
    p.add_argument("data", help="cost-model data folder(s) with search labels, comma-separated (e.g. data/poly-greedy)")
    p.add_argument("--validation", type=float, default=ImitateConfig.validation)
    p.add_argument("--split-seed", type=int, default=ImitateConfig.split_seed)
    p.add_argument("--min-gain", type=float, default=ImitateConfig.min_gain)
    p.add_argument("--measure", action="store_true", help="time the walks the data did not measure")
    p.add_argument("--parts", default="train,validation",
                   help="which programs, comma-separated: train, validation, unseen (needs --trained)")
    p.add_argument("--trained", metavar="SPEC",
                   help="the data spec the policy was trained on (e.g. data/poly-greedy:266): 'unseen' is then the "
                        "validation programs plus every program of DATA outside SPEC")
    p.add_argument("--out", help="JSON results file")
    args = p.parse_args()
    by_program = teaching_programs(load_folders(args.data), args.min_gain)  # imitate's programs, split as it does
    train, val = split(list(by_program), args.validation, args.split_seed)
    first = Path(args.data.split(",")[0])  # the folders' timing settings are alike (their config.json)
    config = json.loads((first / "config.json").read_text()) if first.is_dir() else {}
    policy = AgentPolicy(args.policy)
    measurer = Measurer(scratch_cache(), repeats=config.get("repeats", 5), threads=config.get("threads", 2), quiet=0.15)
    parts = {"train": train, "validation": val}
    if args.trained:
        seen = {r["hash"] for r in load_folders(args.trained)}
        parts["unseen"] = sorted(set(val) | (set(by_program) - seen))
    result = {"policy": args.policy, "data": args.data, "measured": args.measure, "machine": machine_id()}
    for part in args.parts.split(","):
        result[part] = score(policy, {h: by_program[h] for h in parts[part]}, measurer, args.measure)
    measurer.close()
    for part in args.parts.split(","):
        r = result[part]
        print(f"{part:10s} {r['programs']:4d} programs  covered {r['covered']:.2f}  speedup {r['speedup']:.3f}x  "
              f"of best {r['of_best']:.3f}  identity {r['identity']:.2f}")
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
