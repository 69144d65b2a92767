"""Schedules: the original program order plus a list of loop transformations (Pearl's actions).

A schedule is kept as what the agent did, a tuple of `Transform`s, and replayed onto the program's
original schedule whenever it is needed (`state(program, schedule)`), so it is small, hashable and
cacheable (`Schedule.key()`).  The replayed state gives every statement a "2d+1" schedule in the
style of CLooG/Pluto:

    [beta_0, loop_0, beta_1, loop_1, ..., loop_{d-1}, beta_d]

`loop_k` is a (quasi-)affine isl expression in the statement's iterators (`i`, `-(j)`,
`(j) + (i)`, `floor((i)/32)`); the integers `beta_k` order the statements inside the loop at
level k-1.  Two statements share the loop at level L exactly when their betas agree up to
`beta_L`: so the loop tree is fixed by the betas alone, and a *loop node* is named by any
statement in it and its level, `(stmt, level)`.

Each transformation names one loop of one branch by `(stmt, level)`, with levels counted from 0 =
outermost in the statement's *current* loops (tiling adds loops), and applies to the whole subtree
below that loop, so it never splits a loop by itself (fusion merges two), with one exception:

- `Interchange(stmt, level, other)`: swap two loop levels (Pearl I(i, i+1)); where statements sit
  directly in the outer of two adjacent loops beside the branch's inner loop (gemm's `C *= beta`
  beside its `k` loop), the outer loop is first distributed (`distribute`): they keep their own copy
  of it, as Tiramisu schedules each computation by itself, and legality decides whether the split
  keeps the program's meaning;
- `Reversal(stmt, level)`: run one loop backwards (R(i));
- `Skew(stmt, level, factor)`: loop level+1 += factor * loop level (S(i, i+1));
- `Parallel(stmt, level)`: run the loop as `#pragma omp parallel for` (P(i));
- `Tile(stmt, level, sizes)`: tile the 2 or 3 loops level.. with `sizes` (T(i, i+1, x, y)); tile
  loops come first and keep a parallel mark of the loops they tile;
- `Unroll(stmt, factor)`: unroll the innermost loop of the statement's branch by `factor` (U(x));
- `Fuse(stmt, level)`: merge the loop (stmt, level) with the next loop at the same level and parent.

Applying a transformation that does not fit the loop structure (no such level, a tile band that is
not one perfect nest) raises `ScheduleError`; whether it keeps the program's meaning is the
question of `llmopt.poly.legality`, not of this module.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import islpy as isl

from llmopt.errors import LlmoptError
from llmopt.poly.polyhedral import domains, params_prefix, tuple_of
from llmopt.poly.program import Program


class ScheduleError(ValueError, LlmoptError):
    """A transformation that cannot be applied to the current loop structure (not a legality question)."""


@dataclass
class StmtSchedule:
    """The replayed schedule of one statement (see the module docstring)."""

    betas: list[int]
    loops: list[str]  # isl expressions over the statement's iterators
    parallel: set[int] = field(default_factory=set)  # levels run as `omp parallel for`
    unroll: int = 1  # unroll factor of the innermost loop

    @property
    def depth(self) -> int:
        return len(self.loops)


State = dict[str, StmtSchedule]


def original(prog: Program) -> State:
    """The program order: statement k shares `shares` loops with statement k-1 (module docstring)."""
    state: State = {}
    prev: StmtSchedule | None = None
    for s in prog.statements:
        betas = [0] * (len(s.iterators) + 1)
        if prev is not None:
            betas[: s.shares] = prev.betas[: s.shares]
            betas[s.shares] = prev.betas[s.shares] + 1
        prev = state[s.name] = StmtSchedule(betas, list(s.iterators))
    return state


def subtree(state: State, stmt: str, level: int) -> list[str]:
    """Statements under the loop node (stmt, level), in program order."""
    if stmt not in state:
        raise ScheduleError(f"no statement {stmt!r}")
    me = state[stmt]
    if not 0 <= level < me.depth:
        raise ScheduleError(f"statement {stmt} has no loop level {level} (it has {me.depth})")
    prefix = me.betas[: level + 1]
    return [n for n, s in state.items() if s.depth > level and s.betas[: level + 1] == prefix]


def branch(state: State, stmt: str) -> list[str]:
    """Statements directly in the innermost loop of `stmt` (Pearl's branch: one full loop path)."""
    me = state[stmt]
    return [n for n, s in state.items() if s.depth == me.depth and s.betas[: me.depth] == me.betas[: me.depth]]


def branches(state: State) -> list[list[str]]:
    """Every branch once, in execution order (what Pearl's "Next" action walks through)."""
    seen: list[list[str]] = []
    for name in sorted(state, key=lambda n: state[n].betas):
        b = branch(state, name)
        if b not in seen:
            seen.append(b)
    return seen


def interleave(s: StmtSchedule, pad: int) -> list:
    """[beta_0, loop_0, ..., beta_d] padded with zeros to 2*pad+1 entries (loops as strings)."""
    out: list = []
    for k, loop in enumerate(s.loops):
        out += [s.betas[k], loop]
    out.append(s.betas[-1])
    return out + [0] * max(0, 2 * pad + 1 - len(out))


@dataclass(frozen=True)
class Transform:
    """Base of the transformations: one loop `(stmt, level)`; subclasses add parameters."""

    stmt: str
    level: int = 0

    kind = "transform"

    def apply(self, state: State) -> None:
        raise NotImplementedError

    def to_dict(self) -> dict:
        return {"kind": self.kind, **{k: (list(v) if isinstance(v, tuple) else v) for k, v in vars(self).items()}}


@dataclass(frozen=True)
class Interchange(Transform):
    other: int = -1  # default level + 1
    kind = "interchange"

    def apply(self, state: State) -> None:
        other = self.level + 1 if self.other < 0 else self.other
        lo, hi = sorted((self.level, other))
        if hi == lo + 1 and state.get(self.stmt) is not None and state[self.stmt].depth > hi:
            distribute(state, self.stmt, lo)
        for n in _needs_depth(state, self.stmt, lo, hi + 1):
            s = state[n]
            s.loops[lo], s.loops[hi] = s.loops[hi], s.loops[lo]
            s.parallel = {hi if p == lo else lo if p == hi else p for p in s.parallel}


@dataclass(frozen=True)
class Reversal(Transform):
    kind = "reversal"

    def apply(self, state: State) -> None:
        for n in subtree(state, self.stmt, self.level):
            state[n].loops[self.level] = f"-({state[n].loops[self.level]})"


@dataclass(frozen=True)
class Skew(Transform):
    factor: int = 1
    kind = "skewing"

    def apply(self, state: State) -> None:
        if self.factor == 0:
            raise ScheduleError("a skewing factor of 0 changes nothing")
        for n in _needs_depth(state, self.stmt, self.level, self.level + 2):
            loops = state[n].loops
            loops[self.level + 1] = f"({loops[self.level + 1]}) + {self.factor} * ({loops[self.level]})"


@dataclass(frozen=True)
class Parallel(Transform):
    kind = "parallelization"

    def apply(self, state: State) -> None:
        for n in subtree(state, self.stmt, self.level):
            state[n].parallel.add(self.level)


@dataclass(frozen=True)
class Tile(Transform):
    sizes: tuple[int, ...] = (32, 32)
    kind = "tiling"

    def apply(self, state: State) -> None:
        k, lvl = len(self.sizes), self.level
        if k not in (2, 3) or min(self.sizes) < 2:
            raise ScheduleError(f"tiling takes 2 or 3 sizes >= 2, got {self.sizes}")
        names = _needs_depth(state, self.stmt, lvl, lvl + k)
        if len({tuple(state[n].betas[lvl + 1: lvl + k]) for n in names}) != 1:
            raise ScheduleError(f"loops {lvl}..{lvl + k - 1} of {self.stmt} are not one perfect nest")
        for n in names:
            s = state[n]
            tiles = [f"floor(({s.loops[lvl + j]})/{t})" for j, t in enumerate(self.sizes)]
            s.loops[lvl:lvl] = tiles
            s.betas[lvl + 1: lvl + 1] = [0] * k
            s.parallel = {p if p < lvl + k else p + k for p in s.parallel}


@dataclass(frozen=True)
class Unroll(Transform):
    factor: int = 4
    kind = "unrolling"

    def apply(self, state: State) -> None:
        if self.factor < 2 or state.get(self.stmt) is None or state[self.stmt].depth == 0:
            raise ScheduleError(f"cannot unroll {self.stmt} by {self.factor}")
        for n in branch(state, self.stmt):
            state[n].unroll = self.factor


@dataclass(frozen=True)
class Fuse(Transform):
    kind = "fusion"

    def apply(self, state: State) -> None:
        lvl = self.level
        mine = subtree(state, self.stmt, lvl)
        prefix, here = state[self.stmt].betas[:lvl], state[self.stmt].betas[lvl]
        later = sorted({s.betas[lvl] for s in state.values() if s.depth > lvl and s.betas[:lvl] == prefix
                        and s.betas[lvl] > here})
        if not later:
            raise ScheduleError(f"loop ({self.stmt}, {lvl}) has no next loop to fuse with")
        others = [n for n, s in state.items() if s.depth > lvl and s.betas[: lvl + 1] == prefix + [later[0]]]
        if any(s.betas[:lvl] == prefix and here < s.betas[lvl] < later[0] for s in state.values()):
            raise ScheduleError(f"a statement lies between loop ({self.stmt}, {lvl}) and the next one")
        shift = max(state[n].betas[lvl + 1] for n in mine) + 1
        for n in others:
            state[n].betas[lvl] = here
            state[n].betas[lvl + 1] += shift


def distribute(state: State, stmt: str, level: int) -> None:
    """Split the loop (stmt, level) where statements directly in it sit beside loops: each maximal run of
    such statements, and each run of child loops, gets its own copy of the loop, in the same order.
    A no-op when the loop holds child loops only (or statements only)."""
    names = subtree(state, stmt, level)
    children = sorted({state[n].betas[level + 1] for n in names})

    def is_loop(beta: int) -> bool:
        return any(state[n].depth > level + 1 for n in names if state[n].betas[level + 1] == beta)
    runs: list[list[int]] = []
    for beta in children:
        if runs and is_loop(beta) == is_loop(runs[-1][0]):
            runs[-1].append(beta)
        else:
            runs.append([beta])
    if len(runs) < 2:
        return
    prefix, here = state[stmt].betas[:level], state[stmt].betas[level]
    for s in state.values():  # later loops and statements at this level move down to make room
        if s.depth >= level and s.betas[:level] == prefix and s.betas[level] > here:
            s.betas[level] += len(runs) - 1
    for q, run in enumerate(runs):
        for n in names:
            if state[n].betas[level + 1] in run:
                state[n].betas[level] = here + q
                state[n].betas[level + 1] -= run[0]


def _needs_depth(state: State, stmt: str, level: int, depth: int) -> list[str]:
    names = subtree(state, stmt, level)
    short = [n for n in names if state[n].depth < depth]
    if short:
        raise ScheduleError(f"statements {short} under loop ({stmt}, {level}) have fewer than {depth} loops")
    return names


KINDS = {c.kind: c for c in (Interchange, Reversal, Skew, Parallel, Tile, Unroll, Fuse)}


def transform_from_dict(d: dict) -> Transform:
    """Inverse of `Transform.to_dict` (the JSON form in schedules and cache keys)."""
    args = {k: (tuple(v) if isinstance(v, list) else v) for k, v in d.items() if k != "kind"}
    try:
        return KINDS[d["kind"]](**args)
    except (KeyError, TypeError) as err:
        raise ScheduleError(f"not a transformation: {d} ({err})") from None


@dataclass(frozen=True)
class Schedule:
    """The transformations applied so far, in order; `Schedule()` is the original program order."""

    transforms: tuple[Transform, ...] = ()

    def then(self, t: Transform) -> Schedule:
        return Schedule(self.transforms + (t,))

    def to_list(self) -> list[dict]:
        return [t.to_dict() for t in self.transforms]

    @staticmethod
    def from_list(items: list[dict]) -> Schedule:
        return Schedule(tuple(transform_from_dict(d) for d in items))

    def key(self) -> list[dict]:
        """JSON-serialisable identity, the schedule part of cache keys."""
        return self.to_list()

    def is_parallel(self, prog: Program) -> bool:
        return any(s.parallel for s in state(prog, self).values())


def state(prog: Program, schedule: Schedule) -> State:
    """Replay `schedule` on the original program order; ScheduleError if a step does not fit."""
    st = original(prog)
    for t in schedule.transforms:
        t.apply(st)
    return st


def schedule_map(prog: Program, st: State, bare: bool = False) -> isl.UnionMap:
    """The isl schedule: statement instance -> common 2d+1 time vector, restricted to the domains.
    `bare`: without parameters and domains (loop expressions never name a parameter), for maps
    applied to relations that already lie in the domains with the parameters projected out, as
    legality's dependences do: plain integer sets make its checks about twice as fast."""
    depth = max(s.depth for s in st.values())
    parts = []
    for stmt in prog.statements:
        dims = ", ".join(str(x) for x in interleave(st[stmt.name], depth))
        parts.append(f"{tuple_of(stmt)} -> [{dims}]")
    if bare:
        return isl.UnionMap(f"{{ {'; '.join(parts)} }}")
    umap = isl.UnionMap(f"{params_prefix(prog)}{{ {'; '.join(parts)} }}")
    return umap.intersect_domain(domains(prog))


def copy_state(st: State) -> State:
    return copy.deepcopy(st)
