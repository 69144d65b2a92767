"""Is a schedule legal?  Exact dependence checks, memoized (Pearl §5.1).

A schedule is legal when

1. every dependence (RAW, WAR, WAW; `llmopt.poly.deps`) stays lexicographically positive under the
   new schedule: the sink's time vector comes strictly after the source's.  This one test decides
   interchange, reversal, skewing, fusion and tiling exactly (a tiled band that is not fully
   permutable makes some dependence run backwards between tiles, and the test sees it); and
2. no loop marked parallel carries a dependence: no dependence between two instances that agree
   on every time dimension outside that loop but differ on it.

Unrolling never changes the order of iterations, so it is always legal where it applies.

`Legality(program, cache)` answers `is_legal(schedule)`, `allows(schedule, transform)` and
`mask(schedule, transforms)` (the RL agent's action mask), computing the dependences once per
program and memoizing every answer in memory and, when given one, in the harness `ResultCache`
(key: version, program hash, schedule).  A check costs a few milliseconds of isl: the dependences
have no parameters (`llmopt.poly.deps` computes them at the context's fixed sizes) and the schedule
map is built bare to match, and the constant sets are parsed once.
"""

from __future__ import annotations

import functools

import islpy as isl

from llmopt.harness.cache import ResultCache, make_key
from llmopt.poly.deps import Dependences, dependences
from llmopt.poly.polyhedral import tuple_of
from llmopt.poly.program import Program
from llmopt.poly.schedule import Schedule, ScheduleError, State, Transform, interleave, schedule_map, state

LEGALITY_VERSION = 2  # 2: an interchange may distribute the outer loop (schedule.distribute)


def _zeros(upto: int) -> list[str]:
    return [f"x{k} = 0" for k in range(upto)]


def _vector_set(n: int, clauses: list[str]) -> isl.UnionSet:
    names = ", ".join(f"x{k}" for k in range(n))
    return isl.UnionSet(f"{{ [{names}] : {' or '.join(clauses) if clauses else '1 = 0'} }}")


@functools.cache  # a few dozen (n, dim): parsing them was 40% of every check
def lex_positive(n: int) -> isl.UnionSet:
    """{ x in Z^n : x >lex 0 }."""
    return _vector_set(n, [" and ".join(_zeros(k) + [f"x{k} > 0"]) for k in range(n)])


@functools.cache
def carried_at(n: int, dim: int) -> isl.UnionSet:
    """{ x : x_0..x_{dim-1} = 0 and x_dim != 0 }: differences carried by time dimension `dim`."""
    return _vector_set(n, [" and ".join(_zeros(dim) + [f"x{dim} {op} 0"]) for op in ("<", ">")])


def time_deltas(deps: isl.UnionMap, sched: isl.UnionMap) -> isl.UnionSet:
    """sink time - source time for every dependence, under `sched`."""
    return deps.apply_domain(sched).apply_range(sched).deltas()


def _time_dims(st: State) -> int:
    return 2 * max(s.depth for s in st.values()) + 1  # schedule_map pads every statement to 2d+1


def restrict(deps: isl.UnionMap, names: set[str], prog: Program) -> isl.UnionMap:
    """The dependences among the statements `names` only (source and sink both in them)."""
    keep = isl.UnionSet("{ " + "; ".join(f"{s.name}[{', '.join(s.iterators)}]" for s in prog.statements
                                          if s.name in names) + " }")
    return deps.intersect_domain(keep).intersect_range(keep)


def carries(prog: Program, st: State, deps: isl.UnionMap, sched: isl.UnionMap, names: set[str],
            level: int) -> bool:
    """Whether the loop at `level` around the statements `names` carries a dependence among them under
    `sched` (the bare `schedule_map` of `st`; `deps` without parameters, as `Dependences.all`)."""
    deltas = time_deltas(restrict(deps, names, prog), sched)
    return not deltas.intersect(carried_at(_time_dims(st), 2 * level + 1)).is_empty()


def loop_carries(prog: Program, st: State, among: isl.UnionMap, names: set[str], level: int) -> bool:
    """`carries` for a loop at `level` that every statement of `names` sits in, from `among` (the dependences
    restricted to `names`, `restrict`) and a schedule map of those statements' first 2 * level + 2 time
    dimensions only: the same answer, since a carried difference is zero before the loop's dimension and
    nonzero at it, so neither the later dimensions nor the other statements decide it; a fraction of the isl
    work, which the cost model's compiler view asks of every innermost loop a search meets."""
    dims = 2 * level + 2
    parts = [f"{tuple_of(s)} -> [{', '.join(str(x) for x in interleave(st[s.name], 0)[:dims])}]"
             for s in prog.statements if s.name in names]
    sched = isl.UnionMap("{ " + "; ".join(parts) + " }")
    return not time_deltas(among, sched).intersect(carried_at(dims, dims - 1)).is_empty()


def parallel_ok(prog: Program, st: State, deps: isl.UnionMap, sched: isl.UnionMap) -> bool:
    """Every parallel mark sits on a loop that carries no dependence among its statements."""
    for level in sorted({p for s in st.values() for p in s.parallel}):
        names = {name for name, s in st.items() if level in s.parallel}
        if carries(prog, st, deps, sched, names, level):
            return False
    return True


def check(prog: Program, schedule: Schedule, deps: Dependences | None = None) -> tuple[bool, str]:
    """(legal, reason) for `schedule`; reason names the first violated rule ("" when legal)."""
    try:
        st = state(prog, schedule)
    except ScheduleError as err:
        return False, f"not applicable: {err}"
    every = (deps or dependences(prog)).all  # without parameters, so the bare schedule map fits
    sched = schedule_map(prog, st, bare=True)
    deltas = time_deltas(every, sched)
    if not deltas.is_subset(lex_positive(_time_dims(st))):
        return False, "a dependence is reversed"
    if not parallel_ok(prog, st, every, sched):
        return False, "a parallel loop carries a dependence"
    return True, ""


class Legality:
    """Legality queries for one program, memoized in memory and in an optional ResultCache."""

    def __init__(self, prog: Program, cache: ResultCache | None = None):
        self.prog = prog
        self.cache = cache
        self._deps: Dependences | None = None
        self._memo: dict[str, bool] = {}
        self.computed = 0  # how many schedules were really analysed (tests check memoization)
        self.asked = 0

    @property
    def deps(self) -> Dependences:
        if self._deps is None:
            self._deps = dependences(self.prog)
        return self._deps

    def key(self, schedule: Schedule) -> str:
        return make_key("poly-legal", LEGALITY_VERSION, self.prog.hash(), schedule.key())

    def is_legal(self, schedule: Schedule) -> bool:
        key = self.key(schedule)
        self.asked += 1
        if key in self._memo:
            return self._memo[key]
        hit = self.cache.get(key) if self.cache is not None else None
        if hit is None:
            ok, reason = check(self.prog, schedule, self.deps)
            self.computed += 1
            hit = {"legal": ok, "reason": reason}
            if self.cache is not None:
                self.cache.put(key, hit)
        self._memo[key] = bool(hit["legal"])
        return self._memo[key]

    def hit_rate(self) -> float:
        """Share of questions answered without analysing (memory or ResultCache)."""
        return 1 - self.computed / self.asked if self.asked else 0.0

    def allows(self, schedule: Schedule, transform: Transform) -> bool:
        """Whether appending `transform` to `schedule` gives a legal schedule."""
        return self.is_legal(schedule.then(transform))

    def mask(self, schedule: Schedule, transforms: list[Transform | None]) -> list[bool]:
        """allows() for each candidate; None (an action with no transform here) is masked out."""
        return [t is not None and self.allows(schedule, t) for t in transforms]


def is_legal(prog: Program, schedule: Schedule) -> bool:
    """One-off check (no memo); use `Legality` for repeated questions on one program."""
    return check(prog, schedule)[0]
