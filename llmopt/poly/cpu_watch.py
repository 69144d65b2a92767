"""How much CPU *other* processes used while we timed something: the guard of noisy-machine timings.

A timed run of a 2-thread OpenMP program on a 2-core machine needs both cores; any other busy
process takes one, and the run comes out slow (the cost model's data lost its parallel speedups
that way: docs/benchmarks.md).  The load average lags by a minute and cannot say which run was hit.
`CpuWatch` can: around a timed run it reads the machine's busy time (/proc/stat: user, nice,
system, irq, softirq and steal, the last being time the hypervisor gave to other guests) and this
process's own CPU time and that of its finished children (`os.times`), and the difference is the
CPU that went to someone else during the run, in core-seconds.

    with CpuWatch() as watch:
        run_the_binary()
    if watch.foreign_cores() > 0.1: ...  # more than a tenth of a core went elsewhere: time it again

Where /proc/stat is missing (not Linux) the watch reports 0 and guards nothing.
"""

from __future__ import annotations

import os
import time

_HZ = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
SLACK_TICKS = 2  # /proc/stat counts in clock ticks (10 ms): a short run may see two ticks of rounding


def machine_busy_seconds() -> float | None:
    """Busy CPU seconds of the whole machine since boot (all cores), or None without /proc/stat."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()[1:]
    except OSError:
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in fields[:8])
    return (user + nice + system + irq + softirq + steal) / _HZ


def own_cpu_seconds() -> float:
    """CPU seconds of this process and of its children that have been waited for."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


class CpuWatch:
    """Foreign CPU (core-seconds used by other processes) over a `with` block; module docstring."""

    def __enter__(self) -> CpuWatch:
        self._busy, self._own, self._wall = machine_busy_seconds(), own_cpu_seconds(), time.perf_counter()
        self.foreign = self.wall = 0.0
        return self

    def __exit__(self, *exc) -> None:
        busy = machine_busy_seconds()
        self.wall = time.perf_counter() - self._wall
        if busy is None or self._busy is None:
            return
        own = own_cpu_seconds() - self._own
        self.foreign = max(0.0, busy - self._busy - own - SLACK_TICKS / _HZ)

    def foreign_cores(self) -> float:
        """Average number of cores other processes kept busy during the block."""
        return self.foreign / max(self.wall, 1e-9)


def wait_until_quiet(max_cores: float, patience: float, window: float = 1.0) -> bool:
    """Sleep until a `window` of seconds passes with other processes using at most `max_cores`
    (this process sleeps, so everything busy is foreign); False when `patience` seconds run out."""
    deadline = time.monotonic() + patience
    while True:
        with CpuWatch() as watch:
            time.sleep(window)
        if watch.foreign_cores() <= max_cores:
            return True
        if time.monotonic() >= deadline:
            return False
