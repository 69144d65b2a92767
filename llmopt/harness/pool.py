"""A pool of persistent, crash-isolated worker processes.

A task is run by a worker function named "package.module:function" that takes a payload and
returns a picklable result.  When LLVM aborts (a fatal error inside a pass) or a task hangs past
its timeout, only that worker dies: the pool restarts it, reports that one task as failed with
the error text LLVM printed, and re-sends the worker's other queued tasks.

Tasks are sent to workers in small batches and results stream back one by one, so a batch costs
one pipe round trip while a crash still loses only the task in flight.
"""

from __future__ import annotations

import importlib
import multiprocessing as mp
import os
import tempfile
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any


@dataclass
class TaskOutcome:
    """What happened to one task: `ok` with `value`, or not ok with `error` text."""

    ok: bool
    value: Any = None
    error: str | None = None
    crashed: bool = False  # the worker died (LLVM abort) or hung (timeout)


def _resolve(target: str) -> Callable[[Any], Any]:
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


def _worker_main(target: str, conn: Connection, stderr_path: str) -> None:
    # LLVM prints its fatal errors to fd 2 before aborting: keep them where the parent can read them.
    fd = os.open(stderr_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(fd, 2)
    try:
        fn = _resolve(target)
    except Exception as err:
        conn.send(("startup-failed", f"{type(err).__name__}: {err}"))
        return
    conn.send(("ready", None))
    while True:
        try:
            batch = conn.recv()
        except (EOFError, KeyboardInterrupt):
            return
        if batch is None:
            return
        for task_id, payload in batch:
            try:
                conn.send((task_id, True, fn(payload)))
            except Exception as err:  # a Python-level failure of one task, worker stays up
                message = f"{type(err).__name__}: {err}".strip()
                conn.send((task_id, False, message or traceback.format_exc(limit=1)))


class _Worker:
    def __init__(self, ctx, target: str):
        self.stderr = tempfile.NamedTemporaryFile(prefix="llmopt-worker-", suffix=".err", delete=False)
        self.stderr.close()
        parent, child = ctx.Pipe()
        self.conn = parent
        self.process = ctx.Process(target=_worker_main, args=(target, child, self.stderr.name), daemon=True)
        self.process.start()
        child.close()
        self.inflight: deque[int] = deque()  # task ids sent, in order
        self.deadline = 0.0
        self.ready = False

    def wait_ready(self, timeout: float = 120.0) -> None:
        """Block until the worker has imported its task function; raise if it cannot start."""
        if self.ready:
            return
        if not self.conn.poll(timeout):
            raise RuntimeError(f"harness worker did not start within {timeout:g}s")
        try:
            status, detail = self.conn.recv()
        except (EOFError, OSError):
            status, detail = "startup-failed", self.crash_message()
        if status != "ready":
            raise RuntimeError(f"harness worker failed to start: {detail}")
        self.ready = True

    def crash_message(self) -> str:
        try:
            with open(self.stderr.name, errors="replace") as fh:
                text = fh.read()[-4000:]
        except OSError:
            text = ""
        lines = [ln for ln in text.strip().splitlines() if ln.strip() and not ln.startswith(("Stack dump", " #", "#"))]
        return " | ".join(lines[-3:]) if lines else f"worker died (exit code {self.process.exitcode})"

    def kill(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join(timeout=5)
        self.conn.close()
        try:
            os.unlink(self.stderr.name)
        except OSError:
            pass


class WorkerPool:
    """`run(payloads) -> list[TaskOutcome]` over `workers` crash-isolated processes."""

    def __init__(self, target: str, workers: int | None = None, timeout: float = 30.0, batch_size: int = 8):
        self.target = target
        self.n_workers = max(1, workers or os.cpu_count() or 1)
        self.timeout = timeout
        self.batch_size = batch_size
        self._ctx = mp.get_context("spawn")  # fork is unsafe once torch / threads are loaded
        self._workers: list[_Worker] = []
        self.restarts = 0

    def start(self) -> None:
        """Launch the workers without waiting for them: callers with other start-up work (loading a
        model) call this first so the workers' imports run on the other core meanwhile."""
        while len(self._workers) < self.n_workers:
            self._workers.append(_Worker(self._ctx, self.target))

    def _ensure_started(self) -> None:
        self.start()
        for worker in self._workers:
            worker.wait_ready()

    def _restart(self, index: int) -> None:
        self._workers[index].kill()
        self._workers[index] = _Worker(self._ctx, self.target)
        self._workers[index].wait_ready()
        self.restarts += 1

    def run(self, payloads: Iterable[Any], on_result: Callable[[int, TaskOutcome], None] | None = None
            ) -> list[TaskOutcome]:
        """Run every payload; outcome i belongs to payload i. `on_result` sees each as it lands."""
        payloads = list(payloads)
        outcomes: list[TaskOutcome | None] = [None] * len(payloads)
        pending = deque(range(len(payloads)))
        self._ensure_started()
        remaining = len(payloads)

        def finish(task_id: int, outcome: TaskOutcome) -> None:
            nonlocal remaining
            outcomes[task_id] = outcome
            remaining -= 1
            if on_result:
                on_result(task_id, outcome)

        while remaining:
            now = time.monotonic()
            for worker in self._workers:  # keep every worker fed with up to two batches
                while pending and len(worker.inflight) < 2 * self.batch_size:
                    batch = [pending.popleft() for _ in range(min(self.batch_size, len(pending)))]
                    if not worker.inflight:
                        worker.deadline = now + self.timeout
                    worker.inflight.extend(batch)
                    try:
                        worker.conn.send([(i, payloads[i]) for i in batch])
                    except (BrokenPipeError, OSError):
                        break  # noticed as a crash below
            ready = wait([w.conn for w in self._workers if w.inflight], timeout=0.05)
            for index, worker in enumerate(self._workers):
                if not worker.inflight:
                    continue
                crashed = False
                if worker.conn in ready:
                    try:
                        while worker.conn.poll():
                            task_id, ok, value = worker.conn.recv()
                            worker.inflight.remove(task_id)
                            worker.deadline = time.monotonic() + self.timeout
                            finish(task_id, TaskOutcome(True, value) if ok else TaskOutcome(False, error=value))
                    except (EOFError, OSError):
                        crashed = True
                timed_out = not crashed and worker.inflight and time.monotonic() > worker.deadline
                if crashed or timed_out or (worker.inflight and not worker.process.is_alive()):
                    victim = worker.inflight.popleft()
                    if timed_out:
                        error = f"timed out after {self.timeout:g}s"
                    else:
                        worker.process.join(timeout=2)
                        error = f"LLVM crashed: {worker.crash_message()}"
                    pending.extendleft(reversed(worker.inflight))  # re-run the innocent ones
                    worker.inflight.clear()
                    self._restart(index)
                    finish(victim, TaskOutcome(False, error=error, crashed=True))
        return outcomes  # type: ignore[return-value]

    def close(self) -> None:
        for worker in self._workers:
            try:
                worker.conn.send(None)
            except (BrokenPipeError, OSError):
                pass
            worker.kill()
        self._workers = []

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass
