"""Searches over Pearl's 56 actions with execution: the baselines of the RL agent (issue 15, item 5).

`beam` is the Tiramisu autoscheduler's beam search with execution (paper 002, §5, "BSE"): from the
original schedule, every node of the beam is expanded by every legal action on every branch
(`children`: Pearl's per-branch actions, "Next" being implicit because all branches are expanded,
the exact legality of `llmopt.poly.actions.action_mask`), each child is compiled, checked against
the reference and timed by the `Measurer`, and the `width` fastest children form the beam of the
next depth.  `greedy` is the same with width 1.  The search stops after `depth` levels, when no
child runs, or when `budget_seconds` have passed (checked before every expansion and every
measurement, so it overruns by at most one node's legality checks or one compile-and-run).

What a search returns is never worse than doing nothing: the best schedule starts as the original
order, timed by `Measurer.baseline_o3` (the same -O3 run every speedup divides), and a child only
replaces it when it is measured faster by more than `min_gain`; so when nothing helps the answer
is the identity schedule with speedup 1.0.  Children are deduplicated by the C they emit (`P(0)`
twice, or two reversals, is measured once) and tried in `KIND_ORDER` (parallelization and tiling
first), which matters only when the budget cuts a depth short.

Every search has the signature `search(program, measurer, budget_seconds=..., log=None, **options)
-> SearchResult` and is registered in `SEARCHES` by name; the CLI (`llmopt loops schedule
--search NAME`) and the bench (`llmopt loops pearl-bench`) take their choices from it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from llmopt.poly.actions import ACTIONS, NEXT, transform
from llmopt.poly.emit import kernel_c
from llmopt.poly.legality import Legality
from llmopt.poly.measure import Measurer
from llmopt.poly.program import Program
from llmopt.poly.schedule import (
    Fuse,
    Interchange,
    Parallel,
    Reversal,
    Schedule,
    ScheduleError,
    Skew,
    Tile,
    Transform,
    Unroll,
    branches,
    state,
)

KIND_ORDER = ("parallelization", "tiling", "interchange", "unrolling", "skewing", "reversal")
DEFAULT_WIDTH = 4
DEFAULT_DEPTH = 4
DEFAULT_MIN_GAIN = 0.01  # a schedule must be 1% faster than the best so far to replace it (timing noise)
# A candidate's timing stops at its first run this many times slower than the best so far: a slow
# schedule otherwise costs `repeats` of its own slow runs to learn only that it lost.
CUT_FACTOR = 2.0


@dataclass
class SearchResult:
    """The schedule a search settled on, its time, and what the search cost."""

    schedule: Schedule
    seconds: float  # run time of the program under `schedule` (min of the measurer's repeats)
    baseline_seconds: float  # the original program at -O3: speedup = baseline_seconds / seconds
    evaluations: int = 0  # schedules measured (cache hits included)
    search_seconds: float = 0.0  # wall-clock time of the search (legality, compiling, running)
    measure_seconds: float = 0.0  # the part of search_seconds spent compiling and running (baseline included)
    trace: list[tuple[float, float]] = field(default_factory=list)  # (elapsed s, best speedup so far)
    cut_short: bool = False  # the budget ran out before the search finished its depths

    @property
    def speedup(self) -> float:
        return self.baseline_seconds / self.seconds if self.seconds > 0 else 0.0

    def to_dict(self) -> dict:
        return {"schedule": notation(self.schedule), "transforms": self.schedule.to_list(),
                "speedup": self.speedup, "seconds": self.seconds, "baseline_seconds": self.baseline_seconds,
                "evaluations": self.evaluations, "search_seconds": self.search_seconds,
                "measure_seconds": self.measure_seconds, "cut_short": self.cut_short,
                "trace": [list(p) for p in self.trace]}


def _action_text(t: Transform) -> str:
    """One transformation in Pearl's notation (paper 000, §4.2): I(0,1), T(1,2,32,32), U(4)..."""
    lvl = t.level
    match t:
        case Interchange():
            return f"I({lvl},{lvl + 1 if t.other < 0 else t.other})"
        case Reversal():
            return f"R({lvl})"
        case Skew():
            return f"S({lvl},{lvl + 1}{'' if t.factor == 1 else f',{t.factor}'})"
        case Parallel():
            return f"P({lvl})"
        case Tile():
            levels = ",".join(str(lvl + k) for k in range(len(t.sizes)))
            return f"T({levels},{','.join(map(str, t.sizes))})"
        case Unroll():
            return f"U({t.factor})"
        case Fuse():
            return f"F({lvl})"
    return t.kind


def notation(schedule: Schedule) -> str:
    """The schedule in Pearl's notation, each run of actions prefixed by the statement naming its
    branch: `S0: P(0) T(1,2,32,32) U(4) | S2: U(8)`; `identity` for the original order."""
    groups: list[tuple[str, list[str]]] = []
    for t in schedule.transforms:
        if not groups or groups[-1][0] != t.stmt:
            groups.append((t.stmt, []))
        groups[-1][1].append(_action_text(t))
    return " | ".join(f"{stmt}: {' '.join(acts)}" for stmt, acts in groups) or "identity"


def extensions(prog: Program, schedule: Schedule) -> list[Schedule]:
    """Every applicable one-action extension of `schedule`, legal or not: each branch, each of the 55
    transformations (Next excluded: every branch is expanded), in `KIND_ORDER`.  The one action
    enumeration of the searches; `children` keeps the legal ones, beam-model checks them lazily."""
    try:
        st = state(prog, schedule)
    except ScheduleError:
        return []
    out: list[tuple[int, Schedule]] = []
    for branch in branches(st):
        for action in ACTIONS[:NEXT]:  # Next is the last action
            child = schedule.then(transform(action, branch[0]))
            if _applies(prog, child):
                out.append((KIND_ORDER.index(action.kind), child))
    return [s for _, s in sorted(out, key=lambda pair: pair[0])]


def _applies(prog: Program, schedule: Schedule) -> bool:
    try:
        state(prog, schedule)
    except ScheduleError:
        return False
    return True


def children(prog: Program, measurer: Measurer, schedule: Schedule) -> list[Schedule]:
    """Every legal one-action extension of `schedule` (`extensions`, exact legality), in `KIND_ORDER`."""
    legality = measurer.legality(prog)
    return [child for child in extensions(prog, schedule) if legality.is_legal(child)]


class _Run:
    """Book-keeping of one search: deadline, best schedule so far, evaluations, trace."""

    def __init__(self, prog: Program, measurer: Measurer, budget_seconds: float, min_gain: float):
        self.prog, self.measurer, self.min_gain = prog, measurer, min_gain
        self.t0 = time.monotonic()
        self.deadline = self.t0 + budget_seconds
        baseline = measurer.baseline_o3(prog)["seconds"]
        self.result = SearchResult(Schedule(), baseline, baseline, trace=[(0.0, 1.0)])
        self.result.measure_seconds = time.monotonic() - self.t0
        self.seen = {kernel_c(prog, Schedule())}

    def expired(self) -> bool:
        # At least one schedule is measured whatever the budget: on a loaded machine the legality checks
        # alone can outlast a small budget, and a search that measured nothing has answered nothing.
        if self.result.evaluations > 0 and time.monotonic() > self.deadline:
            self.result.cut_short = True
        return self.result.cut_short

    def fresh(self, schedule: Schedule) -> bool:
        """True the first time a schedule's C is seen (equal code is measured once)."""
        code = kernel_c(self.prog, schedule)
        if code in self.seen:
            return False
        self.seen.add(code)
        return True

    def measure(self, schedule: Schedule) -> float:
        """Seconds of `schedule` (inf when it failed); keeps the best."""
        start = time.monotonic()
        got = self.measurer.measure(self.prog, schedule, cutoff=CUT_FACTOR * self.result.seconds)
        self.result.evaluations += 1
        self.result.measure_seconds += time.monotonic() - start
        if not got.get("ok"):
            return math.inf
        res = self.result
        if got["seconds"] < res.seconds * (1 - self.min_gain):
            res.schedule, res.seconds = schedule, got["seconds"]
            res.trace.append((time.monotonic() - self.t0, res.speedup))
        return got["seconds"]

    def done(self) -> SearchResult:
        self.result.search_seconds = time.monotonic() - self.t0
        return self.result


def _expand(run: _Run, frontier: list[Schedule]) -> list[tuple[float, int, Schedule]]:
    """(seconds, order, child) for the new children of the frontier that ran, until the deadline."""
    scored: list[tuple[float, int, Schedule]] = []
    for parent in frontier:
        if run.expired():
            return scored
        for child in children(run.prog, run.measurer, parent):
            if run.expired():
                return scored
            if run.fresh(child) and (seconds := run.measure(child)) < math.inf:
                scored.append((seconds, len(scored), child))
    return scored


def beam(prog: Program, measurer: Measurer, budget_seconds: float = 60.0, width: int = DEFAULT_WIDTH,
         depth: int = DEFAULT_DEPTH, min_gain: float = DEFAULT_MIN_GAIN,
         log: Callable[[str], None] | None = None) -> SearchResult:
    """Beam search with execution (module docstring): keep the `width` fastest measured schedules
    per depth, at most `depth` actions, within `budget_seconds`."""
    run = _Run(prog, measurer, budget_seconds, min_gain)
    frontier = [Schedule()]
    for level in range(1, depth + 1):
        scored = _expand(run, frontier)
        if log:
            log(f"{prog.name}: depth {level}: {len(scored)} schedules ran, best {run.result.speedup:.2f}x "
                f"({notation(run.result.schedule)}), {time.monotonic() - run.t0:.1f} s")
        if not scored or level == depth or run.expired():
            break
        frontier = [s for _, _, s in sorted(scored)[:width]]
    return run.done()


def greedy(prog: Program, measurer: Measurer, budget_seconds: float = 60.0, depth: int = DEFAULT_DEPTH,
           min_gain: float = DEFAULT_MIN_GAIN, log: Callable[[str], None] | None = None) -> SearchResult:
    """Beam search of width 1: the fastest child at each depth."""
    return beam(prog, measurer, budget_seconds, width=1, depth=depth, min_gain=min_gain, log=log)


def _measure(prog: Program, measurer: Measurer, candidates: list[Schedule], res: SearchResult,
             min_gain: float, t0: float) -> None:
    """Measure the candidates; keep one only when it really is faster.  The identity is the baseline
    itself: timed again it could only "win" by noise (it did, 1.09x on heat3d), so it is skipped.  A
    candidate's timing stops at its first run `CUT_FACTOR` times slower than the best so far, as in the
    searches with execution: it has lost, and its other runs would only make verifying cost more."""
    for sched in candidates:
        if not sched.transforms:
            continue
        start = time.monotonic()
        got = measurer.measure(prog, sched, cutoff=CUT_FACTOR * res.seconds)
        res.evaluations += 1
        res.measure_seconds += time.monotonic() - start
        if got.get("ok") and got["seconds"] < res.seconds * (1 - min_gain):
            res.schedule, res.seconds = sched, got["seconds"]
            res.trace.append((time.monotonic() - t0, res.speedup))


def verified(prog: Program, measurer: Measurer, pick: Callable[[Legality, float], list[Schedule]],
             budget_seconds: float, min_gain: float, log: Callable[[str], None] | None = None) -> SearchResult:
    """The frame of every search that picks without running (the cost model's, the agent's): time
    the original program, let `pick(legality, deadline)` choose legal candidates, measure them and
    keep one only when it is faster by `min_gain`, so the answer is never slower than the original.
    `measure_seconds` is the running; the rest of `search_seconds` is the picking."""
    t0 = time.monotonic()
    baseline = measurer.baseline_o3(prog)["seconds"]
    res = SearchResult(Schedule(), baseline, baseline, trace=[(0.0, 1.0)])
    res.measure_seconds = time.monotonic() - t0
    candidates = pick(measurer.legality(prog), t0 + budget_seconds)
    _measure(prog, measurer, candidates, res, min_gain, t0)
    res.search_seconds = time.monotonic() - t0
    if log:
        log(f"{prog.name}: verified {len(candidates)}: {res.speedup:.2f}x ({notation(res.schedule)}), "
            f"{res.search_seconds - res.measure_seconds:.1f} s of the {res.search_seconds:.1f} s without running")
    return res


def _beam_model(prog: Program, measurer: Measurer, **options) -> SearchResult:
    """Beam search scored by the learned cost model (llmopt.poly.costmodel.search; imports torch)."""
    from llmopt.poly.costmodel.search import beam_model

    return beam_model(prog, measurer, **options)


def _beam_model_agent(prog: Program, measurer: Measurer, **options) -> SearchResult:
    """Beam search scored by the cost model, the Pearl agent's final schedule verified beside its best prediction."""
    from llmopt.poly.costmodel.search import beam_model

    return beam_model(prog, measurer, with_agent=True, **options)


def _mcts_model(prog: Program, measurer: Measurer, **options) -> SearchResult:
    """MCTS scored by the learned cost model (llmopt.poly.costmodel.mcts; imports torch)."""
    from llmopt.poly.costmodel.mcts import mcts_model

    return mcts_model(prog, measurer, **options)


def _agent(prog: Program, measurer: Measurer, **options) -> SearchResult:
    """The trained Pearl agent's greedy schedule, measured (llmopt.poly.agent.policy; imports torch)."""
    from llmopt.poly.agent.policy import agent_search

    return agent_search(prog, measurer, **options)


Search = Callable[..., SearchResult]

# name -> search(program, measurer, budget_seconds=..., log=None) -> SearchResult.
# Searches that import torch are wrapped so that `beam` and `greedy` never load it.
SEARCHES: dict[str, Search] = {"beam": beam, "greedy": greedy, "beam-model": _beam_model,
                               "beam-model-agent": _beam_model_agent, "mcts-model": _mcts_model, "agent": _agent}
