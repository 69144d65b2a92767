"""A crash-isolated process that loads compiled kernels, checks them against numpy and times them.

A kernel that segfaults or hangs takes only this process down; `KernelWorker` notices (EOF or
timeout), kills it by pid and starts a fresh one for the next request.
"""

from __future__ import annotations

import contextlib
import ctypes
import mmap
import os
import pickle
import select
import struct
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from llmopt.loops.nest import Contraction

# Where tensors live when a kernel is timed.  A vector kernel's speed depends on its tensors'
# addresses: a B not aligned to 64 bytes cost one measured kernel a third of its GFLOPS, offsets
# within a 4 KiB page up to 20% more (L1 sets, 4K aliasing), and with 4 KiB pages the physical
# pages the process happened to get decided L2 conflicts: one kernel measured 85 GFLOPS in most
# worker processes and 124 in a few.  So every tensor and the kernel's temporary live in one
# arena backed by transparent huge pages (physically contiguous, 2 MiB aligned), tensor j
# (inputs, output, temporary) at a page boundary + (j + 1) KiB: the same layout in every process.
MEASURE_VERSION = 3  # part of every cached measurement's key (1: numpy arrays, 2: page offsets)
PAGE, STAGGER, HUGE_PAGE = 4096, 1024, 2 << 20
_arena: tuple[mmap.mmap, np.ndarray] | None = None  # (mapping, its 2 MiB-aligned bytes)


def _arena_bytes(size: int) -> np.ndarray:
    """At least `size` bytes starting at a 2 MiB boundary, huge pages requested (reused)."""
    global _arena
    if _arena is None or _arena[1].size < size:
        size = -(-size // HUGE_PAGE) * HUGE_PAGE
        mapping = mmap.mmap(-1, size + HUGE_PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        raw = np.frombuffer(mapping, dtype=np.uint8)
        start = (-raw.ctypes.data) % HUGE_PAGE
        with contextlib.suppress(AttributeError, OSError):  # no THP: still one contiguous layout
            mapping.madvise(mmap.MADV_HUGEPAGE, start, size)
        _arena = (mapping, raw[start : start + size])
    return _arena[1]


def placed(arrays: list[np.ndarray]) -> list[np.ndarray]:
    """Copies of `arrays` in the worker's arena: array j at a page boundary + (j + 1) * STAGGER.
    The copies stay valid until the next call (which reuses the arena)."""
    offsets, end = [], 0
    for j, arr in enumerate(arrays):
        offsets.append(-(-end // PAGE) * PAGE + (j + 1) * STAGGER)
        end = offsets[-1] + arr.nbytes
    mem = _arena_bytes(end)
    out = []
    for arr, off in zip(arrays, offsets, strict=True):
        view = mem[off : off + arr.nbytes].view(arr.dtype).reshape(arr.shape)
        view[...] = arr
        out.append(view)
    return out


def random_inputs(op: Contraction, seed: int = 0) -> list[np.ndarray]:
    """Float32 inputs in [-1, 1), one array per input tensor (row-major, contiguous)."""
    rng = np.random.default_rng(seed)
    shape = op.shape
    return [rng.uniform(-1, 1, size=shape[acc.tensor]).astype(np.float32) for acc in op.inputs]


def reference(op: Contraction, inputs: list[np.ndarray]) -> np.ndarray:
    """numpy result of the contraction (float64), for any affine index expressions: each input
    is viewed with one axis per iterator (stride = iterator stride) and contracted by einsum."""
    letters = {it: chr(ord("a") + j) for j, it in enumerate(op.iterators)}
    ext = op.extent
    views, subs = [], []
    for acc, arr in zip(op.inputs, inputs, strict=True):
        its = [it for it in op.iterators if op.iterator_stride(acc, it)]
        strides = [op.iterator_stride(acc, it) * arr.itemsize for it in its]
        views.append(np.lib.stride_tricks.as_strided(arr, shape=[ext[it] for it in its], strides=strides))
        subs.append("".join(letters[it] for it in its))
    out_sub = "".join(letters[it] for it in op.output_iterators)
    return np.einsum(",".join(subs) + "->" + out_sub, *(v.astype(np.float64) for v in views))


def _check_and_time(so_path: str, op: Contraction, check: bool, min_seconds: float,
                    prefix: str = "") -> dict[str, Any]:
    lib = ctypes.CDLL(so_path)
    kernel, bench = getattr(lib, prefix + "kernel"), getattr(lib, prefix + "bench")
    kernel.argtypes = [ctypes.c_void_p] * 4
    bench.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_double, ctypes.c_int]
    bench.restype = ctypes.c_double
    out_shape = op.shape[op.output.tensor]
    *inputs, out, temp = placed([*random_inputs(op), np.full(out_shape, np.nan, dtype=np.float32),
                                 np.zeros(out_shape, dtype=np.float32)])
    ptrs = [a.ctypes.data for a in inputs] + [out.ctypes.data, temp.ctypes.data]
    if check:
        kernel(*ptrs)
        ref = reference(op, inputs)
        if not np.allclose(out, ref, rtol=1e-3, atol=1e-3):
            err = float(np.nanmax(np.abs(out - ref))) if np.isfinite(out).any() else float("nan")
            return {"ok": False, "error": f"wrong result (max abs error {err:.3g})"}
    seconds = bench(*ptrs, min_seconds, 1_000_000)
    return {"ok": True, "seconds": seconds, "gflops": op.flops / seconds * 1e-9}


def _peak(so_path: str, iters: int) -> dict[str, Any]:
    lib = ctypes.CDLL(so_path)
    lib.peak.argtypes = [ctypes.c_long, ctypes.c_float]
    lib.peak.restype = ctypes.c_double
    return {"ok": True, "gflops": lib.peak(iters, 0.5)}


def _numpy_gflops(op: Contraction, min_seconds: float) -> dict[str, Any]:
    """Single-thread numpy (BLAS) on the same contraction: fastest of repeated einsum/matmul calls."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # OPENBLAS_NUM_THREADS=1 in the worker's environment does the same
        threadpool_limits = None
    a, b = placed(random_inputs(op))
    fn = (lambda: a @ b) if op.name.startswith(("mm_", "bmm_")) else (lambda: reference(op, [a, b]))
    limits = threadpool_limits(1) if threadpool_limits else contextlib.nullcontext()
    with limits:
        for _ in range(3):
            fn()
        best, start = float("inf"), time.perf_counter()
        while time.perf_counter() - start < min_seconds or best == float("inf"):
            t0 = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - t0)
    return {"ok": True, "seconds": best, "gflops": op.flops / best * 1e-9}


def _send(stream, obj: Any) -> None:
    blob = pickle.dumps(obj)
    stream.write(struct.pack("<Q", len(blob)) + blob)
    stream.flush()


def _recv(stream) -> Any:
    head = stream.read(8)
    if len(head) < 8:
        raise EOFError
    return pickle.loads(stream.read(struct.unpack("<Q", head)[0]))


def _serve() -> None:
    """Worker main loop: requests on stdin, results on stdout (length-prefixed pickles)."""
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # stray prints must not corrupt the protocol
    while True:
        try:
            kind, args = _recv(inp)
        except EOFError:
            return
        try:
            handler = {"measure": _check_and_time, "peak": _peak, "numpy": _numpy_gflops}[kind]
            result = handler(*args)
        except Exception as err:  # noqa: BLE001 - reported to the caller, the worker lives on
            result = {"ok": False, "error": f"{type(err).__name__}: {err}"}
        _send(out, result)


@dataclass
class KernelWorker:
    """One measuring process; `call` returns {"ok": False, "error": ...} on crash or timeout.

    A plain subprocess (not multiprocessing) so it also works inside daemonic processes such
    as SubprocVecEnv's env workers.
    """

    timeout: float = 30.0
    _proc: Any = None

    def _start(self) -> None:
        env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
        self._proc = subprocess.Popen([sys.executable, "-m", "llmopt.loops.worker"], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, env=env)

    def call(self, kind: str, *args: Any) -> dict[str, Any]:
        if self._proc is None or self._proc.poll() is not None:
            self._start()
        try:
            _send(self._proc.stdin, (kind, args))
            ready, _, _ = select.select([self._proc.stdout], [], [], self.timeout)
            if not ready:
                self.close()
                return {"ok": False, "error": f"timeout after {self.timeout:.0f} s"}
            return _recv(self._proc.stdout)
        except (EOFError, BrokenPipeError, ConnectionResetError, pickle.UnpicklingError):
            self.close()
            return {"ok": False, "error": "kernel crashed the worker"}

    def measure(self, so_path: str, op: Contraction, check: bool = True, min_seconds: float = 0.01,
                prefix: str = "") -> dict:
        """Check and time the kernel `{prefix}kernel` / `{prefix}bench` of the library `so_path`."""
        return self.call("measure", so_path, op, check, min_seconds, prefix)

    def close(self) -> None:
        if self._proc is not None:
            if self._proc.poll() is None:
                self._proc.kill()  # only the process this worker started
            self._proc.wait(timeout=5)
            for stream in (self._proc.stdin, self._proc.stdout):
                stream.close()
        self._proc = None


if __name__ == "__main__":
    _serve()
