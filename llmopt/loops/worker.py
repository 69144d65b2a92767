"""A crash-isolated process that loads compiled kernels, checks them against numpy and times them.

A kernel that segfaults or hangs takes only this process down; `KernelWorker` notices (EOF or
timeout), kills it by pid and starts a fresh one for the next request.
"""

from __future__ import annotations

import ctypes
import multiprocessing as mp
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from llmopt.loops.nest import Contraction


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


def _check_and_time(so_path: str, op: Contraction, check: bool, min_seconds: float) -> dict[str, Any]:
    lib = ctypes.CDLL(so_path)
    lib.kernel.argtypes = [ctypes.c_void_p] * 3
    lib.bench.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_double, ctypes.c_int]
    lib.bench.restype = ctypes.c_double
    inputs = random_inputs(op)
    out = np.full(op.shape[op.output.tensor], np.nan, dtype=np.float32)
    ptrs = [a.ctypes.data for a in inputs] + [out.ctypes.data]
    if check:
        lib.kernel(*ptrs)
        ref = reference(op, inputs)
        if not np.allclose(out, ref, rtol=1e-3, atol=1e-3):
            err = float(np.nanmax(np.abs(out - ref))) if np.isfinite(out).any() else float("nan")
            return {"ok": False, "error": f"wrong result (max abs error {err:.3g})"}
    seconds = lib.bench(*ptrs, min_seconds, 1_000_000)
    return {"ok": True, "seconds": seconds, "gflops": op.flops / seconds * 1e-9}


def _peak(so_path: str, iters: int) -> dict[str, Any]:
    lib = ctypes.CDLL(so_path)
    lib.peak.argtypes = [ctypes.c_long, ctypes.c_float]
    lib.peak.restype = ctypes.c_double
    return {"ok": True, "gflops": lib.peak(iters, 0.5)}


def _serve(conn) -> None:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    while True:
        try:
            kind, args = conn.recv()
        except EOFError:
            return
        try:
            result = _check_and_time(*args) if kind == "measure" else _peak(*args)
        except Exception as err:  # noqa: BLE001 - reported to the caller, the worker lives on
            result = {"ok": False, "error": f"{type(err).__name__}: {err}"}
        conn.send(result)


@dataclass
class KernelWorker:
    """One measuring process; `call` returns {"ok": False, "error": ...} on crash or timeout."""

    timeout: float = 30.0
    _proc: Any = None
    _conn: Any = None

    def _start(self) -> None:
        ctx = mp.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_serve, args=(child,), daemon=True)
        self._proc.start()
        child.close()

    def call(self, kind: str, *args: Any) -> dict[str, Any]:
        if self._proc is None or not self._proc.is_alive():
            self._start()
        try:
            self._conn.send((kind, args))
            if not self._conn.poll(self.timeout):
                self.close()
                return {"ok": False, "error": f"timeout after {self.timeout:.0f} s"}
            return self._conn.recv()
        except (EOFError, BrokenPipeError, ConnectionResetError):
            code = self._proc.exitcode if self._proc is not None else None
            self.close()
            return {"ok": False, "error": f"kernel crashed (exit code {code})"}

    def measure(self, so_path: str, op: Contraction, check: bool = True, min_seconds: float = 0.01) -> dict:
        return self.call("measure", so_path, op, check, min_seconds)

    def close(self) -> None:
        if self._proc is not None:
            if self._proc.is_alive():
                self._proc.kill()  # only the process this worker started
            self._proc.join(timeout=5)
        if self._conn is not None:
            self._conn.close()
        self._proc = self._conn = None
