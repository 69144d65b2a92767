"""Emit C for a scheduled nest the way LoopNest does it.

* Loops run literally in the given order; a loop with a tail runs its body once more on the
  leftover elements (the tail code is specialised at generation time, so every bound is a
  constant).
* The innermost compute loop is vectorized (explicit vector types, `W` lanes, then 8 and 4
  lanes, then scalars) when it is contiguous: the output moves by 1 and every input by 0 or 1.
  Clang's own vectorizers are switched off (see backend.COMPILE_FLAGS) so the schedule, not
  the compiler, decides what is vector code.
* Register tiling: the outermost loop whose sub-nest touches at most `acc_budget` registers of
  the output gets the output tile as explicit local accumulators (loaded before, stored after);
  output loops inside that scope are fully unrolled so every accumulator has a name, reduction
  loops inside stay loops.  Nothing of the output spills.
* The compute nest accumulates into a zeroed, output-shaped temporary `T`; the write-back
  nest copies `T` to the output in its own loop order.  The caller provides `T` (like the
  tensors), so the measuring worker decides where all of them live in memory.

The generated library exports `void kernel(const float*, const float*, float*, float*)` (inputs
in the contraction's order, the output, the temporary) and `double bench(<the same 4 pointers>,
double min_seconds, int max_reps)`: warm-up, repeat for at least `min_seconds`, fastest run in s,
with the timed stack frame at a fixed offset in its page (clang does spill some tiles, and where
the spill slots fall relative to the tensors changed one kernel's speed by 60% between processes).
A batch library (`batch_source`) holds several kernels under prefixed names (`k0_kernel`, ...).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from llmopt.loops.nest import Access, Loop, Nest, steps

CODEGEN_VERSION = 5  # 4: the caller passes the temporary; 5: fixed stack offset while timed
STACK_OFFSET = 512  # where bench() puts its stack frame in the page (bytes below the boundary)
Offset = tuple[tuple[tuple[str, int], ...], int]  # (runtime terms (var, multiplier), constant)


@dataclass
class Target:
    """Vector lanes (floats) and how many output registers a tile may use."""

    lanes: int = 8
    acc_budget: int = 24


def _chunks(extent: int, lanes: int) -> list[tuple[int, int]]:
    """Split [0, extent) into (start, width) pieces: full vectors, one 4-lane piece, scalars."""
    out, d = [], 0
    for width in sorted({lanes, 8, 4, 1}, reverse=True):
        while width <= lanes and extent - d >= width:
            out.append((d, width))
            d += width
    return out


def _add(off: Offset, var: str | None = None, mult: int = 0, const: int = 0) -> Offset:
    terms, c = off
    if var is not None:
        terms = (*terms, (var, mult))
    return terms, c + const


@dataclass
class _Ctx:
    nest: Nest
    loops: tuple[Loop, ...]
    steps: list[int]
    target: Target
    scope: int  # first loop of the register scope (len(loops): no scope)
    vector: bool  # innermost loop vectorized
    body: str  # "compute" or "copy"
    n_vars: int = 0
    accs: dict = field(default_factory=dict)  # (deltas, width) -> name, inside the current scope
    scope_base: dict = field(default_factory=dict)  # iterator -> Offset at scope entry

    def var(self) -> str:
        self.n_vars += 1
        return f"i{self.n_vars}"


def _flat(ctx: _Ctx, access: Access, off: dict[str, Offset]) -> str:
    """C expression of the flat element offset of `access` at iterator offsets `off`."""
    op = ctx.nest.op
    coeffs: dict[str, int] = {}
    const = 0
    for it in {i for d in access.index for i, _ in d}:
        s = op.iterator_stride(access, it)
        terms, c = off[it]
        const += s * c
        for var, mult in terms:
            coeffs[var] = coeffs.get(var, 0) + s * mult
    parts = [f"{var}*{m}" if m != 1 else var for var, m in coeffs.items() if m]
    if const or not parts:
        parts.append(str(const))
    return "+".join(parts)


def _vec_type(width: int) -> str:
    return {1: "float"}.get(width, f"vf{width}")


def _load(ctx: _Ctx, name: str, access: Access, off: dict[str, Offset], width: int, vec_it: str | None) -> str:
    expr = f"{name}[{_flat(ctx, access, off)}]"
    if width == 1 or ctx.nest.op.iterator_stride(access, vec_it) == 0:
        return expr  # a scalar broadcasts in vector arithmetic
    return f"*(const {_vec_type(width)}*)&{expr}"


def _body(ctx: _Ctx, off: dict[str, Offset], width: int, vec_it: str | None) -> list[str]:
    op = ctx.nest.op
    temp = op.output  # T is laid out like the output
    ref = f"T[{_flat(ctx, temp, off)}]"
    lhs = ref if width == 1 else f"*({_vec_type(width)}*)&{ref}"
    if ctx.body == "copy":
        return [f"*({_vec_type(width)}*)&out[{_flat(ctx, op.output, off)}] = {lhs};" if width > 1
                else f"out[{_flat(ctx, op.output, off)}] = {ref};"]
    a, b = (_load(ctx, f"in{j}", acc, off, width, vec_it) for j, acc in enumerate(op.inputs))
    if ctx.scope_base:
        deltas = tuple(off[it][1] - ctx.scope_base[it][1] for it in op.output_iterators)
        key = (deltas, width)
        if key not in ctx.accs:
            ctx.accs[key] = (f"acc{len(ctx.accs)}", dict(off))
        return [f"{ctx.accs[key][0]} += {a} * {b};"]
    return [f"{lhs} += {a} * {b};"]


def _emit(ctx: _Ctx, p: int, ext: dict[str, int], off: dict[str, Offset]) -> list[str]:
    if p == ctx.scope and ctx.body == "compute" and not ctx.scope_base:
        return _emit_scope(ctx, p, ext, off)
    if p == len(ctx.loops):
        return _body(ctx, off, 1, None)
    lp, step = ctx.loops[p], ctx.steps[p]
    it, e = lp.iterator, ext[lp.iterator]
    in_scope = bool(ctx.scope_base)
    out_it = it in ctx.nest.op.output_iterators
    last = p == len(ctx.loops) - 1
    if last and ctx.vector:
        # step is 1 for the innermost loop: vector pieces over the whole extent.
        if in_scope:
            return [line for d, w in _chunks(e, ctx.target.lanes)
                    for line in _body(ctx, {**off, it: _add(off[it], const=d)}, w, it)]
        lanes = ctx.target.lanes
        v = ctx.var()
        lines = [f"for (int {v} = 0; {v} < {e // lanes}; ++{v}) {{"] if e // lanes else []
        if e // lanes:
            lines += ["  " + s for s in _body(ctx, {**off, it: _add(off[it], v, lanes)}, lanes, it)] + ["}"]
        for d, w in _chunks(e - e // lanes * lanes, lanes):
            lines += _body(ctx, {**off, it: _add(off[it], const=e // lanes * lanes + d)}, w, it)
        return lines
    n, r = divmod(e, step)
    lines: list[str] = []
    if in_scope and out_it:  # unrolled: every output element of the tile is a named register
        for b in range(n):
            lines += _emit(ctx, p + 1, {**ext, it: step}, {**off, it: _add(off[it], const=b * step)})
    elif n == 1:
        lines += _emit(ctx, p + 1, {**ext, it: step}, off)
    elif n > 1:
        v = ctx.var()
        inner = _emit(ctx, p + 1, {**ext, it: step}, {**off, it: _add(off[it], v, step)})
        lines += [f"for (int {v} = 0; {v} < {n}; ++{v}) {{", *("  " + s for s in inner), "}"]
    if r:
        lines += _emit(ctx, p + 1, {**ext, it: r}, {**off, it: _add(off[it], const=n * step)})
    return lines


def _emit_scope(ctx: _Ctx, p: int, ext: dict[str, int], off: dict[str, Offset]) -> list[str]:
    """Load the output tile into accumulators, run the sub-nest, store the tile."""
    ctx.scope_base, ctx.accs = dict(off), {}
    inner = _emit(ctx, p, ext, off)
    op = ctx.nest.op
    temp = op.output  # T is laid out like the output
    pre, post = ["{"], []
    for (_, width), (name, acc_off) in ctx.accs.items():
        ref = f"T[{_flat(ctx, temp, acc_off)}]"
        if width == 1:
            pre.append(f"  float {name} = {ref};")
            post.append(f"  {ref} = {name};")
        else:
            typ = _vec_type(width)
            pre.append(f"  {typ} {name} = *({typ}*)&{ref};")
            post.append(f"  *({typ}*)&{ref} = {name};")
    ctx.scope_base, ctx.accs = {}, {}
    return pre + ["  " + s for s in inner] + post + ["}"]


def is_contiguous(nest: Nest, loops: tuple[Loop, ...], compute: bool) -> bool:
    """Whether the innermost loop can be vectorized: the output moves by 1, inputs by 0 or 1."""
    if not loops:
        return False
    op, it = nest.op, loops[-1].iterator
    if op.iterator_stride(op.output, it) != 1:
        return False
    return not compute or all(op.iterator_stride(acc, it) in (0, 1) for acc in op.inputs)


def tile_registers(nest: Nest, loops: tuple[Loop, ...], p: int, vector: bool, lanes: int) -> int:
    """Registers that the output tile of the sub-nest `loops[p:]` needs (nominal extents)."""
    st = steps(loops)
    foot: dict[str, int] = {}
    for q in range(p, len(loops)):
        lp = loops[q]
        foot.setdefault(lp.iterator, lp.size * st[q] + lp.tail)
    regs = 1
    vec_it = loops[-1].iterator if vector else None
    for it in nest.op.output_iterators:
        e = foot.get(it, 1)
        regs *= len(_chunks(e, lanes)) if it == vec_it else e
    return regs


def register_scope(nest: Nest, target: Target) -> int:
    """First compute loop of the register scope; len(compute) if even the body alone is too big."""
    loops = nest.compute
    vector = is_contiguous(nest, loops, True)
    for p in range(len(loops)):
        if tile_registers(nest, loops, p, vector, target.lanes) <= target.acc_budget:
            return p
    return len(loops)


def generate(nest: Nest, target: Target | None = None, prefix: str = "") -> str:
    """C source of the kernel and its benchmark driver for `nest`.

    `prefix` goes in front of every file-scope name (`{prefix}kernel`, `{prefix}bench` and the
    static helpers), so several kernels can share one translation unit and one clang run
    (`batch_source`); with the default "" the names are `kernel` and `bench`."""
    target = target or Target()
    return (f"// generated by llmopt.loops.codegen v{CODEGEN_VERSION}: {nest.describe()}\n"
            + _kernel_source(nest, target, prefix) + "\n" + _driver_source(prefix))


def _kernel_source(nest: Nest, target: Target, p: str) -> str:
    """The vector typedefs, the compute and write-back loops and `{p}kernel`, which runs both."""
    op = nest.op
    out_size = math.prod(op.shape[op.output.tensor])
    zero: dict[str, Offset] = {it: ((), 0) for it in op.iterators}
    comp = _Ctx(nest, nest.compute, steps(nest.compute), target, register_scope(nest, target),
                is_contiguous(nest, nest.compute, True), "compute")
    wb = _Ctx(nest, nest.writeback, steps(nest.writeback), target, len(nest.writeback) + 1,
              is_contiguous(nest, nest.writeback, False), "copy")
    compute_lines = _emit(comp, 0, op.extent, zero)
    wb_lines = _emit(wb, 0, {it: op.extent[it] for it in op.output_iterators}, zero)
    ind = "\n  ".join
    typedefs = "\n".join(f"typedef float vf{w} __attribute__((vector_size({4 * w}), aligned(4)));"
                          for w in sorted({target.lanes, 8, 4}) if w <= target.lanes)
    return f"""#include <string.h>
#include <time.h>
{typedefs}

static void {p}compute(const float* restrict in0, const float* restrict in1, float* restrict T) {{
  {ind(compute_lines)}
}}

static void {p}writeback(float* restrict out, const float* restrict T) {{
  {ind(wb_lines)}
}}

void {p}kernel(const float* restrict in0, const float* restrict in1, float* restrict out, float* restrict T) {{
  memset(T, 0, {out_size} * sizeof(float));
  {p}compute(in0, in1, T);
  {p}writeback(out, T);
}}
"""


def _driver_source(p: str) -> str:
    """`{p}bench`: the best time of `{p}kernel` over repetitions, at a fixed stack alignment."""
    return f"""static double {p}now(void) {{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}}

static __attribute__((noinline)) double {p}timed(const float* in0, const float* in1, float* out, float* T,
                                                  double min_seconds, int max_reps) {{
  {p}kernel(in0, in1, out, T);  /* warm-up: caches, page faults */
  double best = 1e30, start = {p}now();
  for (int reps = 0; reps < 2 || (reps < max_reps && {p}now() - start < min_seconds); ++reps) {{
    double t0 = {p}now();
    {p}kernel(in0, in1, out, T);
    double t = {p}now() - t0;
    if (t < best) best = t;
  }}
  return best;
}}

double {p}bench(const float* in0, const float* in1, float* out, float* T, double min_seconds, int max_reps) {{
  /* The timed frame (with the kernel's spill slots) at a fixed offset in its stack page: the
     process's random stack offset otherwise aliased spills with tensor accesses in some
     processes only (one kernel: 102 GFLOPS in most processes, 162 in some). */
  volatile char* pad = __builtin_alloca(((unsigned long)__builtin_frame_address(0) - {STACK_OFFSET}) % 4096 + 16);
  pad[0] = 0;
  double best = {p}timed(in0, in1, out, T, min_seconds, max_reps);
  pad[0] = 1;  /* keeps the padding alive across the call (no tail call) */
  return best;
}}
"""


def batch_source(nests: list[Nest], target: Target | None = None) -> str:
    """One translation unit holding every kernel of `nests`: kernel j exports `k{j}_kernel` and
    `k{j}_bench`.  clang's start-up (~60 ms) dominates compiling one kernel (~10 ms), so a batch
    of kernels compiles several times faster than one clang run per kernel."""
    return "\n".join(generate(nest, target, f"k{j}_") for j, nest in enumerate(nests))


PEAK_SOURCE = """
#include <time.h>
typedef float vf __attribute__((vector_size(LANES * 4)));
static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
/* Register-only FMA: ACC independent accumulator chains, no memory traffic. Returns GFLOPS. */
double peak(long iters, float seed) {
  vf a = {0}, b = {0};
  a += seed; b += 1.0f - seed * 1e-7f;
  vf acc[ACC];
  for (int j = 0; j < ACC; ++j) acc[j] = a + (float)j;
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    double t0 = now();
    for (long i = 0; i < iters; ++i) {
#pragma clang loop unroll(full)
      for (int j = 0; j < ACC; ++j) acc[j] = acc[j] * b + a;
    }
    double t = now() - t0, g = 2.0 * LANES * ACC * (double)iters / t * 1e-9;
    if (g > best) best = g;
  }
  float s = 0;
  for (int j = 0; j < ACC; ++j) for (int l = 0; l < LANES; ++l) s += acc[j][l];
  return s == 12345.0f ? -1.0 : best;
}
"""
