"""Random affine programs: the training set of the Pearl agent (issue 15, item 4).

Like the generator of the papers (Tiramisu's random programs, paper 002 §3; Pearl trains on 2,500 of
them, paper 000 §5), a program is a short sequence of computations drawn from the patterns real
kernels are made of, so the agent sees every kind of dependence it meets in the benchmarks:

- 1-4 computations (`Statement`s), each in a loop nest of depth 1-4; a computation shares 0..d
  outer loops with the one before it, which gives imperfect nests and several computations per nest;
- an optional outer *time* loop (`0 <= t < T`, used in no subscript: stencils iterated in time);
- spatial loops `1 <= i < N - 1` over a few shared size parameters, sometimes triangular
  (`1 <= j <= i`);
- reads with small offsets (`A[i-1][j+1]`: stencils), in any loop order (transposed accesses);
- reductions (`C[i][j] += A[i][k] * B[k][j]`: the write omits a loop);
- shared buffers (a later computation reads what an earlier one wrote, or writes into an existing
  tensor, in place or not) and distinct ones (fresh inputs and outputs);
- double buffers, only when `Limits.p_double_buffer` is set (default 0): a stencil iterated in time
  that reads `X[t % 2][i-1][j]...` and writes `X[(t + 1) % 2][i][j]` of one tensor with a leading
  extent of 2, the quasi-affine ping-pong of heat2d and of time-tiled stencil codes.  Off by default
  so that every seed drawn before it existed keeps its program (the collected data name programs by
  seed); data folders that want it say so in their config (`--limit p_double_buffer=0.5`).
- reads in loop order: with `Limits.p_transpose` < 1 (default 1: any order), a read indexes its loops
  outermost first (`A[i][k]` in an `i j k` nest, not `A[k][i]`) unless a draw says otherwise, as
  hand-written kernels mostly do (stencils always; products transpose one operand).  A policy trained
  only on any-order reads learns that the source order is often wrong (docs/results/pearl/augment/).
- init statements, only when `Limits.p_init` is set (default 0): a reduction that sums over its
  innermost loop (`C[i][j] += ...` in `i j k`) first gets a statement of its own in the loops outside
  that one (`C[i][j] = 0.1` or `C[i][j] = 0.7 * C[i][j]`), which the reduction then shares: the nest of
  gemm and 2mm, whose good order needs the interchange to distribute the shared loop
  (`llmopt.poly.schedule.distribute`).  Random draws rarely make it (docs/results/pearl/distribute/).

Sizes: the total number of statement instances is drawn log-uniformly in `Limits.iterations` and
the size parameters are scaled to reach it, so the untransformed program runs roughly 1-50 ms at
`-O3` on the 2-core development machine; `small=True` draws sizes that run in well under 1 ms, for
tests.  No tensor exceeds `Limits.max_elements` elements.

Every program passes `llmopt.poly.polyhedral.check_bounds` (checked here) and emits C that compiles
and matches its reference (tests/test_poly_search.py).  Same seed, same program (`random.Random`).

Held out: the benchmarks (`llmopt.poly.benchmarks`) are never generated.  Generated programs are
named `random-<seed>` (no benchmark name), use constants and patterns the benchmarks do not (no
1.5/1.2 scalars, margins of 1 on every spatial loop, weights and the `+ 0.1` of `_average` in every
stencil), and `random_program` re-draws in the rare case the statements equal a benchmark's
(`_is_benchmark`).  The double buffer is a pattern heat2d has; it was added (issue 15, seventeenth
session) after the agent, never having seen a quasi-affine access, left heat2d untransformed
(docs/results/pearl/double-buffer/): the idiom is trained, the benchmark is not.
"""

from __future__ import annotations

import dataclasses
import math
import random
from dataclasses import dataclass, field

from llmopt.poly.benchmarks import SPECS
from llmopt.poly.polyhedral import check_bounds
from llmopt.poly.program import Program, ProgramError, program_from_dict

TENSOR_NAMES = "ABCDEFGHPQRUVWXYZ"  # no single-letter clash with iterators (lowercase) or params (N0, T)


@dataclass(frozen=True)
class Limits:
    """What `random_program` may draw; every field can be overridden by keyword."""

    computations: tuple[int, int] = (1, 4)
    depth: tuple[int, int] = (1, 4)
    reads: tuple[int, int] = (1, 3)  # read accesses per computation
    size_params: tuple[int, int] = (1, 3)  # distinct spatial size parameters N0, N1, ...
    iterations: tuple[float, float] = (4e6, 4e7)  # statement instances in total (~1-50 ms at -O3)
    size_range: tuple[int, int] = (8, 1 << 21)  # a spatial size parameter's value
    time_range: tuple[int, int] = (2, 64)  # T, the time loop's extent
    max_elements: int = 1 << 22  # per tensor: 32 MiB of doubles
    p_time: float = 0.3  # a new nest of depth >= 2 starts with a time loop
    p_share: float = 0.5  # a computation shares loops with the previous one
    p_reduction: float = 0.35
    p_offset: float = 0.4  # per subscript: i-1 or i+1 instead of i
    p_triangular: float = 0.15
    p_reuse: float = 0.5  # a read (or the write) uses an existing tensor when the shapes fit
    p_float: float = 0.3  # the program uses float instead of double
    p_double_buffer: float = 0.0  # a stencil in a time loop ping-pongs between X[t % 2] and X[(t + 1) % 2]
    p_transpose: float = 1.0  # a read indexes its loops in a random order (else outer loop first, as people write)
    p_init: float = 0.0  # a reduction over its innermost loop gets its own init statement first (gemm's C *= beta)


SMALL = {"iterations": (2e3, 2e4), "size_range": (5, 64), "time_range": (2, 4), "max_elements": 1 << 12}


@dataclass
class _Loop:
    name: str
    param: str
    time: bool = False
    triangular: bool = False  # `1 <= name <= outer`, outer being the loop just outside

    def domain(self, outer: _Loop | None) -> str:
        if self.time:
            return f"0 <= {self.name} < {self.param}"
        if self.triangular and outer is not None:
            return f"1 <= {self.name} <= {outer.name}"
        return f"1 <= {self.name} < {self.param} - 1"


@dataclass
class _Builder:
    """The state of one draw: size parameters, tensors (name -> dim params), statements so far."""

    rng: random.Random
    lim: Limits
    params: list[str] = field(default_factory=list)
    tensors: dict[str, tuple[str, ...]] = field(default_factory=dict)
    written: list[str] = field(default_factory=list)
    stmts: list[dict] = field(default_factory=list)
    loops: list[list[_Loop]] = field(default_factory=list)

    def new_tensor(self, dims: tuple[str, ...]) -> str:
        name = TENSOR_NAMES[len(self.tensors)]
        self.tensors[name] = dims
        return name

    def nest(self, depth: int, shares: int) -> list[_Loop]:
        """The loops of a computation: `shares` copied from the previous one, the rest drawn."""
        prev = self.loops[-1] if self.loops else []
        loops = [dataclasses.replace(lp) for lp in prev[:shares]]
        timed = loops[0].time if loops else (depth >= 2 and self.rng.random() < self.lim.p_time)
        names = ("t", "i", "j", "k") if timed else ("i", "j", "k", "l")
        for level in range(shares, depth):
            if timed and level == 0:
                loops.append(_Loop("t", "T", time=True))
                continue
            loop = _Loop(names[level], self.rng.choice(self.params))
            outer = loops[-1] if loops else None
            if outer is not None and not outer.time and self.rng.random() < self.lim.p_triangular:
                loop.param, loop.triangular = outer.param, True
            loops.append(loop)
        return loops

    def subscript(self, loops: list[_Loop], offsets: bool) -> str:
        parts = []
        for lp in loops:
            off = self.rng.choice((-1, 1)) if offsets and self.rng.random() < self.lim.p_offset else 0
            parts.append(f"[{lp.name}{'' if off == 0 else f'{off:+d}'}]")
        return "".join(parts)

    def fitting(self, dims: tuple[str, ...], space: list[_Loop], in_order: bool = False) -> list[_Loop] | None:
        """Distinct loops of `space` whose size parameters are `dims`, in order (random choice; with
        `in_order`, the outermost loop after the last one chosen when there is one)."""
        chosen: list[_Loop] = []
        for d in dims:
            options = [lp for lp in space if lp.param == d and lp not in chosen]
            if not options:
                return None
            after = in_order and [lp for lp in options if not chosen or space.index(lp) > space.index(chosen[-1])]
            chosen.append(after[0] if after else self.rng.choice(options))
        return chosen

    def transposed(self) -> bool:
        """Whether the next read may index its loops in any order; drawn only when `p_transpose` < 1,
        so that programs drawn with the default keep their random stream (and the seeds of older data)."""
        return self.lim.p_transpose >= 1 or self.rng.random() < self.lim.p_transpose

    def reuse(self, space: list[_Loop], prefer: list[str], in_order: bool = False) -> tuple[str, list[_Loop]] | None:
        """An existing tensor that `space`'s loops can index (tensors in `prefer` first)."""
        names = [t for t in prefer if t in self.tensors] + [t for t in self.tensors if t not in prefer]
        for name in names:
            if len(self.tensors[name]) <= len(space) and (fit := self.fitting(self.tensors[name], space, in_order)):
                return name, fit
        return None

    def read(self, space: list[_Loop]) -> str:
        """One read access: an existing tensor (often one an earlier computation wrote) or a new input."""
        in_order = not self.transposed()
        if self.tensors and self.rng.random() < self.lim.p_reuse:
            prefer = self.rng.sample(self.written, len(self.written))
            if found := self.reuse(space, prefer, in_order):
                return found[0] + self.subscript(found[1], offsets=True)
        rank = self.rng.randint(1, min(3, len(space)))
        picked = self.rng.sample(space, rank)  # random order: transposed accesses
        if in_order:
            picked.sort(key=space.index)
        name = self.new_tensor(tuple(lp.param for lp in picked))
        return name + self.subscript(picked, offsets=True)

    def write(self, space: list[_Loop]) -> tuple[str, bool]:
        """The written access and whether it is a reduction (the write omits a spatial loop)."""
        reduction = len(space) >= 2 and (len(space) > 3 or self.rng.random() < self.lim.p_reduction)
        keep = list(space)
        if reduction:
            keep.remove(self.rng.choice(space[1:]) if self.rng.random() < 0.7 else self.rng.choice(space))
        if self.tensors and self.rng.random() < self.lim.p_reuse:
            same = [t for t, dims in self.tensors.items() if dims == tuple(lp.param for lp in keep)]
            if same:
                return self.rng.choice(same) + self.subscript(keep, offsets=False), reduction
        return self.new_tensor(tuple(lp.param for lp in keep)) + self.subscript(keep, offsets=False), reduction

    def double_buffer(self, space: list[_Loop]) -> tuple[str, list[str]]:
        """A fresh ping-pong tensor X[2][...] over `space`: the write `X[(t + 1) % 2][...]` and 2-4
        stencil reads `X[t % 2][i+-1]...` (one read of another tensor now and then)."""
        name = self.new_tensor(("2", *(lp.param for lp in space)))
        reads = [f"{name}[t % 2]" + self.subscript(space, offsets=True) for _ in range(self.rng.randint(2, 4))]
        if self.rng.random() < 0.3:
            reads.append(self.read(space))
        return f"{name}[(t + 1) % 2]" + self.subscript(space, offsets=False), reads

    def statement(self) -> None:
        depth = self.rng.randint(*self.lim.depth)
        prev = self.loops[-1] if self.loops else []
        most = min(len(prev), depth - 1)  # keep one loop of its own: `shares` = depth would just fuse
        shares = self.rng.randint(1, most) if most >= 1 and self.rng.random() < self.lim.p_share else 0
        loops = self.nest(depth, shares)
        space = [lp for lp in loops if not lp.time] or loops
        # Drawn only when enabled: with p_double_buffer = 0 the random stream (every older seed's program) is unchanged.
        if loops[0].time and self.lim.p_double_buffer > 0 and self.rng.random() < self.lim.p_double_buffer:
            lhs, reads = self.double_buffer(space)
            reduction = False
        else:
            reads = [self.read(space) for _ in range(self.rng.randint(*self.lim.reads))]
            lhs, reduction = self.write(space)
        body = f"{lhs} += {_product(reads, self.rng)}" if reduction else f"{lhs} = {_average(reads, self.rng)}"
        # Drawn only when enabled, like the double buffer: older seeds keep their programs.
        if reduction and self.lim.p_init > 0 and self.rng.random() < self.lim.p_init and self.sums_over_innermost(lhs, loops[-1]):
            outer = len(loops) - 1
            self.append(loops[:outer], self.init_body(lhs), min(shares, outer - 1))
            shares = outer
        self.append(loops, body, shares)

    def sums_over_innermost(self, lhs: str, innermost: _Loop) -> bool:
        """Whether the reduction writing `lhs` sums over its innermost loop (gemm's k), the one nest
        shape where an init statement can sit in the loops outside it."""
        return f"[{innermost.name}]" not in lhs

    def init_body(self, lhs: str) -> str:
        """Gemm's `C[i][j] *= beta` or 2mm's `tmp[i][j] = 0`, with constants no benchmark uses."""
        if self.rng.random() < 0.5:
            return f"{lhs} = 0.1"
        return f"{lhs} = {round(self.rng.uniform(0.5, 0.95), 2)} * {lhs}"

    def append(self, loops: list[_Loop], body: str, shares: int) -> None:
        self.written.append(body.split("[", 1)[0])
        domain = " and ".join(lp.domain(loops[i - 1] if i else None) for i, lp in enumerate(loops))
        self.stmts.append({"name": f"S{len(self.stmts)}", "iterators": [lp.name for lp in loops], "domain": domain,
                           "body": body, "shares": shares})
        self.loops.append(loops)


def _average(reads: list[str], rng: random.Random) -> str:
    """0.1 + a weighted sum of the reads (products of two now and then): for reads in [0.1, 1.5] the
    result stays in [0.1, 1.5], so iterated stencils neither overflow nor sink into denormals."""
    terms: list[str] = []
    rest = list(reads)
    while rest:
        take = 2 if len(rest) >= 2 and rng.random() < 0.3 else 1
        terms.append(" * ".join(rest[:take]))
        rest = rest[take:]
    weights = [round((0.5 if "*" in t else 0.8) / len(terms), 3) for t in terms]
    return " + ".join([f"{w} * {t}" for w, t in zip(weights, terms, strict=True)] + ["0.1"])


def _product(reads: list[str], rng: random.Random) -> str:
    """The increment of a reduction: a product of up to two reads, more reads added (scaled)."""
    head = " * ".join(reads[:2])
    tail = [f"{round(rng.uniform(0.1, 0.5), 2)} * {r}" for r in reads[2:]]
    return " + ".join([head, *tail])


def _instances(loops: list[list[_Loop]], values: dict[str, float]) -> float:
    total = 0.0
    for nest in loops:
        count = 1.0
        for lp in nest:
            extent = values[lp.param] - (0 if lp.time else 2)
            count *= max(extent, 1) / (2 if lp.triangular else 1)
        total += count
    return total


def _elements(dims: tuple[str, ...], values: dict[str, float]) -> float:
    """A tensor's elements; a dimension is a size parameter or a constant (the 2 of a double buffer)."""
    return math.prod(float(d) if d.isdigit() else values[d] for d in dims)


def _fit(b: _Builder, values: dict[str, float]) -> None:
    """Clamp the size parameters to `size_range` and shrink those of tensors above `max_elements`."""
    lo, hi = b.lim.size_range
    for p in b.params:
        values[p] = min(max(values[p], lo), hi)
    for dims in b.tensors.values():
        elements = _elements(dims, values)
        if elements > b.lim.max_elements:
            params = [d for d in dims if not d.isdigit()]
            for d in set(params):
                values[d] = max(values[d] * (b.lim.max_elements / elements) ** (1 / len(params)), lo)


def _sizes(b: _Builder) -> dict[str, int]:
    """Parameter values that reach a drawn instance count within the size and tensor limits."""
    lim, rng = b.lim, b.rng
    values = {p: math.exp(rng.uniform(math.log(16), math.log(256))) for p in b.params}
    values["T"] = float(rng.randint(lim.time_range[0], min(lim.time_range[1], 16)))
    target = math.exp(rng.uniform(*map(math.log, lim.iterations)))
    depth = max(sum(not lp.time for lp in nest) for nest in b.loops) or 1
    _fit(b, values)
    for _ in range(30):
        factor = target / _instances(b.loops, values)
        if 0.9 < factor < 1.1:
            break
        for p in b.params:
            values[p] *= factor ** (1 / depth)
        _fit(b, values)
        if factor > 1.1 and all(values[p] >= lim.size_range[1] or _capped(b, values, p) for p in b.params):
            values["T"] = min(values["T"] * factor, lim.time_range[1])
    used = {lp.param for nest in b.loops for lp in nest}
    return {p: int(values[p]) for p in [*b.params, "T"] if p in used}


def _capped(b: _Builder, values: dict[str, float], param: str) -> bool:
    """Whether some tensor indexed by `param` is at the element limit (so `param` cannot grow)."""
    return any(param in dims and _elements(dims, values) >= 0.99 * b.lim.max_elements
               for dims in b.tensors.values())


def _is_benchmark(stmts: list[dict]) -> bool:
    """Whether these statements are some benchmark's (the held-out guarantee of the module docstring)."""
    def core(items: list[dict]) -> list[tuple]:
        return [(s["iterators"], s["domain"], s["body"], s.get("shares", 0)) for s in items]
    return any(core(stmts) == core(spec["statements"]) for spec in SPECS.values())


def _draw(rng: random.Random, lim: Limits, name: str) -> Program:
    b = _Builder(rng, lim)
    b.params = [f"N{k}" for k in range(rng.randint(*lim.size_params))]
    for _ in range(rng.randint(*lim.computations)):
        b.statement()
    dtype = "float" if rng.random() < lim.p_float else "double"
    params = _sizes(b)
    tensors = {t: {"type": dtype, "shape": list(dims)} for t, dims in b.tensors.items()}
    return program_from_dict({"name": name, "params": params, "tensors": tensors, "statements": b.stmts})


def random_program(seed: int, small: bool = False, **limits) -> Program:
    """A random affine program, the same for the same (seed, small, limits); see the module docstring.
    `limits` override fields of `Limits` (e.g. `computations=(1, 1)`); `small` uses test sizes."""
    unknown = set(limits) - {f.name for f in dataclasses.fields(Limits)}
    if unknown:
        raise ProgramError(f"random_program: unknown limits {sorted(unknown)}")
    lim = dataclasses.replace(Limits(), **{**(SMALL if small else {}), **limits})
    rng = random.Random(f"llmopt-poly-generator/{seed}")
    for _ in range(100):
        prog = _draw(rng, lim, f"random-{seed}")
        if not _is_benchmark(prog.to_dict()["statements"]):
            check_bounds(prog)
            return prog
    raise ProgramError(f"random_program({seed}): every draw equalled a benchmark")  # cannot happen


def random_programs(seeds: range | list[int], small: bool = False, **limits) -> list[Program]:
    """`random_program` for each seed (a training set: seeds 0..n-1)."""
    return [random_program(s, small, **limits) for s in seeds]
