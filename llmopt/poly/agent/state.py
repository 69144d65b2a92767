"""Pearl's graph state of a position: loop, computation and buffer nodes, their edges (Pearl §4.1).

One homogeneous `torch_geometric.data.Data` per state, node types as one-hots.  Why not
`HeteroData`: Pearl's own AST puts iterators and computations into one fixed-size vector with a
type tag, and Table 3.2's backbone is two plain GATv2 layers over one feature matrix; a
heterogeneous graph would need one convolution per edge type (`to_hetero`), several times the
parameters, and more code in every PPO minibatch.  Each node type fills its own section of the
vector and leaves the others zero, so nothing is lost by sharing one matrix.

Nodes, in this order (`data.node_type`: 0 loop, 1 computation, 2 buffer):

- loop: one per loop of the replayed schedule (a loop shared by several statements is one node):
  level (one-hot), lower/upper bound and extent over the iteration domain (exact, by isl), the
  loop's affine row over its statement's iterators, and what was done to it so far: tiled (tile
  loop / point loop, tile size), parallel, unrolled (factor), interchanged, skewed, reversed, and
  the focus tag (the loop belongs to the targeted branch); then the work under the loop (below);
- computation: depth, position, element type, operation counts, focus tag, and the access
  matrices (rows = tensor dimensions, columns = iterator coefficients, constant, quasi-affine
  flag) of its write and of its first `MAX_READS` distinct reads; then its work (below);
- buffer: rank, extents, element type, written or only read.

Work (not in Pearl's features; added because imitation on ~150 programs did not learn when
parallelization pays, docs/results/pearl/imitation/): a statement's instances (the product of its
domain's bounding box: exact for rectangular domains, at most a few times high for triangular ones;
isl's exact count enumerates points and takes a second on doitgen) and its share of the program's
work (instances x (1 + operations)); a loop node carries the same two for the statements it holds.
A message-passing network sees extents only of the loops two edges away, and multiplying them
across a nest is what it would have to learn from a few hundred programs.

Edges (`data.edge_attr`: relation one-hot, a reverse flag, the access matrix on access edges):
loop -> nested loop, innermost loop -> computation, buffer -> reading computation, computation ->
written buffer, and each edge reversed (Pearl's graphs are undirected).  Numbers that span orders
of magnitude (bounds, extents, constants) enter as sign * log2(1 + |x|) / 16.
"""

from __future__ import annotations

import functools
import math
import re

import islpy as isl
import torch
from torch_geometric.data import Data

from llmopt.poly.agent.walk import Position
from llmopt.poly.polyhedral import domain, params_prefix, tuple_of
from llmopt.poly.program import Program, Statement, extent
from llmopt.poly.schedule import State, StmtSchedule, branches, state

MAX_LEVELS = 8  # loop levels told apart by the level one-hot (tiling adds levels)
MAX_ITERS = 5  # iterator columns of an access matrix / loop row (Pearl's actions reach level 4)
MAX_RANK = 4  # tensor dimensions (rows of an access matrix)
MAX_READS = 4  # distinct read matrices in a computation's features (all of them are on edges)
ROW = MAX_ITERS + 2  # iterator coefficients, constant, quasi-affine flag
MATRIX = MAX_RANK * ROW

WORK_F = 2  # squash(instances), share of the program's work
LOOP_F = MAX_LEVELS + 3 + MAX_ITERS + 10 + WORK_F
COMP_F = 7 + MATRIX * (1 + MAX_READS) + WORK_F
BUF_F = 4 + MAX_RANK
N_TYPES = 3
NODE_FEATURES = N_TYPES + LOOP_F + COMP_F + BUF_F
RELATIONS = ("nest", "contains", "reads", "writes")
EDGE_FEATURES = len(RELATIONS) + 1 + MATRIX

LOOP_MARKS = ("tiled", "point", "tile_size", "parallel", "unroll", "interchanged", "skewed", "reversed", "focus",
              "innermost")
LOOP_COLUMNS = {name: N_TYPES + MAX_LEVELS + 3 + MAX_ITERS + k for k, name in enumerate(LOOP_MARKS)}
LOOP_COLUMNS.update(lower=N_TYPES + MAX_LEVELS, upper=N_TYPES + MAX_LEVELS + 1, extent=N_TYPES + MAX_LEVELS + 2,
                    instances=N_TYPES + LOOP_F - WORK_F, work_share=N_TYPES + LOOP_F - WORK_F + 1)
COMP_FOCUS = N_TYPES + LOOP_F + 6  # column of a computation's focus tag
COMP_WORK = N_TYPES + LOOP_F + COMP_F - WORK_F  # columns of a computation's instances and work share

_FLOOR = re.compile(r"^floor\(\((.*)\)/(\d+)\)$")
_NEGATED = re.compile(r"^-\((.*)\)$")  # a reversed loop (`schedule.Reversal`)
_memo: dict[tuple, object] = {}  # program-only facts (access matrices, bounds), keyed by program hash


def squash(x: float) -> float:
    """sign(x) * log2(1 + |x|) / 16: bounds and extents from 1 to 10^4 land in [0, 1]."""
    return math.copysign(math.log2(1 + abs(x)) / 16, x)


def _memoized(key: tuple, compute):
    if key not in _memo:
        if len(_memo) > 100_000:
            _memo.clear()
        _memo[key] = compute()
    return _memo[key]


def _affine_row(prog: Program, stmt: Statement, expr: str) -> list[float]:
    """[coefficients of the iterators (padded), constant (params folded in), quasi-affine flag]."""
    text = f"{params_prefix(prog)}{{ {tuple_of(stmt)} -> [({expr})] }}"
    return _rows(prog, stmt, isl.Map(text))[0]


def _rows(prog: Program, stmt: Statement, imap: isl.Map) -> list[list[float]]:
    pieces: list = []
    isl.PwMultiAff.from_map(imap).foreach_piece(lambda _s, ma: pieces.append(ma))
    ma, out = pieces[0], []
    for k in range(ma.dim(isl.dim_type.out)):
        aff = ma.get_at(k)
        coef = [aff.get_coefficient_val(isl.dim_type.in_, d).to_python() for d in range(len(stmt.iterators))]
        const = aff.get_constant_val().to_python() + sum(
            aff.get_coefficient_val(isl.dim_type.param, p).to_python() * v for p, v in enumerate(prog.params.values()))
        coef = (coef + [0] * MAX_ITERS)[:MAX_ITERS]
        out.append([float(c) for c in coef] + [squash(const), float(aff.dim(isl.dim_type.div) > 0)])
    return out


def access_matrix(prog: Program, stmt: Statement, access) -> list[float]:
    """The flattened, padded access matrix of one access (MAX_RANK x ROW)."""
    def compute():
        text = f"{params_prefix(prog)}{{ {tuple_of(stmt)} -> {access.isl()} }}"
        rows = _rows(prog, stmt, isl.Map(text))[:MAX_RANK]
        flat = [v for r in rows for v in r]
        return flat + [0.0] * (MATRIX - len(flat))
    return _memoized(("access", prog.hash(), stmt.name, access.isl()), compute)


def _loop_values(prog: Program, names: list[str], dims) -> isl.UnionSet:
    """The values of the loop expressions `dims(name)` (isl tuple text) over the domains of statements `names`."""
    ranges = None
    for n in names:
        stmt = prog.statement(n)
        text = f"{params_prefix(prog)}{{ {tuple_of(stmt)} -> [{dims(n)}] }}"
        r = isl.UnionMap(text).intersect_domain(domain(prog, stmt)).range()
        ranges = r if ranges is None else ranges.union(r)
    return ranges


def loop_bounds(prog: Program, names: list[str], level: int, st: State) -> tuple[int, int]:
    """Exact (min, max) of the loop's value over the iteration domains of the statements in it."""
    key = ("bounds", prog.hash(), level, tuple((n, st[n].loops[level]) for n in names))
    return _memoized(key, lambda: _iterator_bounds(prog, names, level, st) or _isl_bounds(prog, names, level, st))


def _isl_bounds(prog: Program, names: list[str], level: int, st: State) -> tuple[int, int]:
    box = _loop_values(prog, names, lambda n: f"({st[n].loops[level]})").as_set()
    if box.is_empty():
        return 0, 0
    return box.dim_min_val(0).to_python(), box.dim_max_val(0).to_python()


def _iterator_bounds(prog: Program, names: list[str], level: int, st: State) -> tuple[int, int] | None:
    """`loop_bounds` from the domains' own ranges where every statement's loop at `level` runs one of its iterators
    (maybe reversed, maybe more than once); None otherwise."""
    lows, highs = [], []
    for n in names:
        stmt = prog.statement(n)
        it, sign = _negations(st[n].loops[level])
        negated = sign < 0
        if it not in stmt.iterators:
            return None
        low, high = iterator_range(prog, stmt, stmt.iterators.index(it))
        if low > high:  # an empty domain adds no values
            continue
        lows.append(-high if negated else low)
        highs.append(-low if negated else high)
    return (min(lows), max(highs)) if lows else (0, 0)


def trip_count(prog: Program, names: list[str], level: int, st: State) -> tuple[int, bool]:
    """(the most iterations the loop at `level` around statements `names` makes per entry, whether every
    entry makes that many: a constant trip count, which LLVM needs to unroll a loop away).  Exact, by isl:
    a tile's point loop is constant only when the tiles divide its range, a skewed loop only when the skew
    shifts its bounds together."""
    low, high = trip_range(prog, names, level, st)
    return high, low == high


def trip_range(prog: Program, names: list[str], level: int, st: State) -> tuple[int, int]:
    """(the fewest, the most) iterations the loop at `level` around statements `names` makes per entry, over
    its entries (`trip_count`; a triangular loop `j <= i` runs 1 to N)."""
    key = ("trip range", prog.hash(), level, tuple((n, tuple(st[n].loops[: level + 1])) for n in names))
    return _memoized(key, lambda: _box_trips(prog, names, level, st) or _isl_trip_range(prog, names, level, st))


def _isl_trip_range(prog: Program, names: list[str], level: int, st: State) -> tuple[int, int]:
    points = _loop_values(prog, names, lambda n: ", ".join(st[n].loops[: level + 1])).as_set()
    points = points.project_out_all_params()
    if points.is_empty():
        return 0, 0
    fiber = isl.Map.from_range(points).move_dims(isl.dim_type.in_, 0, isl.dim_type.out, 0, level)
    span = fiber.lexmax_pw_multi_aff().get_pw_aff(0).sub(fiber.lexmin_pw_multi_aff().get_pw_aff(0))
    trips = isl.Map.from_pw_aff(span).range()
    return trips.dim_min_val(0).to_python() + 1, trips.dim_max_val(0).to_python() + 1


def _box_trips(prog: Program, names: list[str], level: int, st: State) -> tuple[int, int] | None:
    """`trip_range` without isl's per-entry count where the answer is plain: one statement whose domain is a box
    (`rectangular`) and whose loop at `level` runs one of its iterators (maybe reversed), or tiles of one, that
    no outer loop reads but, for a point loop, its tile loop: then every entry runs the iterator's whole range,
    its tile count, or a tile's share of the range.  None otherwise (skews, triangles, shared loops)."""
    if len(names) != 1 or not rectangular(stmt := prog.statement(names[0])):
        return None
    loops = st[names[0]].loops

    def runs(expr: str) -> tuple[str | None, int, int]:  # (the iterator, tile size or 0, the sign inside a tile)
        body, size, _ = _loop_part(expr)
        it, sign = _negations(body)
        return (it if it in stmt.iterators else None), size, sign

    it, size, sign = runs(loops[level])
    if it is None:
        return None
    outer = [runs(e) for e in loops[:level] if it in _names(e)]
    low, high = iterator_range(prog, stmt, stmt.iterators.index(it))
    if low > high:
        return 0, 0
    if not outer and not size:
        return high - low + 1, high - low + 1
    if size:  # a tile loop: tiles of sign * it
        lo, hi = (low, high) if sign > 0 else (-high, -low)
        return (hi // size - lo // size + 1,) * 2 if not outer else None
    if len(outer) != 1 or outer[0][0] != it or not outer[0][1]:
        return None
    _, size, sign = outer[0]  # a point loop: its tile's share of sign * it, the first and last tiles maybe partial
    lo, hi = (low, high) if sign > 0 else (-high, -low)
    first, last = lo // size, hi // size
    counts = {min(hi, size * k + size - 1) - max(lo, size * k) + 1 for k in (first, last)}
    return min(counts), max(counts | ({size} if last - first > 1 else set()))


def _names(expr: str) -> set[str]:
    return set(re.findall(r"[A-Za-z_]\w*", expr))


@functools.lru_cache(maxsize=4096)
def rectangular(stmt: Statement) -> bool:
    """Whether no constraint of the statement's domain reads two of its iterators (`j <= i` does): then its domain
    is a box, and its loops run the same trips on every entry, unless skewed."""
    names = set(stmt.iterators)
    return all(len(names & _names(part)) < 2 for part in stmt.domain.split(" and "))


def iterator_range(prog: Program, stmt: Statement, dim: int) -> tuple[int, int]:
    """(min, max) of a statement's iterator `dim` over its domain, by isl, memoized ((0, -1) when it is empty)."""
    def compute():
        box = domain(prog, stmt).as_set()
        if box.is_empty():
            return [(0, -1)] * len(stmt.iterators)
        return [(box.dim_min_val(d).to_python(), box.dim_max_val(d).to_python()) for d in range(len(stmt.iterators))]
    return _memoized(("iterator ranges", prog.hash(), stmt.name), compute)[dim]


def instances(prog: Program, stmt: Statement) -> int:
    """A statement's instances: the volume of its domain's bounding box (module docstring)."""
    def compute():
        box = domain(prog, stmt).as_set()
        if box.is_empty():
            return 0
        return math.prod(box.dim_max_val(d).to_python() - box.dim_min_val(d).to_python() + 1
                         for d in range(box.dim(isl.dim_type.set)))
    return _memoized(("instances", prog.hash(), stmt.name), compute)


def _operations(stmt: Statement) -> int:
    return len(re.findall(r"[-+*/]", stmt.expr))


def work(prog: Program) -> dict[str, tuple[float, float]]:
    """{statement: (instances, share of the program's work)}, work = instances x (1 + operations)."""
    def compute():
        n = {s.name: instances(prog, s) for s in prog.statements}
        w = {s.name: n[s.name] * (1 + _operations(s)) for s in prog.statements}
        total = sum(w.values()) or 1
        return {name: (float(n[name]), w[name] / total) for name in n}
    return _memoized(("work", prog.hash()), compute)


def _work_features(prog: Program, names) -> list[float]:
    stmts = work(prog)
    return [squash(sum(stmts[n][0] for n in names)), sum(stmts[n][1] for n in names)]


def _negations(expr: str) -> tuple[str, int]:
    """(`expr` without the negations reversal wrapped it in, `-(e)`; their sign)."""
    sign = 1
    while (m := _NEGATED.match(expr)) is not None:
        expr, sign = m[1], -sign
    return expr, sign


def _unsigned(expr: str) -> str:
    return _negations(expr)[0]


def _loop_part(expr: str) -> tuple[str, int, int]:
    """(what the loop runs, tile size or 0, sign) of one loop expression: a tile loop `floor((e)/size)` runs e in
    steps of size, reversed (-1) when reversal wrapped it in `-(...)`; any other loop keeps its whole expression,
    whose affine row carries the sign."""
    body, sign = _negations(expr)
    if (m := _FLOOR.match(body)) is not None:
        return m[1], int(m[2]), sign
    return expr, 0, 1


def loop_flags(prog: Program, name: str, s: StmtSchedule) -> list[dict]:
    """Per level of statement `name`: its affine row and what was done to it (tile, interchange...)."""
    stmt = prog.statement(name)
    parts = [_loop_part(e) for e in s.loops]
    points = [_unsigned(inner) for inner, size, _ in parts if not size]
    out = []
    for level, (inner, size, sign) in enumerate(parts):
        row = _memoized(("row", prog.hash(), name, inner), lambda inner=inner: _affine_row(prog, stmt, inner))
        coef = [sign * c + 0.0 for c in row[:MAX_ITERS]]  # + 0.0: no -0.0
        own = next((stmt.iterators.index(w) for w in re.findall(r"[A-Za-z_]\w*", inner) if w in stmt.iterators), 0)
        rank = points.index(inner) if inner in points else own
        out.append({"row": coef, "tile": size,
                    "point": not size and any(_unsigned(p) == _unsigned(inner) and z for p, z, _ in parts),
                    "interchanged": own != rank, "skewed": sum(c != 0 for c in coef) > 1,
                    "reversed": own < MAX_ITERS and coef[own] < 0,
                    "parallel": level in s.parallel, "unroll": s.unroll if level == s.depth - 1 else 1})
    return out


def _loop_features(level: int, bounds: tuple[int, int], flags: dict, focus: bool, innermost: bool,
                   work_features: list[float]) -> list[float]:
    onehot = [0.0] * MAX_LEVELS
    onehot[min(level, MAX_LEVELS - 1)] = 1.0
    lo, hi = bounds
    marks = [flags["tile"] > 0, flags["point"], math.log2(max(flags["tile"], 1)) / 8, flags["parallel"],
             math.log2(flags["unroll"]) / 5, flags["interchanged"], flags["skewed"], flags["reversed"], focus,
             innermost]
    return onehot + [squash(lo), squash(hi), squash(hi - lo + 1)] + flags["row"] + [float(m) for m in marks] + \
        work_features


def _comp_features(prog: Program, stmt: Statement, order: int, depth: int, focus: bool) -> list[float]:
    names = set(prog.tensors)
    expr = stmt.expr
    reads = list(dict.fromkeys(a.isl() for a in stmt.reads(names)))  # distinct, in order
    by_text = {a.isl(): a for a in stmt.reads(names)}
    mats = [access_matrix(prog, stmt, stmt.write(names))]
    mats += [access_matrix(prog, stmt, by_text[r]) for r in reads[:MAX_READS]]
    mats += [[0.0] * MATRIX] * (1 + MAX_READS - len(mats))
    ops = [len(re.findall(r"[-+]", expr)), len(re.findall(r"[*/]", expr))]
    head = [depth / MAX_LEVELS, order / max(len(prog.statements), 1),
            float(prog.tensors[stmt.write(names).tensor].dtype == "double"), squash(len(reads)),
            squash(ops[0]), squash(ops[1]), float(focus)]
    return head + [v for m in mats for v in m] + _work_features(prog, [stmt.name])


def _buffer_features(prog: Program, name: str, written: bool) -> list[float]:
    t = prog.tensors[name]
    extents = [squash(extent(e, prog.params)) for e in t.shape][:MAX_RANK]
    return [len(t.shape) / MAX_RANK, float(t.dtype == "double"), float(written), float(not written)] + \
        extents + [0.0] * (MAX_RANK - len(extents))


def _node(kind: int, section: list[float]) -> list[float]:
    """A full node vector: type one-hot, then the loop / computation / buffer section in its place."""
    offsets = (N_TYPES, N_TYPES + LOOP_F, N_TYPES + LOOP_F + COMP_F)
    vec = [0.0] * NODE_FEATURES
    vec[kind] = 1.0
    vec[offsets[kind]: offsets[kind] + len(section)] = section
    return vec


class _Edges:
    """Edge lists under construction: each edge added with its reverse (module docstring)."""

    def __init__(self):
        self.src: list[int] = []
        self.dst: list[int] = []
        self.attr: list[list[float]] = []

    def add(self, a: int, b: int, relation: str, matrix: list[float] | None = None) -> None:
        onehot = [float(r == relation) for r in RELATIONS]
        mat = matrix or [0.0] * MATRIX
        self.src += [a, b]
        self.dst += [b, a]
        self.attr += [onehot + [0.0] + mat, onehot + [1.0] + mat]


def _loop_nodes(prog: Program, st: State, focus: set[str], nodes: list, edges: _Edges) -> dict[str, int]:
    """Adds one node per loop (shared loops once) and the nesting edges; returns each statement's
    innermost loop node."""
    ids: dict[tuple, int] = {}
    flags = {n: loop_flags(prog, n, st[n]) for n in st}
    innermost: dict[str, int] = {}
    for stmt in prog.statements:
        s = st[stmt.name]
        for level in range(s.depth):
            key = tuple(s.betas[: level + 1])
            if key not in ids:
                names = [n for n, o in st.items() if o.depth > level and tuple(o.betas[: level + 1]) == key]
                deepest = all(st[n].depth == level + 1 for n in names)
                ids[key] = len(nodes)
                nodes.append(_node(0, _loop_features(level, loop_bounds(prog, names, level, st),
                                                     flags[stmt.name][level], bool(focus & set(names)), deepest,
                                                     _work_features(prog, names))))
                if level:
                    edges.add(ids[key[:-1]], ids[key], "nest")
            innermost[stmt.name] = ids[key]
    return innermost


def graph(prog: Program, pos: Position) -> Data:
    """The state graph of `pos` (module docstring).  Shapes: x [nodes, NODE_FEATURES],
    edge_index [2, edges], edge_attr [edges, EDGE_FEATURES], node_type [nodes]."""
    st = state(prog, pos.schedule)
    focus = set(branches(st)[pos.branch])
    nodes: list[list[float]] = []
    edges = _Edges()
    innermost = _loop_nodes(prog, st, focus, nodes, edges)
    n_loops = len(nodes)
    names = set(prog.tensors)
    buffers = {t: n_loops + len(prog.statements) + k for k, t in enumerate(prog.tensors)}
    written = {s.write(names).tensor for s in prog.statements}
    for order, stmt in enumerate(prog.statements):
        me = len(nodes)
        nodes.append(_node(1, _comp_features(prog, stmt, order, st[stmt.name].depth, stmt.name in focus)))
        if stmt.name in innermost:
            edges.add(innermost[stmt.name], me, "contains")
        w = stmt.write(names)
        edges.add(me, buffers[w.tensor], "writes", access_matrix(prog, stmt, w))
        for r in {a.isl(): a for a in stmt.reads(names)}.values():
            edges.add(buffers[r.tensor], me, "reads", access_matrix(prog, stmt, r))
    nodes += [_node(2, _buffer_features(prog, t, t in written)) for t in prog.tensors]
    types = [0] * n_loops + [1] * len(prog.statements) + [2] * len(prog.tensors)
    return Data(x=torch.tensor(nodes, dtype=torch.float32),
                edge_index=torch.tensor([edges.src, edges.dst], dtype=torch.long).reshape(2, -1),
                edge_attr=torch.tensor(edges.attr, dtype=torch.float32).reshape(-1, EDGE_FEATURES),
                node_type=torch.tensor(types, dtype=torch.long))
