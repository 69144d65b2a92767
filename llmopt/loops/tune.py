"""Tune one matmul nest: the trained policy (no measurements), optionally followed by a short
search from the policy's schedule, then measure the result against the start schedule and numpy."""

from __future__ import annotations

import time
from typing import Any

from llmopt.loops.agent import Policy
from llmopt.loops.backend import Backend, numpy_gflops
from llmopt.loops.nest import Nest, matmul
from llmopt.loops.search import SEARCHES


def tune(m: int, n: int, k: int, policy: Policy, backend: Backend, search: str | None = None,
         search_seconds: float = 1.0) -> dict[str, Any]:
    """Schedule C[M, N] = A[M, K] @ B[K, N]; `seconds` is the time spent choosing the schedule
    (policy inference + optional search), the measurements reported after it are not included."""
    start = Nest.untiled(matmul(m, n, k))
    t0 = time.perf_counter()
    nest, actions = policy.actions(start)
    if search:
        res = SEARCHES[search](nest.with_loops(nest.loops, len(nest.compute), 0), backend, search_seconds)
        nest = res.nest
    seconds = time.perf_counter() - t0
    g, g0 = backend.gflops_many([nest, start])
    return {
        "shape": [m, n, k],
        "schedule": nest.describe(),
        "actions": actions,
        "gflops": g,
        "gflops_start": g0,
        "gflops_numpy": numpy_gflops(backend, start),
        "peak_gflops": backend.peak_gflops(),
        "seconds": seconds,
    }
