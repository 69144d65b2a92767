"""Data dependences of a program, exact (value-based) and computed by isl's dataflow analysis.

`dependences(prog)` gives the three kinds as isl union maps from source instance to sink instance,
both in the original program order:

- RAW (flow): each read to the write that last stored the value it reads (`compute_flow` with the
  reads as sinks and the writes as must-sources);
- WAW (output): each write to the write that last stored the same element before it;
- WAR (anti): each read to the first write that overwrites the element after it, found as the
  flow analysis run backwards in time (reads as sinks of the *reversed* schedule).

Value-based dependences are what a transformation must respect: a memory-based one that a later
write already covers adds nothing but false constraints (heat2d's time loop would otherwise look
more constrained than it is).  Legality (`llmopt.poly.legality`) checks every transformed schedule
against `Dependences.all`.

The analysis runs on plain integer sets: the program's context fixes every size parameter to one
value, so the accesses and the schedule are specialized to it first.  The answer is the same as the
parametric analysis with its parameters projected out afterwards (checked on all 13 benchmarks), and
heat3d's takes 22 ms instead of 115 ms: most of the agent's time on it (it checks legality, so it
needs the dependences once per program).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import islpy as isl

from llmopt.poly.polyhedral import accesses, context
from llmopt.poly.program import Program
from llmopt.poly.schedule import original, schedule_map


@dataclass
class Dependences:
    raw: isl.UnionMap
    war: isl.UnionMap
    waw: isl.UnionMap

    @functools.cached_property  # every legality check uses it: unite and coalesce once
    def all(self) -> isl.UnionMap:
        return self.raw.union(self.war).union(self.waw).coalesce()

    def summary(self) -> dict[str, str]:
        """Readable form (isl text) of each kind, for reports and debugging."""
        return {"raw": str(self.raw), "war": str(self.war), "waw": str(self.waw)}


def _flow(sink: isl.UnionMap, source: isl.UnionMap, sched: isl.UnionMap) -> isl.UnionMap:
    info = isl.UnionAccessInfo.from_sink(sink).set_must_source(source).set_schedule_map(sched)
    flow = info.compute_flow()
    return flow.get_may_dependence()  # contains the must dependences


def reversed_time(sched: isl.UnionMap) -> isl.UnionMap:
    """The schedule with every time dimension negated (latest instance first)."""
    n = sched.range().as_set().get_space().dim(isl.dim_type.set)
    names = ", ".join(f"x{k}" for k in range(n))
    neg = ", ".join(f"-x{k}" for k in range(n))
    return sched.apply_range(isl.UnionMap(f"{{ [{names}] -> [{neg}] }}"))


def at_context(umap: isl.UnionMap, prog: Program) -> isl.UnionMap:
    """`umap` at the sizes `prog`'s context fixes, its parameters projected out."""
    return umap.intersect_params(context(prog)).project_out_all_params().coalesce()


def dependences(prog: Program) -> Dependences:
    """RAW, WAR and WAW dependences of `prog` in its original order, without parameters (module docstring)."""
    reads, writes, sched = (at_context(m, prog) for m in (*accesses(prog), schedule_map(prog, original(prog))))
    raw = _flow(reads, writes, sched)
    waw = _flow(writes, writes, sched)
    war = _flow(reads, writes, reversed_time(sched)).reverse()  # write-after -> read, turned around
    return Dependences(raw.coalesce(), war.coalesce(), waw.coalesce())
