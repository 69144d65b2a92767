"""A program's polyhedral objects in isl: parameter context, iteration domains, access relations.

Everything here is built from the program's text by isl's own parser, so a non-affine subscript or
bound is reported by isl (as a one-line `ProgramError`) rather than silently mis-analysed.  The
parameters stay symbolic in the isl objects; `context` fixes them to the program's values, and
every analysis intersects with it, so dependences are exact for the sizes that are measured.
"""

from __future__ import annotations

import functools

import islpy as isl

from llmopt.poly.program import Program, ProgramError, Statement


def params_prefix(prog: Program) -> str:
    """`[N, T] -> ` (or nothing): the parameter list every isl string of `prog` starts with."""
    return f"[{', '.join(prog.params)}] -> " if prog.params else ""


@functools.lru_cache(maxsize=4096)
def _parse(kind, text: str, what: str):
    # Memoized: legality and the features parse the same domains and contexts thousands of times,
    # and islpy objects are immutable (every operation copies), so one parsed object can be shared.
    try:
        return kind(text)
    except isl.Error as err:
        raise ProgramError(f"{what}: isl cannot parse {text!r} (is it affine?): {err}") from None


def context(prog: Program) -> isl.Set:
    """The parameter values as an isl set, e.g. `[N] -> { : N = 100 }`."""
    fixed = " and ".join(f"{k} = {v}" for k, v in prog.params.items())
    return _parse(isl.Set, f"{params_prefix(prog)}{{ : {fixed or '1 = 1'} }}", f"program {prog.name} params")


def tuple_of(stmt: Statement) -> str:
    return f"{stmt.name}[{', '.join(stmt.iterators)}]"


def domain(prog: Program, stmt: Statement) -> isl.UnionSet:
    text = f"{params_prefix(prog)}{{ {tuple_of(stmt)} : {stmt.domain} }}"
    dom = _parse(isl.UnionSet, text, f"statement {stmt.name} domain")
    return dom.intersect_params(context(prog))


def domains(prog: Program) -> isl.UnionSet:
    """The union of all iteration domains, parameters fixed."""
    return functools.reduce(isl.UnionSet.union, (domain(prog, s) for s in prog.statements))


def _access_map(prog: Program, stmt: Statement, access) -> isl.UnionMap:
    text = f"{params_prefix(prog)}{{ {tuple_of(stmt)} -> {access.isl()} }}"
    return _parse(isl.UnionMap, text, f"statement {stmt.name} access {access.isl()}")


def _union(maps: list[isl.UnionMap], prog: Program) -> isl.UnionMap:
    empty = isl.UnionMap.empty(context(prog).get_space())
    return functools.reduce(isl.UnionMap.union, maps, empty)


def accesses(prog: Program) -> tuple[isl.UnionMap, isl.UnionMap]:
    """(reads, writes): statement instance -> tensor element, restricted to the domains."""
    names = set(prog.tensors)
    reads = _union([_access_map(prog, s, a) for s in prog.statements for a in s.reads(names)], prog)
    writes = _union([_access_map(prog, s, s.write(names)) for s in prog.statements], prog)
    dom = domains(prog)
    return reads.intersect_domain(dom), writes.intersect_domain(dom)


def check_bounds(prog: Program) -> None:
    """Every access stays inside its tensor's shape (an out-of-bounds program would crash or lie)."""
    reads, writes = accesses(prog)
    for t in prog.tensors.values():
        dims = ", ".join(f"d{k}" for k in range(len(t.shape)))
        inside = " and ".join(f"0 <= d{k} < {e}" for k, e in enumerate(t.shape)) or "1 = 1"
        box = _parse(isl.UnionSet, f"{params_prefix(prog)}{{ {t.name}[{dims}] : {inside} }}", f"tensor {t.name}")
        used = reads.union(writes).range().intersect_params(context(prog))
        mine = used.intersect(_parse(isl.UnionSet, f"{{ {t.name}[{dims}] }}", t.name))
        if not mine.is_subset(box.intersect_params(context(prog))):
            raise ProgramError(f"program {prog.name}: an access to {t.name} leaves its shape {list(t.shape)}")
