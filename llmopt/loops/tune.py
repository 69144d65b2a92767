"""Tune one matmul nest: the trained policy, expanded into its `candidates` most confident distinct
schedules (Priority Sampling) that are compiled and measured to keep the fastest, optionally
followed by a short search from there; then the result is measured against the start schedule
and numpy."""

from __future__ import annotations

import time
from typing import Any

from llmopt.loops.agent import Policy
from llmopt.loops.backend import Backend, numpy_gflops
from llmopt.loops.nest import Nest, matmul
from llmopt.loops.search import SEARCHES

# Measured on 40 unseen shapes under load ~3.5 on the 2-core machine: 8 candidates 0.50 s median
# (0.62 max), 0.876x numpy; 16: 0.88 s (1.12 max), 0.886x; 1 (greedy): 0.854x (docs/benchmarks.md).
DEFAULT_CANDIDATES = 8


def best_candidate(start: Nest, policy: Policy, backend: Backend, candidates: int) -> tuple[Nest, list[str], int]:
    """The fastest of the policy's `candidates` most confident schedules (1: the greedy rollout,
    not measured); returns (nest, actions, its rank in Priority Sampling order)."""
    if candidates <= 1:
        nest, actions = policy.actions(start)
        return nest, actions, 0
    cands = policy.candidates(start, candidates)
    gs = backend.gflops_many([c.nest for c in cands])
    best = max(range(len(cands)), key=lambda i: (gs[i], -i))  # ties: the more confident one
    return cands[best].nest, cands[best].actions, best


def tune(m: int, n: int, k: int, policy: Policy, backend: Backend, search: str | None = None,
         search_seconds: float = 1.0, candidates: int = DEFAULT_CANDIDATES) -> dict[str, Any]:
    """Schedule C[M, N] = A[M, K] @ B[K, N]; `seconds` is the time spent choosing the schedule
    (policy inference, compiling and measuring the candidates, optional search); measuring the
    start schedule and numpy for the report is not included."""
    start = Nest.untiled(matmul(m, n, k))
    t0 = time.perf_counter()
    nest, actions, rank = best_candidate(start, policy, backend, candidates)
    if search:
        res = SEARCHES[search](nest.with_loops(nest.loops, len(nest.compute), 0), backend, search_seconds)
        nest = res.nest
    seconds = time.perf_counter() - t0
    g, g0 = backend.gflops_many([nest, start])
    return {
        "shape": [m, n, k],
        "schedule": nest.describe(),
        "actions": actions,
        "candidates": max(candidates, 1),
        "candidate_rank": rank,
        "gflops": g,
        "gflops_start": g0,
        "gflops_numpy": numpy_gflops(backend, start),
        "peak_gflops": backend.peak_gflops(),
        "seconds": seconds,
    }
