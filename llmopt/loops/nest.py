"""Loop-nest IR for tensor contractions: a compute nest plus a write-back nest.

A contraction `out[o] += prod(inputs[i])` is described by its iterators (name -> extent),
row-major tensors and, for every tensor access, one affine index expression per dimension
(`{iterator: coefficient}`), which is enough for matmul, batched matmul and 2-D convolution
(`x[c, h + r, w + s]`).

The schedule is two flat lists of loops, outer to inner.  A loop is `(iterator, size, tail)`:
it runs `size` full iterations, each covering `step` elements of its iterator, then `tail`
leftover elements (always `< step`).  `step` is the nominal extent of the next inner loop of
the same iterator (1 if there is none), so `extent = size * step + tail`.  The compute nest
accumulates into a zeroed temporary `T` (shape of the output), the write-back nest copies
`T` into the output, exactly like LoopTool/LoopNest.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

Index = tuple[tuple[tuple[str, int], ...], ...]  # per dimension: ((iterator, coefficient), ...)


@dataclass(frozen=True)
class Access:
    """One tensor access: `tensor[index[0], index[1], ...]` with affine index expressions."""

    tensor: str
    index: Index

    def iterators(self) -> set[str]:
        return {it for dim in self.index for it, _ in dim}


@dataclass(frozen=True)
class Loop:
    """`for iterator in size full steps, then tail leftover elements`."""

    iterator: str
    size: int
    tail: int = 0


@dataclass(frozen=True)
class Contraction:
    """`output[...] += inputs[0][...] * inputs[1][...]`, summed over the reduction iterators.

    `extents` maps every iterator to its trip count; `shapes` maps every tensor to its
    row-major shape.  The output's iterators are the "output" (parallel) iterators.
    """

    name: str
    extents: tuple[tuple[str, int], ...]
    shapes: tuple[tuple[str, tuple[int, ...]], ...]
    output: Access
    inputs: tuple[Access, ...]

    @property
    def extent(self) -> dict[str, int]:
        return dict(self.extents)

    @property
    def shape(self) -> dict[str, tuple[int, ...]]:
        return dict(self.shapes)

    @property
    def iterators(self) -> list[str]:
        return [it for it, _ in self.extents]

    @property
    def output_iterators(self) -> list[str]:
        """Output iterators in the output's dimension order (write-back loop order)."""
        return [dim[0][0] for dim in self.output.index]

    @property
    def flops(self) -> int:
        """2 flops (multiply + add) per point of the iteration space."""
        return 2 * math.prod(self.extent.values())

    def strides(self, tensor: str) -> list[int]:
        """Row-major element strides of `tensor`'s dimensions."""
        shape = self.shape[tensor]
        return [math.prod(shape[d + 1 :]) for d in range(len(shape))]

    def iterator_stride(self, access: Access, iterator: str) -> int:
        """Elements moved in `access.tensor` when `iterator` grows by one (0: not used)."""
        strides = self.strides(access.tensor)
        return sum(coef * strides[d] for d, dim in enumerate(access.index) for it, coef in dim if it == iterator)


def _idx(*dims: str | tuple[tuple[str, int], ...]) -> Index:
    return tuple(((d, 1),) if isinstance(d, str) else d for d in dims)


def matmul(m: int, n: int, k: int) -> Contraction:
    """C[m, n] = sum_k A[m, k] * B[k, n]; A: (M, K), B: (K, N), C: (M, N)."""
    return Contraction(
        name=f"mm_{m}x{n}x{k}",
        extents=(("m", m), ("n", n), ("k", k)),
        shapes=(("A", (m, k)), ("B", (k, n)), ("C", (m, n))),
        output=Access("C", _idx("m", "n")),
        inputs=(Access("A", _idx("m", "k")), Access("B", _idx("k", "n"))),
    )


def batched_matmul(b: int, m: int, n: int, k: int) -> Contraction:
    """C[b, m, n] = sum_k A[b, m, k] * B[b, k, n]."""
    return Contraction(
        name=f"bmm_{b}x{m}x{n}x{k}",
        extents=(("b", b), ("m", m), ("n", n), ("k", k)),
        shapes=(("A", (b, m, k)), ("B", (b, k, n)), ("C", (b, m, n))),
        output=Access("C", _idx("b", "m", "n")),
        inputs=(Access("A", _idx("b", "m", "k")), Access("B", _idx("b", "k", "n"))),
    )


def conv2d(c_out: int, c_in: int, h: int, w: int, r: int, s: int) -> Contraction:
    """Valid 2-D convolution, CHW layout, stride 1:

    Y[co, y, x] = sum_{ci, ry, rx} X[ci, y + ry, x + rx] * W[co, ci, ry, rx];
    X: (Ci, H + R - 1, W + S - 1), W: (Co, Ci, R, S), Y: (Co, H, W).
    """
    return Contraction(
        name=f"conv_{c_out}x{c_in}x{h}x{w}x{r}x{s}",
        extents=(("co", c_out), ("y", h), ("x", w), ("ci", c_in), ("ry", r), ("rx", s)),
        shapes=(("X", (c_in, h + r - 1, w + s - 1)), ("W", (c_out, c_in, r, s)), ("Y", (c_out, h, w))),
        output=Access("Y", _idx("co", "y", "x")),
        inputs=(
            Access("X", _idx("ci", (("y", 1), ("ry", 1)), (("x", 1), ("rx", 1)))),
            Access("W", _idx("co", "ci", "ry", "rx")),
        ),
    )


@dataclass(frozen=True)
class Nest:
    """A contraction with its schedule: compute loops, write-back loops and the agent's cursor.

    The cursor indexes the concatenation `compute + writeback` (LoopTune's flat loop list).
    """

    op: Contraction
    compute: tuple[Loop, ...]
    writeback: tuple[Loop, ...]
    cursor: int = 0

    @classmethod
    def untiled(cls, op: Contraction) -> Nest:
        """One loop per iterator in declaration order, cursor on the first loop."""
        compute = tuple(Loop(it, n) for it, n in op.extents)
        ext = op.extent
        writeback = tuple(Loop(it, ext[it]) for it in op.output_iterators)
        return cls(op, compute, writeback, 0)

    @property
    def loops(self) -> tuple[Loop, ...]:
        return self.compute + self.writeback

    def nest_of(self, position: int) -> str:
        """"compute" or "writeback" for a flat loop position."""
        return "compute" if position < len(self.compute) else "writeback"

    def with_loops(self, loops: list[Loop] | tuple[Loop, ...], n_compute: int, cursor: int) -> Nest:
        loops = tuple(loops)
        return replace(self, compute=loops[:n_compute], writeback=loops[n_compute:], cursor=cursor)

    def schedule_key(self) -> tuple:
        """What the generated code depends on (not the cursor)."""
        return (self.op.name, tuple((lp.iterator, lp.size, lp.tail) for lp in self.compute),
                tuple((lp.iterator, lp.size, lp.tail) for lp in self.writeback))

    def describe(self) -> str:
        """Human-readable schedule, e.g. `m:32 n:4 k:256 m:4 n:16 | m:128 n:64` (`r` marks a tail)."""

        def one(loops: tuple[Loop, ...]) -> str:
            return " ".join(f"{lp.iterator}:{lp.size}" + (f"r{lp.tail}" if lp.tail else "") for lp in loops)

        return f"{one(self.compute)} | {one(self.writeback)}"

    def to_json(self) -> dict:
        return {
            "op": self.op.name,
            "compute": [[lp.iterator, lp.size, lp.tail] for lp in self.compute],
            "writeback": [[lp.iterator, lp.size, lp.tail] for lp in self.writeback],
            "cursor": self.cursor,
        }


def steps(loops: tuple[Loop, ...] | list[Loop]) -> list[int]:
    """Nominal step (elements per full iteration) of each loop: extent of the next inner loop of
    the same iterator, 1 for the innermost one.  Shape: [len(loops)]."""
    out = [1] * len(loops)
    inner_extent: dict[str, int] = {}
    for p in range(len(loops) - 1, -1, -1):
        lp = loops[p]
        out[p] = inner_extent.get(lp.iterator, 1)
        inner_extent[lp.iterator] = lp.size * out[p] + lp.tail
    return out


def extents_of(loops: tuple[Loop, ...] | list[Loop]) -> dict[str, int]:
    """Total extent each iterator covers in a nest (its outermost loop's nominal extent)."""
    st = steps(loops)
    ext: dict[str, int] = {}
    for lp, s in zip(loops, st, strict=True):
        ext.setdefault(lp.iterator, lp.size * s + lp.tail)
    return ext


def validate(nest: Nest) -> None:
    """Raise ValueError unless both nests cover exactly the contraction's iteration space."""
    want = nest.op.extent
    if extents_of(nest.compute) != want:
        raise ValueError(f"compute nest covers {extents_of(nest.compute)}, expected {want}")
    want_out = {it: want[it] for it in nest.op.output_iterators}
    if extents_of(nest.writeback) != want_out:
        raise ValueError(f"write-back nest covers {extents_of(nest.writeback)}, expected {want_out}")
    for loops in (nest.compute, nest.writeback):
        for lp, s in zip(loops, steps(loops), strict=True):
            if lp.size < 0 or not 0 <= lp.tail < s:
                raise ValueError(f"bad loop {lp} with step {s}")
