"""Cache hits avoid recompiling; a crashing kernel does not take the caller down."""

from llmopt.harness.cache import ResultCache
from llmopt.loops.actions import apply
from llmopt.loops.backend import Backend
from llmopt.loops.nest import Nest, matmul
from llmopt.loops.worker import KernelWorker


def test_cache_hits_avoid_recompiling(tmp_path):
    cache = ResultCache(tmp_path / "c.sqlite")
    b = Backend(cache, tmp_path / "so", min_seconds=0.0)
    nest = Nest.untiled(matmul(16, 16, 16))
    first = b.measure(nest)
    assert first["ok"] and b.compiles == 1 and b.measurements == 1
    assert b.measure(nest) == first
    assert b.measure(apply(nest, "down")) == first  # a cursor move is the same schedule
    assert b.compiles == 1 and b.measurements == 1
    b.close()
    again = Backend(ResultCache(tmp_path / "c.sqlite"), tmp_path / "so", min_seconds=0.0)
    assert again.measure(nest) == first and again.compiles == 0
    again.close()


def compile_bad_kernel(tmp_path, body: str, name: str):
    """A backend and a shared object whose kernel does `body` instead of a matmul."""
    b = Backend(ResultCache(tmp_path / "c.sqlite"), tmp_path / "so", min_seconds=0.0)
    src = f"void kernel(float* a, float* b, float* c, float* t) {{ {body} }}\n" \
          "double bench(float* a, float* b, float* c, float* t, double s, int r) { return 1.0; }\n"
    return b, b.compile(src, name)


def test_crashing_kernel_is_isolated(tmp_path):
    b, so = compile_bad_kernel(tmp_path, "*(volatile int*)0 = 1;", "crash")
    res = b.worker.measure(str(so), matmul(4, 4, 4))
    assert not res["ok"] and "crash" in res["error"]
    assert b.measure(Nest.untiled(matmul(8, 8, 8)))["ok"]  # a fresh worker took over
    b.close()


def test_hanging_kernel_times_out(tmp_path):
    b, so = compile_bad_kernel(tmp_path, "volatile int x = 1; while (x) {}", "hang")
    worker = KernelWorker(timeout=2.0)
    res = worker.measure(str(so), matmul(4, 4, 4))
    assert not res["ok"] and "timeout" in res["error"]
    worker.close()
    b.close()


def test_tensors_are_placed_at_fixed_offsets():
    """Timings depend on tensor addresses: every measurement uses the same layout."""
    import numpy as np

    from llmopt.loops.worker import HUGE_PAGE, PAGE, STAGGER, placed

    arrays = [np.arange(12, dtype=np.float32).reshape(3, 4), np.ones(5000, np.float32), np.zeros(7, np.float32)]
    out = placed(arrays)
    base = out[0].ctypes.data - STAGGER
    assert base % HUGE_PAGE == 0
    assert [o.ctypes.data - base for o in out] == [STAGGER, PAGE + 2 * STAGGER, 7 * PAGE + 3 * STAGGER]
    for a, o in zip(arrays, out, strict=True):
        assert np.array_equal(a, o) and o.flags.c_contiguous
