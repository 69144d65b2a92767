"""Compile-and-measure backend for scheduled nests (our stand-in for LoopNest).

`Backend.gflops(nest)` generates C (codegen), compiles it with clang into a shared object kept
in a cache directory, checks the result against numpy and times it inside the compiled code in
a crash-isolated worker.  Several kernels missing from the cache compile together (one
translation unit per batch, batches in parallel threads), because clang's start-up costs more
than compiling a kernel.  Measurements are memoized in `ResultCache` under a hash of the
schedule, the code generator version and the machine, so a repeated question never compiles.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from llmopt.harness.cache import DEFAULT_CACHE_DIR, ResultCache, make_key, open_cache, scratch_cache
from llmopt.llvm.toolchain import find_toolchain
from llmopt.loops.codegen import CODEGEN_VERSION, PEAK_SOURCE, Target, batch_source, generate
from llmopt.loops.nest import Nest
from llmopt.loops.worker import MEASURE_VERSION, KernelWorker

# No clang vectorizers: like LoopNest, only the innermost loop of the schedule is vector code.
COMPILE_FLAGS = ["-O3", "-march=native", "-fno-vectorize", "-fno-slp-vectorize", "-ffp-contract=fast",
                 "-shared", "-fPIC", "-w"]


def cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def host_target() -> Target:
    """16 float lanes and 32 registers with AVX-512, 8 lanes with AVX, 4 otherwise (16 registers)."""
    flags = cpu_flags()
    if "avx512f" in flags:
        return Target(lanes=16, acc_budget=24)
    return Target(lanes=8 if "avx" in flags else 4, acc_budget=12)


def compile_flags() -> list[str]:
    # clang splits 512-bit vector types into two 256-bit halves unless told otherwise.
    return COMPILE_FLAGS + (["-mprefer-vector-width=512"] if "avx512f" in cpu_flags() else [])


def machine_id() -> str:
    """Short hash of what a timing depends on: CPU model and flags, compiler, flags."""
    model = ""
    try:
        model = next((ln for ln in Path("/proc/cpuinfo").read_text().splitlines() if "model name" in ln), "")
    except OSError:
        pass
    blob = "|".join([model, " ".join(sorted(cpu_flags())), find_toolchain().clang, " ".join(compile_flags())])
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


class CompileError(RuntimeError):
    """clang rejected generated code (a bug in codegen: the message holds clang's first lines)."""


class Backend:
    """GFLOPS of scheduled nests; thread-safe; one measuring worker so timings never overlap."""

    def __init__(self, cache: ResultCache | None = None, cache_dir: str | os.PathLike | None = None,
                 target: Target | None = None, min_seconds: float = 0.01, timeout: float = 30.0,
                 compile_threads: int = 2, worker: KernelWorker | None = None, keep_objects: bool = True,
                 max_batch: int = 8):
        # The shared kernel cache; a corrupt file is replaced, an unusable path means a private one.
        self.cache = cache if cache is not None else open_cache(DEFAULT_CACHE_DIR / "loops.sqlite") or scratch_cache()
        self.cache_dir = Path(cache_dir) if cache_dir else DEFAULT_CACHE_DIR / "loops_so"
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        self.target = target or host_target()
        self.min_seconds = min_seconds
        self.keep_objects = keep_objects  # False: delete each .so once measured (training makes thousands)
        self._owns_worker = worker is None
        self.worker = worker if worker is not None else KernelWorker(timeout=timeout)
        self._clang = find_toolchain().clang
        self._machine = machine_id()
        self._lock = threading.Lock()  # one measurement at a time per backend
        self._threads = compile_threads
        self.max_batch = max_batch  # kernels per clang run (clang's start-up dominates one kernel)
        self._pool: ThreadPoolExecutor | None = None
        self.compiles = 0  # how many times clang ran (tests check that cache hits avoid it)
        self.measurements = 0
        self._peak: float | None = None

    def __deepcopy__(self, memo) -> Backend:
        return self  # a shared service (worker process, cache): copies of an env share it

    def key(self, nest: Nest) -> str:
        return make_key("loops", CODEGEN_VERSION, MEASURE_VERSION, self._machine, self.target.lanes, self.target.acc_budget,
                        self.min_seconds, nest.schedule_key())

    def compile(self, source: str, stem: str) -> Path:
        """Shared object for `source` at cache_dir/stem.so (reused when it exists)."""
        so = self.cache_dir / f"{stem}.so"
        if so.exists():
            return so
        with tempfile.TemporaryDirectory() as tmp:
            c_file, tmp_so = Path(tmp) / "k.c", Path(tmp) / "k.so"
            c_file.write_text(source)
            proc = subprocess.run([self._clang, *compile_flags(), str(c_file), "-o", str(tmp_so)],
                                  capture_output=True, text=True, timeout=120)
            self.compiles += 1
            if proc.returncode != 0:
                raise CompileError("clang failed: " + "\n".join(proc.stderr.splitlines()[:5]))
            os.replace(tmp_so, so)  # atomic: a concurrent reader never sees half a file
        return so

    def measure(self, nest: Nest) -> dict:
        """{"ok", "gflops", "seconds"} or {"ok": False, "error"}; cached."""
        return self.measure_many([nest])[0]

    def measure_many(self, nests: list[Nest]) -> list[dict]:
        """Measure several nests: cache first, compile the misses in parallel batches (several
        kernels per clang run, see `batches`), then time them one by one."""
        keys = [self.key(n) for n in nests]
        found = self.cache.get_many(list(dict.fromkeys(keys)))
        todo = {k: n for k, n in zip(keys, nests, strict=True) if k not in found}
        if todo:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self._threads)
            jobs = [(batch, self._pool.submit(self._compile_batch, batch))
                    for batch in self.batches(list(todo.items()))]
            # All compiles finish before the first timing, so no clang of ours competes with it
            # (fastest-of-repeats absorbed that well in a test; this removes the question).
            done = [(batch, fut.result()) for batch, fut in jobs]
            fresh = {}
            for batch, libs in done:
                for (k, _), lib in zip(batch, libs, strict=True):
                    if isinstance(lib, str):
                        fresh[k] = {"ok": False, "error": lib}
                        continue
                    with self._lock:
                        fresh[k] = self.worker.measure(str(lib[0]), todo[k].op, True, self.min_seconds, lib[1])
                        self.measurements += 1
                if not self.keep_objects:
                    for so in {lib[0] for lib in libs if not isinstance(lib, str)}:
                        so.unlink(missing_ok=True)
            self.cache.put_many(fresh)
            found.update(fresh)
        return [found[k] for k in keys]

    def batches(self, items: list) -> list[list]:
        """Split the kernels to compile into at least `compile_threads` batches of at most
        `max_batch`, sizes as even as possible, order kept."""
        n = len(items)
        count = min(n, max(self._threads, -(-n // self.max_batch)))
        bounds = [round(i * n / count) for i in range(count + 1)]
        return [items[a:b] for a, b in zip(bounds, bounds[1:], strict=False) if b > a]

    def _compile_batch(self, batch: list[tuple[str, Nest]]) -> list[tuple[Path, str] | str]:
        """(shared object, symbol prefix) per (key, nest), or clang's error message.  A batch that
        fails to compile is retried kernel by kernel, so one bad kernel does not sink the others."""
        keys, nests = [k for k, _ in batch], [n for _, n in batch]
        if len(keys) > 1:
            stem = "b" + hashlib.sha256("|".join(keys).encode()).hexdigest()[:31]
            try:
                so = self.compile(batch_source(nests, self.target), stem)
                return [(so, f"k{j}_") for j in range(len(keys))]
            except (CompileError, subprocess.TimeoutExpired):
                pass
        out: list[tuple[Path, str] | str] = []
        for k, nest in zip(keys, nests, strict=True):
            try:
                out.append((self.compile(generate(nest, self.target), k[:32]), ""))
            except (CompileError, subprocess.TimeoutExpired) as err:
                out.append(str(err))
        return out

    def gflops(self, nest: Nest) -> float:
        """GFLOPS of `nest`, 0.0 when its kernel failed (wrong result, crash, timeout)."""
        res = self.measure(nest)
        return float(res["gflops"]) if res.get("ok") else 0.0

    def gflops_many(self, nests: list[Nest]) -> list[float]:
        return [float(r["gflops"]) if r.get("ok") else 0.0 for r in self.measure_many(nests)]

    def peak_gflops(self, iters: int = 20_000_000) -> float:
        """Single-core peak from a register-only FMA kernel (cached per machine)."""
        if self._peak is not None:
            return self._peak
        key = make_key("loops-peak", self._machine, self.target.lanes)
        hit = self.cache.get(key)
        if hit is None:
            acc = 12 if self.target.acc_budget <= 12 else 24
            src = f"#define LANES {self.target.lanes}\n#define ACC {acc}\n" + PEAK_SOURCE
            so = self.compile(src, f"peak_{key[:16]}")
            with self._lock:
                hit = self.worker.call("peak", str(so), iters)
            if not hit.get("ok"):
                raise RuntimeError(f"peak kernel failed: {hit.get('error')}")
            self.cache.put(key, hit)
        self._peak = float(hit["gflops"])
        return self._peak

    def close(self) -> None:
        """Stop the worker and compile threads; the backend restarts them if used again."""
        if self._owns_worker:
            self.worker.close()
        if self._pool is not None:
            self._pool.shutdown(wait=False)
            self._pool = None


def numpy_gflops(backend: Backend, nest: Nest, min_seconds: float = 0.2) -> float:
    """numpy's single-thread GFLOPS on `nest`'s contraction, measured in the backend's worker
    (which runs with OPENBLAS_NUM_THREADS=1 and threadpoolctl limits); cached per machine.
    The fastest of `min_seconds` of calls: measured once per shape, so longer than a kernel's
    timing (0.05 s once cached 112 instead of 150 GFLOPS for a shape on the shared machine)."""
    key = make_key("loops-numpy", MEASURE_VERSION, backend._machine, nest.op.name, min_seconds)
    hit = backend.cache.get(key)
    if hit is None:
        with backend._lock:
            hit = backend.worker.call("numpy", nest.op, min_seconds)
        if not hit.get("ok"):
            raise RuntimeError(f"numpy measurement failed: {hit.get('error')}")
        backend.cache.put(key, hit)
    return float(hit["gflops"])
