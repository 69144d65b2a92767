"""The busy-machine guard of loop-schedule timings: `CpuWatch` tells CPU taken by other processes from
our own and our children's, and `Measurer(quiet=...)` takes a run shared with a busy process again,
or reports "busy" (never memoized) when the machine does not get quiet in time."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from llmopt.harness.cache import ResultCache
from llmopt.poly.benchmarks import benchmark
from llmopt.poly.cpu_watch import CpuWatch
from llmopt.poly.measure import Measurer
from llmopt.poly.schedule import Schedule

SPIN = "import sys, time\nt = time.time()\nwhile time.time() - t < float(sys.argv[1]): pass\n"


def spinner(seconds: float) -> subprocess.Popen:
    """Another process that keeps one core busy for `seconds`."""
    proc = subprocess.Popen([sys.executable, "-c", SPIN, str(seconds)])
    time.sleep(0.2)  # started and spinning
    return proc


def test_watch_counts_other_processes_not_ours():
    # Noise from the shared machine (other guests' steal time included) only ever adds foreign CPU,
    # so the least of three watches is the one that says whether a child we wait for counts as ours.
    own = []
    for _ in range(3):
        with CpuWatch() as watch:
            subprocess.run([sys.executable, "-c", SPIN, "0.5"], check=True)  # a child we wait for is ours
        own.append(watch.foreign_cores())
    busy = spinner(1.5)
    try:
        with CpuWatch() as other:
            time.sleep(0.8)
    finally:
        busy.kill()
        busy.wait()
    assert min(own) < 0.35, own  # counted as foreign, the child alone would make about one core
    assert other.foreign_cores() > 0.6


@pytest.fixture()
def measurer(tmp_path):
    m = Measurer(ResultCache(tmp_path / "cache.sqlite"), repeats=2, timeout=60, quiet=0.3, patience=60)
    yield m
    m.close()


def test_a_run_beside_a_busy_process_is_taken_again(measurer):
    prog = benchmark("mvt")
    measurer.reference(prog)  # compiled and run once before the neighbour starts
    busy = spinner(2.0)
    try:
        got = measurer.paired(prog, Schedule(), rounds=2)
    finally:
        busy.kill()
        busy.wait()
    assert got["ok"], got
    assert measurer.stats()["retimed"] >= 1


def test_a_machine_that_stays_busy_is_an_error_that_is_not_memoized(measurer):
    prog = benchmark("mvt")
    measurer.reference(prog)
    measurer.patience = 1.0
    busy = spinner(30.0)
    try:
        got = measurer.measure(prog, Schedule())
    finally:
        busy.kill()
        busy.wait()
    assert not got["ok"] and got["error"].startswith("busy"), got
    measurer.patience = 60
    again = measurer.measure(prog, Schedule())  # asked again on a quiet machine: measured, not the cached error
    assert again["ok"], again
