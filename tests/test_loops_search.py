"""Every search returns a valid, measured state no worse than the start (its speed: scripts/bench_loops.py)."""

import pytest

from llmopt.loops.nest import Nest, matmul, validate
from llmopt.loops.search import SEARCHES


@pytest.mark.parametrize("name", sorted(SEARCHES))
def test_search(backend, name):
    start = Nest.untiled(matmul(32, 32, 16))
    res = SEARCHES[name](start, backend, 1.5)
    validate(res.nest)
    assert res.gflops >= backend.gflops(start) and res.evaluations >= 1
