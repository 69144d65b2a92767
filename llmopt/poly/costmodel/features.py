"""The cost model's view of a (program, schedule): computation vectors in a loop tree (paper 002, §4.1-4.2).

Tiramisu represents a transformed program as a tree whose leaves are *computation vectors* and
whose inner nodes are loops (Figure 1b); the transformations are not a separate input, they are
written onto the loops they changed (Table 1).  `featurize(program, schedule) -> Tree` does the
same on the *transformed* schedule (`llmopt.poly.schedule.state`), so tiling deepens the tree,
fusion merges two subtrees, and interchange, skewing, reversal, parallelization and unrolling show
up as tags and affine rows of the loops they touched.

A computation vector (`COMP_FEATURES` floats) is, in order:

- loop nest vector: for each of the computation's loops, outermost first, padded to `MAX_LOOPS`
  (paper n = 7; 4 original levels + 2 tile levels fit in 8): present, lower / upper bound and
  extent (exact, by isl), reduction tag (the loop's iterator is not in the write's subscripts),
  tile loop / point loop tags and the tile size, parallel tag, unrolled tag and factor,
  interchanged, skewed and reversed tags, how many computations share the loop, and the loop's
  affine row over the computation's iterators (which original loop it runs, after skewing);
- assignment vector: the write and then the distinct reads, padded to `MAX_ACCESSES` (paper m = 21;
  our generator draws at most 4 accesses, the benchmarks up to 10): the access matrix (rows = tensor
  dimensions, columns = iterator coefficients, constant, quasi-affine flag), the buffer id, whether
  it is the written buffer, the buffer's extents;
- operation counts of the right-hand side (subscripts excluded): +, -, *, /, math calls, reads,
  distinct reads, reduction (`+=`), element type, original depth;
- locality vector (not in the paper; added because our data is ~100x smaller than Tiramisu's and a
  loop interchange that turns a unit stride into a row stride is the commonest 10-80x slowdown in
  it): for each access of the assignment vector, the element stride (row-major) of one step of the
  innermost and of the second-innermost loop of the *transformed* schedule, from the loop's step (how
  one of its iterations moves the original iterators, `_loop_steps`: its affine row unless skewed) and
  the access matrix (0: the access does not move with that loop).  Every stride below reads steps too.

- compiler view (not in the paper; added because LLVM's own decisions make the largest swings in our
  data: a time loop interchanged innermost runs 8.6x faster with 7 trips, which clang unrolls away and
  then vectorizes the stream around it, and 0.045x with 64, a dependent chain per element): which
  innermost loops LLVM's full unroller removes (trip count x estimated IR size against its -O3 budget,
  `UNROLL_BUDGET`), and for the loop left innermost after that, the one the vectorizer sees, its
  access strides and whether it carries a dependence (exact, by isl).  `_compiler_vector` lists them.
- traffic view (not in the paper; added because the view above says what LLVM does to the innermost loop but
  not what the loops make the memory do: the strides of the locality vector reach a working set only through
  products the network must learn from a few thousand programs): for each computation, the cache lines one
  iteration of the innermost loop brings in, the 4 KiB pages one run of it touches, and the bytes of cache
  lines the innermost one, two and three loops and the whole nest touch (`_traffic_vector`, `TRAFFIC_NAMES`):
  what decides whether a tile's working set stays in a cache level.
- parallel view (not in the paper; added because the slowest rows of our data, down to 0.006x, parallelize a
  short inner loop: OpenMP forks and joins once per iteration of the loops around it, and the loop vector
  tags the parallel loop and gives each extent but not their product): whether the computation runs in an
  `omp parallel for`, how many times that region is entered, its trips and the iterations one entry runs
  (`_parallel_vector`, `PARALLEL_NAMES`).
- memory view (not in the paper; added because the largest speedups the network under-reached were tilings
  that keep a stream in cache across an outer loop, 3-5x: the traffic view gives each level's working set but
  not how often it is brought in again): for each cache level (L1, L2, L3: `CACHE_BYTES`), the bytes one run
  of the nest brings into it by a reuse-distance estimate (`_memory_vector`, `MEMORY_NAMES`).
- fill view (not in the paper; added because the memory view's capacities are one EPYC's while the labels come
  from a 2-core VM's share of a shared L3: a time loop over two 16 MiB streams, 32 MiB that "fit" L3, ran 4x
  faster tiled, where the trees answered 1.7x): the same estimate at the seven capacities of `FILL_BYTES`, from
  256 KiB to 64 MiB (`FILL_NAMES`), so that a learner finds the thresholds the labels show.
- invariance view (not in the paper; added because the largest speedups of our data, 14-47x, that every model
  answered under 1x, put a time loop whose iterator no access reads innermost: LLVM hoists the loads, promotes the
  store and deletes the loop, so its trips are gone): whether the innermost loop moves no access, the trips of the
  innermost loops that move none when the statement does not read what it writes, and the trips of all loops
  that move none (`_invariance_vector`, `INVARIANCE_NAMES`).

- balance (not a vector entry: `Tree.busy`, read by the trees only, so the network's inputs keep their layout):
  for each computation in a parallel region, the share of its instances the busiest of `THREADS` threads runs
  under OpenMP's static schedule (`_busiest_share`; 1 for a computation that runs serially).  Added because the
  parallel view gives a region's trips, not how its work spreads over them: the outer loop of a triangle
  (`j <= i`) split in two halves gives one thread three quarters of the work, so syrk parallelized there runs
  1.3x faster, not 2x, where the trees answered 1.9x and ranked it above the interchange that runs 2.8x
  (docs/results/costmodel/, sixty-eighth session).

Numbers with a large range (bounds, extents, factors, counts) are log-transformed the way the paper
asks (`llmopt.poly.agent.state.squash`: sign * log2(1 + |x|) / 16); tags are 0/1.  The access
matrices, bounds and loop tags come from the Pearl agent's state features
(`llmopt.poly.agent.state`), memoized per program, so both learners read a program the same way.

`Tree.structure` is the loop tree as nested tuples: a loop is `("L", child, ...)`, a computation
its index in `Tree.comps`; the root is a virtual loop around the top-level nests.  Samples whose
structure is equal can be batched (`model.CostModel` recurses once per structure).  `Tree.origin` is
the untransformed program's tree (one object per featurizer, so shared by a program's samples): an
*anchored* cost model answers score(tree) - score(origin) (`model.ModelConfig.anchored`).
"""

from __future__ import annotations

import ast
import functools
import math
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from llmopt.poly.agent.state import (
    MATRIX,
    MAX_ITERS,
    MAX_RANK,
    access_matrix,
    iterator_range,
    loop_bounds,
    loop_flags,
    rectangular,
    squash,
    trip_count,
    trip_range,
)
from llmopt.poly.deps import dependences
from llmopt.poly.legality import loop_carries, restrict
from llmopt.poly.program import Program, Statement, extent
from llmopt.poly.schedule import Schedule, State, state

MAX_LOOPS = 8
MAX_ACCESSES = 12
MAX_BUFFERS = 16
LOOP_FEATURES = 15 + MAX_ITERS
LOOP_PRESENT, LOOP_EXTENT, LOOP_PARALLEL = 0, 3, 9  # offsets in one loop's block (`_loop_vector`) that readers need
ACCESS_FEATURES = MATRIX + 3 + MAX_RANK
OP_FEATURES = 10
# Bump when a feature's meaning changes without changing COMP_FEATURES (cached trees become stale).
FEATURE_LAYOUT = 10  # 2: trees carry their program's untransformed tree (`Tree.origin`); 3: the parallel view;
# 4: the memory view; 5: strides along each loop's step (`_loop_steps`); 6: a skewed loop's trips per entry;
# 7: a point loop's trips on average (`_level_trips`); 8: blocks an access touches, the fewer of two counts (`_blocks`);
# 9: any other loop's trips per entry on average (`_level_trips`: triangular loops); 10: the balance (`Tree.busy`)
STRIDE_LOOPS = 2  # innermost and second-innermost loop
LOCALITY_FEATURES = MAX_ACCESSES * STRIDE_LOOPS
COMPILER_NAMES = ("inner_trips", "inner_unrolled_size", "inner_unrolled", "unrolled_loops", "vector_loop",
                  "vector_trips", "vector_max_stride", "vector_unit_strides", "vector_write_moves", "vector_carried",
                  "vector_ok")  # `_compiler_vector`
COMPILER_FEATURES = len(COMPILER_NAMES)
TRAFFIC_NAMES = ("inner_lines", "inner_pages", "footprint_1", "footprint_2", "footprint_3",
                 "footprint_all")  # `_traffic_vector`
TRAFFIC_FEATURES = len(TRAFFIC_NAMES)
PARALLEL_NAMES = ("parallel", "forks", "parallel_trips", "fork_iterations")  # `_parallel_vector`
PARALLEL_FEATURES = len(PARALLEL_NAMES)
MEMORY_NAMES = ("l1_fill", "l2_fill", "l3_fill")  # `_memory_vector`
MEMORY_FEATURES = len(MEMORY_NAMES)
# `_memory_vector` again at the capacities of FILL_BYTES (the fill view)
FILL_NAMES = ("fill_256k", "fill_512k", "fill_2m", "fill_4m", "fill_8m", "fill_16m", "fill_64m")
FILL_FEATURES = len(FILL_NAMES)
INVARIANCE_NAMES = ("inner_invariant", "removed_trips", "redundant_trips")  # `_invariance_vector`
INVARIANCE_FEATURES = len(INVARIANCE_NAMES)
# Models trained before the compiler view read this many leading features (`model.CostModel` slices), those
# trained before the traffic view the first VIEW_FEATURES, those before the parallel view the first
# TRAFFIC_VIEW_FEATURES, those before the memory view the first PARALLEL_VIEW_FEATURES, those before the fill
# view the first MEMORY_VIEW_FEATURES, those before the invariance view the first FILL_VIEW_FEATURES: a model reads
# one of FEATURE_SETS (by the name `train --features` gives it).
PLAIN_FEATURES = MAX_LOOPS * LOOP_FEATURES + MAX_ACCESSES * ACCESS_FEATURES + OP_FEATURES + LOCALITY_FEATURES
VIEW_FEATURES = PLAIN_FEATURES + COMPILER_FEATURES
TRAFFIC_VIEW_FEATURES = VIEW_FEATURES + TRAFFIC_FEATURES
PARALLEL_VIEW_FEATURES = TRAFFIC_VIEW_FEATURES + PARALLEL_FEATURES
MEMORY_VIEW_FEATURES = PARALLEL_VIEW_FEATURES + MEMORY_FEATURES
FILL_VIEW_FEATURES = MEMORY_VIEW_FEATURES + FILL_FEATURES
COMP_FEATURES = FILL_VIEW_FEATURES + INVARIANCE_FEATURES
FEATURE_SETS = {"plain": PLAIN_FEATURES, "compiler": VIEW_FEATURES, "traffic": TRAFFIC_VIEW_FEATURES,
                "parallel": PARALLEL_VIEW_FEATURES, "memory": MEMORY_VIEW_FEATURES, "fills": FILL_VIEW_FEATURES,
                "invariance": COMP_FEATURES}
FEATURE_COUNTS = tuple(FEATURE_SETS.values())
LINE_BYTES = 64  # a cache line
PAGE_BYTES = 4096  # a page: what a TLB entry maps
# L1d, L2 (per core) and L3 capacities of the machines our data was measured on (AMD EPYC: `lscpu`); constants,
# not read at run time, so that a program's features are the same on every machine.
CACHE_BYTES = (32 << 10, 1 << 20, 32 << 20)
# Other capacities for the same estimate (the fill view): a 2-core VM gets an unknown share of a shared L3, and
# other EPYC and Xeon generations have other L2 and L3 sizes; the trees pick the thresholds that fit the labels.
FILL_BYTES = (256 << 10, 512 << 10, 2 << 20, 4 << 20, 8 << 20, 16 << 20, 64 << 20)
# LLVM's full-unroll size budget at -O3 (LoopUnrollPass's aggressive threshold): a loop with a constant trip
# count whose unrolled size (trips x loop size) fits is unrolled away.  Our loop size is an estimate
# (`_iteration_size`); scripts/costmodel_unroll_check.py measures how often it agrees with clang's remarks.
UNROLL_BUDGET = 300
# The OpenMP threads every label was timed with (`Measurer`'s default; every data folder's config.json says 2): how
# a parallel loop's iterations are dealt out (`_busiest_share`).  A constant, like the caches, so that features do
# not depend on the machine that computes them.
THREADS = 2
# Points of a computation's domain `_busiest_share` counts on: ~4 ms to find them once per computation, then
# 0.3-1.5 ms a share (syrk's update), exact on domains this small or smaller.
BALANCE_POINTS = 20_000
LATCH_SIZE = 2.0  # a loop's own instructions: induction update, compare (the branch is free)

_SUBSCRIPT = re.compile(r"\[[^\[\]]*\]")
_CALL = re.compile(r"\b[a-z_]\w*\s*\(")


@dataclass(frozen=True)
class Tree:
    """One (program, schedule) as the model reads it: `comps` [n_statements, COMP_FEATURES] (program
    order), `structure` (nested tuples, module docstring) and `origin`, the program's untransformed tree
    (None on that tree itself)."""

    comps: np.ndarray
    structure: tuple
    origin: Tree | None = None
    # per computation, the share of its instances its busiest thread runs (`_busiest_share`; 1: serial); None on
    # trees made without the views
    busy: np.ndarray | None = None

    @property
    def anchor(self) -> Tree:
        """The untransformed program's tree (this one when it is that tree)."""
        return self.origin if self.origin is not None else self


def _children(st: State, prefix: tuple[int, ...], names: list[str]) -> tuple:
    """The node whose statements agree on `prefix` (betas of the loops above): its loops and
    computations, ordered by the next beta."""
    level = len(prefix)
    items: list[tuple[int, object]] = []
    loops: dict[int, list[str]] = {}
    for n in names:
        s = st[n]
        if s.depth == level:
            items.append((s.betas[level], n))
        else:
            loops.setdefault(s.betas[level], []).append(n)
    for beta, inside in loops.items():
        items.append((beta, ("L", *_children(st, prefix + (beta,), inside))))
    return tuple(child for _, child in sorted(items, key=lambda pair: pair[0]))


def loop_tree(prog: Program, st: State) -> tuple:
    """The loop tree of a replayed schedule (computations by index in program order)."""
    index = {s.name: k for k, s in enumerate(prog.statements)}

    def number(node):
        return index[node] if isinstance(node, str) else tuple(number(c) if c != "L" else c for c in node)

    return ("L", *(number(c) for c in _children(st, (), list(st))))


def _write_iterators(prog: Program, stmt: Statement) -> set[int]:
    """Indices of the iterators that appear in the write's subscripts."""
    mat = access_matrix(prog, stmt, stmt.write(set(prog.tensors)))
    row = MAX_ITERS + 2
    return {k for r in range(MAX_RANK) for k in range(MAX_ITERS) if mat[r * row + k] != 0}


def _loop_vector(prog: Program, st: State, name: str, levels: list[dict]) -> list[float]:
    """The loop nest vector of one computation (module docstring), padded to MAX_LOOPS; `levels`: its
    `loop_flags`."""
    s, stmt = st[name], prog.statement(name)
    written = _write_iterators(prog, stmt)
    out: list[float] = []
    for level, flags in enumerate(levels[:MAX_LOOPS]):
        names = [n for n, o in st.items() if o.depth > level and o.betas[: level + 1] == s.betas[: level + 1]]
        lo, hi = loop_bounds(prog, names, level, st)
        used = {k for k, c in enumerate(flags["row"]) if c != 0}
        tags = [flags["tile"] > 0, flags["point"], flags["parallel"], flags["unroll"] > 1, flags["interchanged"],
                flags["skewed"], flags["reversed"], bool(used) and not used & written]
        out += [1.0, squash(lo), squash(hi), squash(hi - lo + 1), squash(flags["tile"]), squash(flags["unroll"]),
                squash(len(names))] + [float(t) for t in tags] + list(flags["row"])
    return out + [0.0] * (MAX_LOOPS * LOOP_FEATURES - len(out))


def _access_vector(prog: Program, stmt: Statement) -> list[float]:
    """The assignment vector: write then distinct reads, each matrix + buffer id/flags/extents."""
    names = set(prog.tensors)
    order = list(prog.tensors)
    write = stmt.write(names)
    accesses = _accesses(prog, stmt)
    out: list[float] = []
    for acc in accesses[:MAX_ACCESSES]:
        shape = [squash(extent(e, prog.params)) for e in prog.tensors[acc.tensor].shape][:MAX_RANK]
        out += access_matrix(prog, stmt, acc) + [1.0, order.index(acc.tensor) / MAX_BUFFERS,
                                                 float(acc.tensor == write.tensor)]
        out += shape + [0.0] * (MAX_RANK - len(shape))
    return out + [0.0] * (MAX_ACCESSES * ACCESS_FEATURES - len(out))


def _accesses(prog: Program, stmt: Statement) -> list:
    """The write, then the distinct reads (the order of the assignment and locality vectors)."""
    names = set(prog.tensors)
    return [stmt.write(names)] + list({a.isl(): a for a in stmt.reads(names)}.values())


def _stride_maps(prog: Program, stmt: Statement) -> list[list[float]]:
    """Per access (up to MAX_ACCESSES): element offset of one unit of each original iterator
    (row-major strides times the access matrix's coefficient columns)."""
    out = []
    for acc in _accesses(prog, stmt)[:MAX_ACCESSES]:
        shape = [extent(e, prog.params) for e in prog.tensors[acc.tensor].shape]
        strides = [float(np.prod(shape[d + 1:])) for d in range(len(shape))]
        mat = access_matrix(prog, stmt, acc)
        row = MAX_ITERS + 2
        out.append([sum(mat[d * row + k] * strides[d] for d in range(min(len(shape), MAX_RANK)))
                    for k in range(MAX_ITERS)])
    return out


def _locality_vector(flags: list[dict], maps: list[list[float]]) -> list[float]:
    """Element stride of each access (`maps`, from `_stride_maps`) along the innermost and
    second-innermost loop (`flags`: the computation's `_flags`; module docstring)."""
    rows = [flags[-k]["step"] if len(flags) >= k else [0.0] * MAX_ITERS for k in range(1, STRIDE_LOOPS + 1)]
    along = [_strides_along(row, maps) for row in rows]  # [loop][access]
    out = [squash(along[k][a]) for a in range(len(maps)) for k in range(STRIDE_LOOPS)]
    return out + [0.0] * (LOCALITY_FEATURES - len(out))


def _streams(prog: Program, stmt: Statement, maps: list[list[float]]) -> list[tuple[list[float], int]]:
    """(element offset per original iterator, element bytes) of each access of the locality vector that
    moves differently: reads of one tensor that differ only in a constant offset (a stencil's neighbours)
    share their cache lines, so the traffic view counts them once."""
    seen: dict[tuple, tuple[list[float], int]] = {}
    for acc, m in zip(_accesses(prog, stmt), maps, strict=False):
        elem = 4 if prog.tensors[acc.tensor].dtype == "float" else 8
        seen.setdefault((acc.tensor, tuple(m)), (m, elem))
    return list(seen.values())


def _op_counts(prog: Program, stmt: Statement) -> tuple[list[int], bool]:
    """(+, -, *, /, math calls, reads, distinct reads of the right-hand side outside subscripts (offsets
    are not arithmetic), whether the statement is a reduction `x op= ...`)."""
    rhs = stmt.body.split("=", 1)[1] if "=" in stmt.body else stmt.expr
    bare = _SUBSCRIPT.sub("", rhs)
    reads = stmt.reads(set(prog.tensors))
    counts = [bare.count("+"), bare.count("-"), bare.count("*"), bare.count("/"), len(_CALL.findall(bare)),
              len(reads), len({a.isl() for a in reads})]
    return counts, re.match(r"^[^=]*[-+*/]=", stmt.body) is not None


def _op_vector(prog: Program, stmt: Statement) -> list[float]:
    """Operation counts (`_op_counts`), reduction, element type, original depth."""
    counts, reduction = _op_counts(prog, stmt)
    double = float(prog.tensors[stmt.write(set(prog.tensors)).tensor].dtype == "double")
    return [squash(c) for c in counts] + [float(reduction), double, squash(len(stmt.iterators))]


def _strides_along(step: list[float], maps: list[list[float]]) -> list[float]:
    """|element stride| of each access (`_stride_maps`) along a loop whose iteration moves the original
    iterators by `step` (`_flags`)."""
    return [abs(sum(c * m for c, m in zip(step, acc, strict=False))) for acc in maps]


def _flags(prog: Program, name: str, s) -> list[dict]:
    """`loop_flags` of computation `name`, each level with its "step" too: how one iteration of the loop moves
    the original iterators while the other loops stay put, what strides read (`_loop_steps`)."""
    levels = loop_flags(prog, name, s)
    steps = _loop_steps(tuple(tuple(f["row"]) for f in levels), tuple(f["tile"] for f in levels))
    for flags, step in zip(levels, steps, strict=True):
        flags["step"] = list(step)
    return levels


@functools.lru_cache(maxsize=65536)  # a search's children repeat their parent's nests
def _loop_steps(rows: tuple[tuple[float, ...], ...], tiles: tuple[int, ...]) -> tuple[tuple[float, ...], ...]:
    """Per loop, the move of the original iterators one of its iterations makes: the columns of the inverse of
    the loops' affine rows (tile loops aside: one moves as the point loop of its row, signed like its own row).
    The row itself for interchange and reversal; not under skewing: with j' = i + j innermost, a step of j'
    moves j by one (unit stride), not i and j both.  The rows themselves when they do not invert."""
    m = np.asarray(rows, dtype=np.float64)
    plain = [k for k, t in enumerate(tiles) if not t and m[k].any()]
    used = np.flatnonzero(np.abs(m[plain]).sum(axis=0)) if plain else np.zeros(0, dtype=int)
    square = m[np.ix_(plain, used)]
    if len(plain) != len(used) or not plain or abs(np.linalg.det(square)) < 1e-9:
        return rows
    inverse, steps = np.linalg.inv(square), m.copy()
    for j, k in enumerate(plain):
        steps[k] = 0.0
        steps[k, used] = np.round(inverse[:, j], 9)
    for k in (k for k, t in enumerate(tiles) if t):
        for p in plain:
            if (m[p] == m[k]).all():
                steps[k] = steps[p]
            elif (m[p] == -m[k]).all():
                steps[k] = -steps[p]
    return tuple(tuple(float(x) + 0.0 for x in step) for step in steps)


def _iteration_size(moving: list[float], ops: float, single: bool) -> float:
    """Estimated LLVM IR size of one statement instance in its innermost loop, from the |strides| along that
    loop (write first), its arithmetic and whether its tensors are float: an address and a load or store per
    access that moves (LICM hoists what does not move and promotes an invariant write to a register), a
    quarter per operation (invariant arithmetic is hoisted too), and for float tensors half an instruction
    per access for the conversions to and from double (the constants are double).  Fitted with `LATCH_SIZE`
    against clang's full-unroll remarks (scripts/costmodel_unroll_check.py; docs/results/costmodel/)."""
    return 2.0 * sum(1 for x in moving if x) + 0.25 * ops + (0.5 * len(moving) if single else 0.0)


def _loop_members(st: State, name: str, level: int) -> list[str]:
    """The statements inside computation `name`'s loop at `level`."""
    me = st[name]
    return [n for n, o in st.items() if o.depth > level and o.betas[: level + 1] == me.betas[: level + 1]]


def _unrolled(st: State, name: str, levels: list[dict], trips: Callable[[int], tuple[int, bool]],
              sizes: Callable[[str], float]) -> tuple[int, float]:
    """(how many of `name`'s innermost loops LLVM's full unroller removes, the unrolled size it weighed for
    the innermost): a loop goes when its trip count is constant, no unroll pragma asks otherwise, everything
    in it sits in the loops already removed, and trips x size fits `UNROLL_BUDGET`.  `sizes`: each
    statement's `_iteration_size` in its innermost loop; `trips(level)`: (most trips, constant)."""
    depth = len(levels)
    inner = _loop_members(st, name, depth - 1)
    if any(st[n].depth > depth for n in inner):
        return 0, 0.0
    size = sum(sizes(n) for n in inner) + LATCH_SIZE
    first, removed = 0.0, 0
    for level in range(depth - 1, -1, -1):
        if level < depth - 1 and set(_loop_members(st, name, level)) != set(inner):
            break
        trip, constant = trips(level)
        cost = trip * size
        first = first or cost
        if not constant or levels[level]["unroll"] > 1 or cost > UNROLL_BUDGET:
            break
        removed, size = removed + 1, cost + LATCH_SIZE
    return removed, first


def _compiler_vector(prog: Program, st: State, name: str, levels: list[dict], maps: list[list[float]],
                     sizes: Callable[[str], float], carried: Callable[[set[str], int], bool]) -> list[float]:
    """The compiler view of computation `name` (`COMPILER_NAMES`; module docstring): innermost trip count, its
    unrolled size, whether it is unrolled away, how many loops are; then for the loop left innermost (V, the
    one LLVM's loop vectorizer looks at; none when another loop still sits inside it): present, trip count,
    largest element stride of an access along it, all strides 0 or +-1, the write moves along it, it
    carries a dependence (`carried(statements in V, level)`), and the vectorizer's case: the write moves
    and nothing is carried (clang gathers non-unit strides on this machine, so strides do not decide)."""
    if not levels:
        return [0.0] * COMPILER_FEATURES

    def trips(level: int) -> tuple[int, bool]:  # isl work: only for the loops the answer needs
        return trip_count(prog, _loop_members(st, name, level), level, st)

    removed, size = _unrolled(st, name, levels, trips, sizes)
    out = [squash(trips(len(levels) - 1)[0]), squash(size), float(removed > 0), removed / 2]
    v = len(levels) - 1 - removed
    names = set(_loop_members(st, name, v)) if v >= 0 else set()
    if not names or any(st[n].depth != len(levels) for n in names):
        return out + [0.0] * (COMPILER_FEATURES - len(out))
    strides = _strides_along(levels[v]["step"], maps)
    moves = bool(strides) and strides[0] != 0
    dep = carried(names, v)
    return out + [1.0, squash(trips(v)[0]), squash(max(strides, default=0.0)), float(all(x <= 1 for x in strides)),
                  float(moves), float(dep), float(moves and not dep)]


def _level_trips(prog: Program, st: State, name: str, levels: list[dict]) -> list[float]:
    """Iterations of each of computation `name`'s loops per entry, from the bounds the loop vector already
    asked isl for (memoized): a tile loop's bounds count tiles, a point loop runs its range over that many
    (on average: at most the tile's size), so that a tiled nest runs as many iterations as the original; any
    other loop runs the mean of its fewest and most iterations per entry, by isl (a skewed loop's bounds span
    every entry's range, j + i over all i and j, twice j's; a triangular loop j <= i runs N / 2 on average)."""
    out = []
    for level, flags in enumerate(levels):
        members = _loop_members(st, name, level)
        # a point loop's tile loop reads the same affine row (or its negation: either was reversed); so does a
        # point loop skewed by a tile loop, `(i) + 1 * (floor((j)/64))` (the row leaves out the floor, and
        # `loop_flags` does not call it a point loop)
        tiles = [k for k, f in enumerate(levels[:level]) if f["tile"] and f["row"] in _either_sign(flags["row"])]
        if flags["tile"] or tiles:
            lo, hi = loop_bounds(prog, members, level, st)
            trips = hi - lo + 1
            if not flags["tile"]:  # its range shared out over the tiles: 153 values in tiles of 128 run 76.5 a tile
                trips = min(trips / out[tiles[-1]], levels[tiles[-1]]["tile"])
        elif (any(f["skewed"] for f in levels[: level + 1]) or not all(rectangular(prog.statement(n)) for n in members)
              or any("floor" in e for n in members for e in st[n].loops[: level + 1])):
            # skewed or under a skewed loop (a parallelogram's rows vary), triangular, or under tiles (which a skew
            # may have hidden from `loop_flags`, so that a tile bounds a loop it does not know as its point loop)
            low, high = trip_range(prog, members, level, st)
            trips = (low + high) / 2
        else:  # a box: every entry runs the whole range (isl's per-entry count costs a fifth of the featurizing)
            lo, hi = loop_bounds(prog, members, level, st)
            trips = hi - lo + 1
        out.append(max(trips, 1))
    return out


def _blocks(strides: list[float], trips: list[float], elem: int, unit: int) -> float:
    """Distinct `unit`-byte blocks one access touches over loops with these element strides and trips, the
    fewer of two counts that each overcount a case the other gets right: (a) a loop that steps a block or more
    multiplies them, the smaller steps widen one contiguous span (right for A[i + j], but it takes a loop
    stepping 2 rows - 1 element inside a run of rows, as a skewed loop does, for new blocks every time); (b)
    every iteration a new element, packed as densely as the gcd of the strides allows (right for an access that
    tells its iterations apart, skewed or not)."""
    blocks, span = 1.0, float(elem)
    moving = [(stride, trip) for stride, trip in zip(strides, trips, strict=True) if stride and trip > 1]
    for stride, trip in moving:
        if stride * elem >= unit:
            blocks *= trip
        else:
            span += stride * elem * (trip - 1)
    counted = blocks * math.ceil(span / unit)
    if not moving:
        return counted
    grain = math.gcd(*(round(stride) for stride, _ in moving))
    return min(counted, math.ceil(math.prod(trip for _, trip in moving) * min(1.0, grain * elem / unit)))


def _steps(levels: list[dict], accesses: list[tuple[list[float], int]]) -> list[list[float]]:
    """[level][access]: the element offset one iteration of each loop moves each access by; a tile loop's row is
    its point loop's, and one of its steps moves a whole tile."""
    return [[x * max(flags["tile"], 1) for x in _strides_along(flags["step"], [m for m, _ in accesses])]
            for flags in levels]


def _spans(along: list[list[float]], trips: list[float], accesses: list[tuple[list[float], int]]) -> list[float]:
    """[first]: the bytes of cache lines the loops from level `first` inwards touch in one run of them."""
    depth = len(along)
    return [LINE_BYTES * sum(_blocks([along[lv][a] for lv in range(first, depth)], trips[first:], elem, LINE_BYTES)
                             for a, (_, elem) in enumerate(accesses)) for first in range(depth)]


def _traffic_vector(levels: list[dict], trips: list[float], accesses: list[tuple[list[float], int]],
                    along: list[list[float]], spans: list[float]) -> list[float]:
    """The traffic view of one computation (`TRAFFIC_NAMES`; module docstring) from its `_flags`, each loop's
    trips (`_level_trips`), its distinct accesses (element offset per original iterator, `_stride_maps`, and
    element bytes), their steps along each loop (`_steps`) and the loops' spans (`_spans`): new cache lines per
    innermost iteration, pages the innermost loop's run touches, and bytes of cache lines under the innermost 1,
    2, 3 loops and the whole nest."""
    if not levels:
        return [0.0] * TRAFFIC_FEATURES
    depth = len(levels)
    pages = sum(_blocks([along[-1][a]], trips[-1:], elem, PAGE_BYTES) for a, (_, elem) in enumerate(accesses))
    lines = sum(min(1.0, along[-1][a] * elem / LINE_BYTES) for a, (_, elem) in enumerate(accesses))
    return [lines, squash(pages)] + [squash(spans[max(depth - k, 0)]) for k in (1, 2, 3, depth)]


def _memory_vector(trips: list[float], spans: list[float], caches: tuple[int, ...] = CACHE_BYTES) -> list[float]:
    """The memory view of one computation (`MEMORY_NAMES`; module docstring), from its loops' trips and spans
    (`_level_trips`, `_spans`): for each cache of `caches` (CACHE_BYTES; FILL_BYTES: the fill view), the bytes one
    run of the whole nest brings into it, by reuse distance (LRU, no conflict misses).  When the run of the loop at level f touches no more lines than the cache holds, one
    iteration of the loop around it finds the lines of the iteration before still there, so that loop's run
    brings each of its lines in once, and again on every iteration of the loops around it; take the outermost
    such f.  When not even the innermost loop's run fits, its lines are brought in on every run."""
    if not spans:
        return [0.0] * len(caches)
    depth, out = len(spans), []
    for cap in caches:
        fits = next((f for f in range(depth) if spans[f] <= cap), None)
        first = depth - 1 if fits is None else max(fits - 1, 0)
        out.append(squash(spans[first] * math.prod(trips[:first])))
    return out


def _invariance_vector(trips: list[float], along: list[list[float]], rereads: bool) -> list[float]:
    """The invariance view of one computation (`INVARIANCE_NAMES`; module docstring), from its loops' trips and
    steps (`_level_trips`, `_steps`): whether the innermost loop moves none of its accesses; the iterations LLVM
    removes, the trips of the innermost loops that move no access (0 when the statement reads the tensor it
    writes: then each iteration depends on the one before); and the trips of every loop that moves no access (the
    work repeated in vain, wherever the schedule puts it)."""
    still = [not any(steps) for steps in along]
    inner = 0
    while inner < len(still) and still[len(still) - 1 - inner]:
        inner += 1
    removed = math.prod(trips[len(trips) - inner:]) if inner and not rereads else 0.0
    redundant = math.prod(t for t, s in zip(trips, still, strict=True) if s)
    return [float(bool(still) and still[-1]), squash(removed), squash(redundant)]


def _parallel_level(st: State, name: str, levels: list[dict]) -> int | None:
    """The level of the loop that runs computation `name` under `omp parallel for`, as `emit` decides it: the
    outermost of its parallel loops whose statements are all parallel there and that runs an iterator
    (`_runs_iterator`: isl prints a constant level as no loop or a degenerate one, without the pragma); None
    when it runs serially."""
    for level, flags in enumerate(levels):
        if (flags["parallel"] and _runs_iterator(levels, level)
                and all(level in st[n].parallel for n in _loop_members(st, name, level))):
            return level
    return None


def _runs_iterator(levels: list[dict], level: int) -> bool:
    """Whether the loop at `level` runs values of its own: not when its affine row is zero (a constant level),
    nor when it is a tile loop moved inside its own point loop (whose value then fixes the tile's: isl prints
    no loop for it)."""
    row = levels[level]["row"]
    if not any(row):
        return False
    return not (levels[level]["tile"] and any(not f["tile"] and f["row"] in _either_sign(row) for f in levels[:level]))


def _either_sign(row: list[float]) -> tuple[list[float], list[float]]:
    """An affine row and its negation: a reversed loop runs the same axis."""
    return row, [-x + 0.0 for x in row]


def _parallel_vector(level: int | None, trips: list[float]) -> list[float]:
    """The parallel view of one computation (`PARALLEL_NAMES`; module docstring) from its parallel loop's `level`
    (`_parallel_level`) and each loop's trips (`_level_trips`): in a parallel region, how many times the region
    is entered (the product of the trips of the loops around it: one fork and join each), its trip count, and
    the iterations of the whole nest below the region's entry (the work one fork shares out)."""
    if level is None:
        return [0.0] * PARALLEL_FEATURES
    return [1.0, squash(math.prod(trips[:level])), squash(trips[level]), squash(math.prod(trips[level:]))]


def _domain_points(prog: Program, stmt: Statement) -> dict[str, np.ndarray] | None:
    """Up to `BALANCE_POINTS` points of `stmt`'s domain, {iterator: values}: the points of a grid over the domain's
    bounding box (evenly spaced values of each iterator) that the domain holds.  None when the domain is empty or
    not plain arithmetic (`_evaluate`)."""
    ranges = [iterator_range(prog, stmt, d) for d in range(len(stmt.iterators))]
    if not ranges or any(low > high for low, high in ranges):
        return None
    per_axis = max(2, int(BALANCE_POINTS ** (1.0 / len(ranges))))
    axes = [np.unique(np.linspace(low, high, min(per_axis, high - low + 1)).round().astype(np.int64))
            for low, high in ranges]
    grid = dict(zip(stmt.iterators, (a.ravel() for a in np.meshgrid(*axes, indexing="ij")), strict=True))
    try:
        inside = np.broadcast_to(_evaluate(stmt.domain, {**prog.params, **grid}), grid[stmt.iterators[0]].shape)
    except (SyntaxError, ValueError, KeyError, ZeroDivisionError):
        return None
    return {name: values[inside] for name, values in grid.items()} if inside.any() else None


def _busiest_share(prog: Program, points: dict[str, np.ndarray] | None, loops: list[str], level: int) -> float:
    """The share of a computation's instances that the busiest of `THREADS` threads runs when the loop at `level`
    of its transformed `loops` is its `omp parallel for`: each entry of the region (the loops outside it) deals that
    loop's iterations out in `THREADS` contiguous chunks (OpenMP's static schedule) and waits for the slowest
    thread, so the share is the sum over entries of the busiest chunk's instances over all instances: 1/THREADS
    when every iteration does as much work, 3/4 for the outer loop of a triangle.  Counted on the computation's
    `_domain_points`, so it is an estimate; 1/THREADS where those or a loop are not plain arithmetic."""
    if points is None:
        return 1.0 / THREADS
    size = len(next(iter(points.values())))
    try:
        values = [np.broadcast_to(_evaluate(loop, {**prog.params, **points}), (size,)) for loop in loops[: level + 1]]
    except (SyntaxError, ValueError, KeyError, ZeroDivisionError):
        return 1.0 / THREADS
    entry = np.zeros(size, np.int64)
    for outer in values[:level]:  # one id per distinct tuple of the outer loops' values, 0.. in sorted order
        ids = np.unique(outer, return_inverse=True)[1].ravel()
        entry = np.unique(entry * (int(ids.max()) + 1) + ids, return_inverse=True)[1].ravel()
    order = np.argsort(entry, kind="stable")
    value, entry = values[level][order], entry[order]
    starts = np.flatnonzero(np.r_[True, entry[1:] != entry[:-1]])
    low, high = np.minimum.reduceat(value, starts), np.maximum.reduceat(value, starts)
    chunk = np.ceil((high - low + 1) / THREADS)
    thread = ((value - low[entry]) // chunk[entry]).astype(np.int64).clip(0, THREADS - 1)
    work = np.bincount(entry * THREADS + thread, minlength=len(starts) * THREADS).reshape(-1, THREADS)
    return float(work.max(axis=1).sum() / size)


def _balance(prog: Program) -> Callable[[int, tuple[str, ...]], float]:
    """`_busiest_share` of computation k (by index) under its loops down to the parallel one, kept by exactly what it
    reads: a search's children mostly change other loops.  The domain's points are found on the first question."""
    points: dict[int, dict | None] = {}
    shares: dict[tuple, float] = {}

    def share(k: int, loops: tuple[str, ...]) -> float:
        if (k, loops) not in shares:
            if k not in points:
                points[k] = _domain_points(prog, prog.statements[k])
            shares[k, loops] = _busiest_share(prog, points[k], list(loops), len(loops) - 1)
        return shares[k, loops]

    return share


_OPERATORS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
              ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Lt: operator.lt, ast.LtE: operator.le,
              ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Eq: operator.eq, ast.USub: operator.neg,
              ast.UAdd: operator.pos}


def _evaluate(text: str, names: dict):
    """A domain (`0 <= i < N and 0 <= j <= i`) or loop expression (`floor((j)/128) + k`) of `names` (parameters
    and numpy arrays of iterator values), elementwise: arithmetic, comparisons, `and` and `floor` only, so that a
    program's text is never run as code.  ValueError for anything else."""
    def value(node):
        if isinstance(node, ast.Expression):
            return value(node.body)
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
            return functools.reduce(np.logical_and, (value(v) for v in node.values))
        if isinstance(node, ast.Compare):
            left, out = value(node.left), True
            for op, right in zip(node.ops, node.comparators, strict=True):
                right = value(right)
                out = np.logical_and(out, _OPERATORS[type(op)](left, right))
                left = right
            return out
        if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
            return _OPERATORS[type(node.op)](value(node.left), value(node.right))
        if isinstance(node, ast.UnaryOp) and type(node.op) in _OPERATORS:
            return _OPERATORS[type(node.op)](value(node.operand))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "floor" \
                and len(node.args) == 1 and not node.keywords:
            return np.floor(value(node.args[0]))
        if isinstance(node, ast.Name):
            return names[node.id]
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            return node.value
        raise ValueError(f"not plain arithmetic: {ast.dump(node)[:60]}")

    return value(ast.parse(text.strip(), mode="eval"))


def fork_load(tree: Tree) -> float:
    """How many parallel regions `tree` enters per iteration of its untransformed program: the sum over its
    computations of the parallel view's forks over the sum of the untransformed computations' iterations (the
    product of their loops' extents: that tree has no tiles).  A fork and join costs about a thousand loop
    iterations on our machines (docs/results/costmodel/, fiftieth session), so a load near 1e-3 is a 2x
    slowdown and near 1e-1 a 100x one (`model.ModelConfig.fork_term`)."""
    tag, forks = TRAFFIC_VIEW_FEATURES, TRAFFIC_VIEW_FEATURES + PARALLEL_NAMES.index("forks")
    entered = [_unsquash(c[forks]) for c in tree.comps if c[tag] > 0.5]
    if not entered:
        return 0.0
    return float(sum(entered) / max(_iterations(tree.anchor.comps).sum(), 1.0))


def removal_left(tree: Tree) -> float:
    """The share of the untransformed program's iterations `tree` still runs once LLVM deletes the innermost loops
    that move no access (the invariance view's removed trips): the sum over computations of their work share
    (`work_shares`) over their removed trips (1 where none are).  Iterations stand for time, as in `changed_share`."""
    removed = np.maximum(_unsquash(tree.comps[:, FILL_VIEW_FEATURES + INVARIANCE_NAMES.index("removed_trips")]), 1.0)
    return float(np.sum(work_shares(tree.anchor.comps) / removed))


def changed_share(tree: Tree) -> float:
    """The share of the untransformed program's iterations that run in computations whose vectors `tree`'s schedule
    changed (0 for the untransformed tree itself).  A computation's vector reads its own schedule and that of every
    statement under its outermost loop (`_comp_key`), so one the schedule leaves unchanged runs its loops as before:
    by Amdahl's law, the rest of the program is all the schedule can speed up or slow down.  Iterations (the
    product of the loops' extents) stand for time; per-iteration costs differ by a few times."""
    if tree.origin is None:
        return 0.0
    origin = tree.origin.comps
    work = _iterations(origin)
    return float(work[np.any(tree.comps != origin, axis=1)].sum() / max(work.sum(), 1.0))


def work_shares(comps: np.ndarray) -> np.ndarray:
    """Each computation's share of an untransformed tree's iterations (`_iterations`; they sum to 1)."""
    work = _iterations(comps)
    return work / max(work.sum(), 1.0)


def _iterations(comps: np.ndarray) -> np.ndarray:
    """Each computation's iterations in an untransformed tree's vectors: the product of its loops' extents (that
    tree has no tiles)."""
    loops = comps[:, : MAX_LOOPS * LOOP_FEATURES].reshape(len(comps), MAX_LOOPS, LOOP_FEATURES)
    return np.where(loops[..., LOOP_PRESENT] > 0.5, _unsquash(loops[..., LOOP_EXTENT]), 1.0).prod(axis=1)


def _unsquash(x):
    """The inverse of `squash` for non-negative values (in float64: extents reach 2^22)."""
    return 2.0 ** (16.0 * np.asarray(x, dtype=np.float64)) - 1.0


def _kept_flags(prog: Program) -> Callable[[str, object], list[dict]]:
    """`_flags` of `prog`'s statements, each kept by what `loop_flags` reads of the statement's schedule: a search's
    children share most of their parent's, and the compiler view asks again for every statement under the same
    loop (`featurizer`'s `_size`).  The lists are shared: nothing changes them."""
    kept: dict[tuple, list[dict]] = {}

    def flags(name: str, s) -> list[dict]:
        key = (name, tuple(s.loops), tuple(sorted(s.parallel)), s.unroll)
        if key not in kept:
            kept[key] = _flags(prog, name, s)
        return kept[key]

    return flags


def featurizer(prog: Program, compiler_view: bool = True) -> Callable[[State], Tree]:
    """The model's input for replayed schedules of `prog`: the assignment and operation vectors do
    not depend on the schedule, so they are computed once here (most of the time otherwise).  A
    computation's vector is kept by what it reads (`_comp_key`): a search's children differ from
    their parent in one branch, so most of their computations' vectors were already made.  Without
    `compiler_view` the features past the plain ones (all views) are zeros: the isl work behind the compiler
    view (trip counts, dependences) is most of the featurizing time, wasted on a model that does not read
    them (`model.model_featurizer`)."""
    static = [_access_vector(prog, s) + _op_vector(prog, s) for s in prog.statements]
    maps = [_stride_maps(prog, s) for s in prog.statements]
    ops = {s.name: float(sum(_op_counts(prog, s)[0][:5])) for s in prog.statements}
    index = {s.name: k for k, s in enumerate(prog.statements)}
    single = {s.name: prog.tensors[s.write(set(prog.tensors)).tensor].dtype == "float" for s in prog.statements}
    streams = [_streams(prog, s, m) for s, m in zip(prog.statements, maps, strict=True)]
    rereads = [s.write(set(prog.tensors)).tensor in {a.tensor for a in s.reads(set(prog.tensors))}
               for s in prog.statements]
    made: dict[tuple, tuple[list[float], float]] = {}  # a computation's vector and its busiest thread's share
    share = _balance(prog)
    deps: list = []  # the program's dependences, computed on the first question
    carried: dict[tuple, bool] = {}
    among: dict[frozenset, object] = {}  # the dependences among a loop's statements, per set of statements
    flags = _kept_flags(prog)

    def comp(k: int, st: State) -> tuple[list[float], float]:
        """Computation `k`'s vector and its busiest thread's share (`Tree.busy`), made if new."""
        name = prog.statements[k].name
        key = _comp_key(name, st)
        if key not in made:
            levels = flags(name, st[name])
            vector = _loop_vector(prog, st, name, levels) + static[k] + _locality_vector(levels, maps[k])
            if not compiler_view:
                made[key] = (vector + [0.0] * (COMP_FEATURES - PLAIN_FEATURES), 1.0)
            else:
                level = _parallel_level(st, name, levels)
                made[key] = (vector + views(st, name, levels, k, level),
                             1.0 if level is None else share(k, tuple(st[name].loops[: level + 1])))
        return made[key]

    def views(st: State, name: str, levels: list[dict], k: int, level: int | None) -> list[float]:
        trips = _level_trips(prog, st, name, levels)
        along = _steps(levels, streams[k])
        spans = _spans(along, trips, streams[k])  # what the traffic and memory views both read
        return (_compiler_vector(prog, st, name, levels, maps[k], lambda n: _size(st, n),
                                 lambda names, level: _carries(st, names, level))
                + _traffic_vector(levels, trips, streams[k], along, spans)
                + _parallel_vector(level, trips) + _memory_vector(trips, spans)
                + _memory_vector(trips, spans, FILL_BYTES) + _invariance_vector(trips, along, rereads[k]))

    def _size(st: State, n: str) -> float:
        step = flags(n, st[n])[-1]["step"]
        return _iteration_size(_strides_along(step, maps[index[n]]), ops[n], single[n])

    def _carries(st: State, names: set[str], level: int) -> bool:
        # whether the loop at `level` carries a dependence reads only the time dimensions up to it
        key = (level, tuple((n, tuple(st[n].betas[: level + 1]), tuple(st[n].loops[: level + 1])) for n in sorted(names)))
        if key not in carried:
            if not deps:
                deps.append(dependences(prog).all)
            group = frozenset(names)
            if group not in among:
                among[group] = restrict(deps[0], names, prog)
            carried[key] = loop_carries(prog, st, among[group], names, level)
        return carried[key]

    def tree(st: State, origin: Tree | None = None) -> Tree:
        vectors, shares = zip(*(comp(k, st) for k in range(len(prog.statements))), strict=True)
        return Tree(np.array(vectors, dtype=np.float32), loop_tree(prog, st), origin,
                    np.array(shares, dtype=np.float32) if compiler_view else None)

    origin = tree(state(prog, Schedule()))  # its vectors are kept too: the children reuse them
    return lambda st: tree(st, origin)


def _comp_key(name: str, st: State) -> tuple:
    """Everything computation `name`'s vectors read: its own schedule (loops, parallel levels, unroll factor) and
    the loops and parallel levels of every statement under its outermost loop (the loops it shares, their
    bounds, statement counts and whether `emit` makes them parallel, are theirs too)."""
    me = st[name]
    return (name, tuple(sorted(me.parallel)), me.unroll,
            tuple((n, tuple(o.betas), tuple(o.loops), tuple(sorted(o.parallel)))
                  for n, o in st.items() if o.betas[:1] == me.betas[:1]))


def featurize(prog: Program, schedule: Schedule) -> Tree:
    """The model's input for `schedule` of `prog` (module docstring); ScheduleError if it does not apply."""
    return featurizer(prog)(state(prog, schedule))
