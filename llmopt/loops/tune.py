"""Tune one matmul nest: the trained policy, expanded into its `candidates` most confident distinct
schedules (Priority Sampling) that are compiled and measured to keep the fastest, optionally
followed by a short search from there; then the result is measured against the start schedule
and numpy."""

from __future__ import annotations

import time
from typing import Any

from llmopt.loops import DEFAULT_CANDIDATES, MAX_CANDIDATES  # noqa: F401 - re-exported
from llmopt.loops.backend import Backend, numpy_gflops
from llmopt.loops.nest import Nest, matmul
from llmopt.loops.policy import Policy
from llmopt.loops.search import SEARCHES

# The untiled start schedule of 1024^3 (2^31 flops) already runs into the 30 s measuring timeout
# (~50 s in all on the 2-core machine): a larger nest would only measure timeouts.
MAX_FLOPS = 2 * 1024**3
BYTES_PER_ELEMENT = 32  # float32 A, B, C and a scratch C, plus the float64 reference check


def _available_bytes() -> int:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 4 << 30


def check_shape(m: int, n: int, k: int) -> str | None:
    """Why C = A @ B of this shape cannot be tuned here (None when it can): a nest whose tensors do not
    fit in memory, or whose start schedule could not be measured within the timeout."""
    if min(m, n, k) < 1:
        return "M, N and K must be positive integers, e.g. `llmopt loops tune 128 128 128`"
    need = BYTES_PER_ELEMENT * (m * k + k * n + m * n)
    if need > _available_bytes() // 2:
        return (f"{m}x{n}x{k} needs about {need / 2**30:.1f} GiB for its tensors, more than half the memory "
                f"available ({_available_bytes() / 2**30:.1f} GiB)")
    if 2 * m * n * k > MAX_FLOPS:
        return (f"{m}x{n}x{k} is {2 * m * n * k:.2g} flops, above the {MAX_FLOPS:.2g} this tuner measures "
                "(its start schedule alone would time out): try shapes up to 1024x1024x1024")
    return None


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
