"""Emitted C is compiled by clang-19 and checked against the reference run (the original schedule);
measurements and legality are memoized in the ResultCache; the Polly baseline works."""

from __future__ import annotations

import pytest

from llmopt.harness.cache import ResultCache
from llmopt.poly.benchmarks import NAMES, benchmark
from llmopt.poly.emit import program_c
from llmopt.poly.legality import check
from llmopt.poly.measure import Measurer
from llmopt.poly.schedule import Parallel, Reversal, Schedule, Tile, Transform, Unroll, branches, state
from tests.test_poly_legality import CASES


@pytest.fixture(scope="module")
def measurer(tmp_path_factory):
    m = Measurer(ResultCache(tmp_path_factory.mktemp("poly") / "cache.sqlite"), repeats=1, timeout=60)
    yield m
    m.close()


def greedy_schedule(prog) -> Schedule:
    """A Pearl-like schedule built from legal steps only: per branch, parallelize the outermost
    loop that allows it, tile the two loops below it by (4, 8), unroll the innermost by 4."""
    sched = Schedule()
    for branch in branches(state(prog, sched)):
        stmt = branch[0]
        steps: list[list[Transform]] = [[Parallel(stmt, 0), Tile(stmt, 1, sizes=(4, 8))],
                                        [Parallel(stmt, 1), Tile(stmt, 2, sizes=(4, 8))], [Unroll(stmt, factor=4)]]
        for group in steps:
            for t in group:
                if check(prog, sched.then(t))[0]:
                    sched = sched.then(t)
    return sched


@pytest.mark.parametrize("name", NAMES)
def test_every_benchmark_schedule_matches_the_reference(measurer, name):
    prog = benchmark(name, small=True)
    sched = greedy_schedule(prog)
    assert sched.transforms, "some transformation applies to every benchmark"
    result = measurer.measure(prog, sched)
    assert result["ok"], (sched, result)
    assert measurer.speedup(prog, sched) > 0


LEGAL = [c for c in CASES if c[4]]


@pytest.mark.parametrize("what, name, before, transform, legal", LEGAL, ids=[c[0] for c in LEGAL])
def test_every_allowed_transformation_emits_correct_code(measurer, what, name, before, transform, legal):
    prog = benchmark(name, small=True)
    result = measurer.measure(prog, Schedule(before).then(transform))
    assert result["ok"], result


def test_an_illegal_schedule_is_caught_by_the_output_check(measurer):
    prog = benchmark("seidel2d", small=True)
    result = measurer.measure(prog, Schedule((Reversal("S0", 2),)))
    assert not result["ok"] and result["error"].startswith("wrong result")


def test_pragmas_in_the_emitted_code():
    prog = benchmark("heat2d", small=True)
    code = program_c(prog, Schedule((Parallel("S0", 1), Unroll("S0", factor=8))))
    assert "#pragma omp parallel for\n    for (int c3 = " in code
    assert "#pragma clang loop unroll_count(8)" in code and "seconds %.9f" in code


def test_measurements_are_memoized(measurer, tmp_path):
    prog = benchmark("jacobi2d", small=True)
    sched = Schedule((Parallel("S0", 1),))
    first = measurer.measure(prog, sched)
    compiles, hits = measurer.compiles, measurer.hits
    assert measurer.measure(prog, sched) == first
    assert measurer.compiles == compiles and measurer.hits == hits + 1
    other = Measurer(measurer.cache, repeats=1)  # another process on the same cache file
    assert other.measure(prog, sched) == first and other.compiles == 0 and other.stats()["hit_rate"] == 1.0
    other.close()


def test_a_cut_off_stops_timing_and_is_not_reused_for_a_looser_question(tmp_path):
    prog = benchmark("gemm", small=True)
    sched = Schedule((Unroll("S0", factor=2),))
    m = Measurer(ResultCache(tmp_path / "c.sqlite"), repeats=1000, timeout=60)
    cut = m.measure(prog, sched, cutoff=1e-12)  # every run is slower than that: timing stops at the first
    assert cut["ok"] and cut["cut"] and cut["seconds"] > 1e-12
    assert m.measure(prog, sched, cutoff=1e-12) == cut  # as tight a question: the cut time answers it
    runs = m.runs
    full = m.measure(prog, sched)
    assert full["ok"] and "cut" not in full and m.runs == runs + 1  # no cut-off: measured again, fully
    m.close()


def test_baselines(measurer):
    prog = benchmark("gemm", small=True)
    o3, polly = measurer.baseline_o3(prog), measurer.baseline_polly(prog)
    assert o3["ok"] and o3["seconds"] > 0
    assert polly["ok"], polly  # Polly's output matches the reference too
