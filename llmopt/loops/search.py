"""Classic searches over LoopTune's action space, the baselines for the policy (paper Sec. V-B).

Every search starts from a nest, explores at most `depth` actions deep, measures states with the
shared `Backend` (so a state is never compiled twice, across searches too), stops at
`time_limit` seconds (checked after every batch of up to `BATCH` states, which the backend
compiles together, so it overruns by at most one such batch, ~0.2 s) and returns the best state
seen.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from llmopt.loops.actions import ACTIONS, apply, is_available
from llmopt.loops.backend import Backend
from llmopt.loops.nest import Nest

BATCH = 8  # states measured per backend call: two clang runs of 4 kernels on the 2 compile threads


@dataclass
class SearchResult:
    nest: Nest
    gflops: float
    evaluations: int  # states measured (cache hits included)
    seconds: float
    trace: list[tuple[float, float]] = field(default_factory=list)  # (elapsed s, best GFLOPS so far)


class _Run:
    """Book-keeping shared by the searches: deadline, best state, measurement."""

    def __init__(self, start: Nest, backend: Backend, time_limit: float):
        self.backend = backend
        self.t0 = time.monotonic()
        self.deadline = self.t0 + time_limit
        self.evaluations = 0
        self.best, self.best_g = start, backend.gflops(start)
        self.trace = [(0.0, self.best_g)]

    def expired(self) -> bool:
        return time.monotonic() > self.deadline

    def measure(self, nests: list[Nest]) -> list[float]:
        """GFLOPS of `nests`, in batches of `BATCH` so the deadline is checked often; states left
        unmeasured when time runs out get -inf."""
        gs: list[float] = []
        for i in range(0, len(nests), BATCH):
            if i and self.expired():
                gs += [float("-inf")] * (len(nests) - i)
                break
            gs += self.backend.gflops_many(nests[i : i + BATCH])
        measured = [(n, g) for n, g in zip(nests, gs, strict=True) if g != float("-inf")]
        self.evaluations += len(measured)
        for n, g in measured:
            if g > self.best_g:
                self.best, self.best_g = n, g
                self.trace.append((time.monotonic() - self.t0, g))
        return gs

    def result(self) -> SearchResult:
        return SearchResult(self.best, self.best_g, self.evaluations, time.monotonic() - self.t0, self.trace)


def _state(n: Nest) -> tuple:
    return (n.schedule_key(), n.cursor)


def children(nest: Nest) -> list[tuple[str, Nest]]:
    """(action, next nest) for every available action."""
    return [(a, apply(nest, a)) for a in ACTIONS if is_available(nest, a)]


def greedy(start: Nest, backend: Backend, lookahead: int = 1, time_limit: float = 60.0,
           depth: int = 10) -> SearchResult:
    """Take the first action of the best `lookahead`-long sequence; stop when nothing ahead beats
    the current state (ties continue, so the cursor can move) or a state would repeat."""
    run = _Run(start, backend, time_limit)
    cur, g_cur, seen = start, run.best_g, {_state(start)}
    for _ in range(depth):
        if run.expired():
            break
        # Every child's look-ahead frontier, measured in one call (the backend batches compiles).
        frontiers = []
        for a, child in children(cur):
            if _state(child) in seen:
                continue
            frontier = [child]
            for _ in range(lookahead - 1):
                frontier += [gc for f in frontier for _, gc in children(f)]
            frontiers.append((a, child, frontier))
        values = run.measure([n for _, _, f in frontiers for n in f])
        scored, i = [], 0
        for a, child, frontier in frontiers:
            vs, i = values[i : i + len(frontier)], i + len(frontier)
            if vs[0] != float("-inf"):  # measured before time ran out
                scored.append((max(vs), vs[0], a, child))
        if not scored:
            break
        value, g_child, _, child = max(scored, key=lambda s: (s[0], s[1]))
        if value < g_cur:
            break
        cur, g_cur = child, g_child
        seen.add(_state(cur))
    return run.result()


def beam(start: Nest, backend: Backend, width: int = 2, mode: str = "dfs", time_limit: float = 60.0,
         depth: int = 10) -> SearchResult:
    """Expand the `width` best children of every node, depth-first ("dfs") or level by level ("bfs")."""
    run = _Run(start, backend, time_limit)

    def best_children(node: Nest) -> list[Nest]:
        kids = [c for _, c in children(node)]
        gs = run.measure(kids)
        order = np.argsort(-np.array(gs), kind="stable")[:width]
        return [kids[i] for i in order]

    if mode == "dfs":
        def dfs(node: Nest, d: int) -> None:
            if d == depth or run.expired():
                return
            for child in best_children(node):
                dfs(child, d + 1)
                if run.expired():
                    return

        dfs(start, 0)
    elif mode == "bfs":
        level = [start]
        for _ in range(depth):
            nxt: list[Nest] = []
            for node in level:
                if run.expired():
                    return run.result()
                nxt += best_children(node)
            level = nxt
    else:
        raise ValueError(f"mode must be 'dfs' or 'bfs', got {mode!r}")
    return run.result()


def random_search(start: Nest, backend: Backend, time_limit: float = 60.0, depth: int = 10,
                  seed: int = 0) -> SearchResult:
    """Random `depth`-action episodes (uniform over available actions) until time runs out."""
    run = _Run(start, backend, time_limit)
    rng = np.random.default_rng(seed)
    for _ in itertools.count():
        if run.expired():
            break
        node, path = start, []
        for _ in range(depth):
            acts = [a for a in ACTIONS if is_available(node, a)]
            node = apply(node, acts[int(rng.integers(len(acts)))])
            path.append(node)
        run.measure(list({n.schedule_key(): n for n in path}.values()))
    return run.result()


SEARCHES: dict[str, Callable[..., SearchResult]] = {
    "greedy1": lambda s, b, t: greedy(s, b, 1, t),
    "greedy2": lambda s, b, t: greedy(s, b, 2, t),
    "beam2dfs": lambda s, b, t: beam(s, b, 2, "dfs", t),
    "beam4dfs": lambda s, b, t: beam(s, b, 4, "dfs", t),
    "beam2bfs": lambda s, b, t: beam(s, b, 2, "bfs", t),
    "beam4bfs": lambda s, b, t: beam(s, b, 4, "bfs", t),
    "random": lambda s, b, t: random_search(s, b, t),
}
