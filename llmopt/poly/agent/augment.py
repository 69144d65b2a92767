"""More interchange lessons from the same measurements: relabel a program as its own interchange.

The search labels teach interchange badly (docs/results/pearl/critic/): most measured interchanges
break a unit stride and run slower, so every policy trained here learned "interchange is a
slowdown".  But a measured
slowdown is also a measured speedup of the *other* program: when `x = I(a, b)` makes program P run
s times as fast, the program P' whose source has those loops already swapped (`interchanged`) runs
as P does under `x`, and undoing `x` on P' runs 1/s times as fast.  Every measured schedule `sigma`
of P is one of P' too: P' under `tau` runs exactly as P under `sigma` whenever the two replayed
schedules agree (`state(P', tau) == state(P, sigma)`; `tau` is `sigma` with `x` dropped from its
front, or with `x` put before `sigma`'s first step on that branch), so its speedup is
`s(sigma) / s(x)`.  No new run is needed, and the rows of P' are checked, not assumed: a schedule
whose replayed state differs is left out.

P' is P in disguise, so the rows keep P's hash as `origin` and `imitate.split` keeps a family on
one side of the train/validation split.  Measured (docs/results/pearl/augment/): a large gain on
unseen random programs, a loss on the hand-written benchmarks; off by default (`imitate --augment 0`).
"""

from __future__ import annotations

import math
from collections import defaultdict

from llmopt.errors import LlmoptError
from llmopt.poly.agent.walk import walk_actions
from llmopt.poly.program import Program, program_from_dict
from llmopt.poly.schedule import Interchange, Schedule, ScheduleError, state, subtree, transform_from_dict


def interchanged(prog: Program, x: Interchange) -> Program | None:
    """P with `x` done in its source (the iterators of every statement under the loop swapped), or
    None when that program's original order is not the state `x` leaves P in."""
    lo, hi = sorted((x.level, x.level + 1 if x.other < 0 else x.other))
    try:
        target = state(prog, Schedule((x,)))
        names = set(subtree(state(prog, Schedule()), x.stmt, lo))
    except ScheduleError:
        return None
    spec = prog.to_dict()
    for s in spec["statements"]:
        if s["name"] in names and len(s["iterators"]) > hi:  # a shorter one only moves (schedule.distribute)
            its = s["iterators"]
            its[lo], its[hi] = its[hi], its[lo]
    try:
        swapped = program_from_dict(spec)
    except LlmoptError:
        return None
    return swapped if state(swapped, Schedule()) == target else None


def equivalent_schedule(prog: Program, swapped: Program, x: Interchange, sigma: Schedule) -> Schedule | None:
    """A walk `tau` of `swapped` (= interchanged(prog, x)) that replays to what `sigma` does to
    `prog`, or None (module docstring)."""
    steps = list(sigma.transforms)
    options = []
    if x in steps:
        i = steps.index(x)
        options.append(steps[:i] + steps[i + 1:])
    on_branch = [i for i, t in enumerate(steps) if t.stmt == x.stmt]
    first = on_branch[0] if on_branch else _first_after(swapped, x, steps)
    options.append(steps[:first] + [x] + steps[first:])
    try:
        want = state(prog, sigma)
    except ScheduleError:
        return None
    for option in options:
        tau = Schedule(tuple(option))
        try:
            if walk_actions(swapped, tau) is not None and state(swapped, tau) == want:
                return tau
        except ScheduleError:
            continue
    return None


def _first_after(prog: Program, x: Interchange, steps: list) -> int:
    """Where `x` goes in a walk that has no step on its branch: before the first step on a later
    statement (walks visit branches in program order)."""
    order = [s.name for s in prog.statements]
    mine = order.index(x.stmt)
    return next((i for i, t in enumerate(steps) if order.index(t.stmt) > mine), len(steps))


def relabelled_rows(rows: list[dict], x_row: dict) -> list[dict]:
    """The rows of P' = P with `x_row`'s single interchange done in its source (module docstring);
    [] when that program cannot be built."""
    prog = program_from_dict(rows[0]["program"])
    x = transform_from_dict(x_row["schedule"][0])
    swapped = interchanged(prog, x)
    if swapped is None:
        return []
    base, h, spec = x_row["speedup"], swapped.hash(), swapped.to_dict()
    # the original of P' is P under x, so its time is x's (what an anchored cost model's absolute target reads)
    original = {"baseline_seconds": x_row["seconds"]} if "seconds" in x_row else {}
    out = []
    for r in rows:
        tau = equivalent_schedule(prog, swapped, x, Schedule.from_list(r["schedule"]))
        if tau is not None:
            out.append({**r, "hash": h, "program": spec, "schedule": tau.to_list(),
                        "speedup": r["speedup"] / base, "origin": r.get("origin", r["hash"]), **original})
    return out


def augment(rows: list[dict], per_program: int = 2) -> list[dict]:
    """`rows` plus the relabelled rows of up to `per_program` interchanges of each program: those
    measured alone (a one-step schedule), the ones whose speedup is furthest from 1 first."""
    by_program: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by_program[r["hash"]].append(r)
    extra: list[dict] = []
    for walks in by_program.values():
        singles = [r for r in walks if len(r["schedule"]) == 1 and r["schedule"][0]["kind"] == "interchange"
                   and r["speedup"] > 0]
        singles.sort(key=lambda r: -abs(math.log(r["speedup"])))
        made = 0
        for x_row in singles:
            if made >= per_program:
                break
            new = relabelled_rows(walks, x_row)
            if len(new) >= 2:
                extra += new
                made += 1
    return rows + extra
