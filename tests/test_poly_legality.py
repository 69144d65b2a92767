"""Legality of every transformation: one program where it must be refused, one where it must be
allowed (llmopt.poly.legality, exact isl dependence analysis, no compiler)."""

from __future__ import annotations

import pytest

from llmopt.harness.cache import ResultCache
from llmopt.poly.actions import ACTIONS, NEXT, action_mask
from llmopt.poly.benchmarks import benchmark
from llmopt.poly.deps import dependences
from llmopt.poly.legality import Legality, carries, check, loop_carries, restrict
from llmopt.poly.schedule import (
    Fuse,
    Interchange,
    Parallel,
    Reversal,
    Schedule,
    ScheduleError,
    Skew,
    Tile,
    Unroll,
    branches,
    schedule_map,
    state,
)
from llmopt.poly.search import extensions

SKEWED_SEIDEL = (Skew("S0", 1), Skew("S0", 0))  # (t, i + t, j + i): tileable

CASES = [  # (transformation, benchmark, transforms before it, legal?)
    ("interchange across a carried dependence", "seidel2d", (), Interchange("S0", 1), False),
    ("interchange of independent loops", "mvt", (), Interchange("S1", 0), True),
    ("reversal of a loop carrying a dependence", "seidel2d", (), Reversal("S0", 2), False),
    ("reversal of a loop carrying none", "heat2d", (), Reversal("S0", 1), True),
    ("skewing of an imperfect nest", "gemm", (), Skew("S1", 1), False),
    ("skewing a stencil", "seidel2d", (), Skew("S0", 1), True),
    ("parallel time loop", "heat2d", (), Parallel("S0", 0), False),
    ("parallel space loop", "heat2d", (), Parallel("S0", 1), True),
    ("2D tiling of a non-permutable band", "seidel2d", (), Tile("S0", 1, sizes=(4, 4)), False),
    ("2D tiling after skewing", "seidel2d", SKEWED_SEIDEL, Tile("S0", 1, sizes=(32, 64)), True),
    ("2D tiling of a stencil", "jacobi2d", (), Tile("S0", 1, sizes=(4, 4)), True),
    ("3D tiling of a non-permutable band", "seidel2d", (), Tile("S0", 0, sizes=(4, 4, 4)), False),
    ("3D tiling of a stencil step", "heat3d", (), Tile("S0", 1, sizes=(4, 4, 4)), True),
    ("3D tiling of an imperfect nest", "gemm", (), Tile("S1", 0, sizes=(4, 4, 4)), False),
    ("unroll by 1", "seidel2d", (), Unroll("S0", factor=1), False),
    ("unroll", "seidel2d", (), Unroll("S0", factor=4), True),
    ("fusion against a dependence", "jacobi2d", (), Fuse("S0", 1), False),
    ("fusion of independent nests", "mvt", (), Fuse("S0", 0), True),
    ("interchange of time and space", "heat2d", (), Interchange("S0", 0), False),
    ("parallel after interchanging the space loops", "heat2d", (Interchange("S0", 1),), Parallel("S0", 1), True),
    ("interchange that distributes gemm's j loop (i-k-j)", "gemm", (), Interchange("S1", 1), True),
]


@pytest.mark.parametrize("what, name, before, transform, legal", CASES, ids=[c[0] for c in CASES])
def test_legality(what, name, before, transform, legal):
    prog = benchmark(name, small=True)
    sched = Schedule(before)
    assert check(prog, sched)[0], "the schedule before the transformation is legal"
    ok, reason = check(prog, sched.then(transform))
    assert ok == legal, reason


def test_exact_check_sees_problem_sizes():
    # One 32x32 tile covers the whole 20x20 test seidel2d: then tiling cannot reorder anything.
    assert check(benchmark("seidel2d", small=True), Schedule((Tile("S0", 1, sizes=(32, 32)),)))[0]
    assert not check(benchmark("seidel2d"), Schedule((Tile("S0", 1, sizes=(32, 32)),)))[0]


def test_tiling_moves_parallel_mark_to_tile_loop():
    st = state(benchmark("jacobi2d", small=True), Schedule((Parallel("S0", 1), Tile("S0", 1, sizes=(4, 4)))))
    assert st["S0"].parallel == {1} and st["S0"].depth == 5 and st["S1"].depth == 3
    assert st["S0"].loops[1] == "floor((i)/4)"


def test_not_applicable_raises_schedule_error():
    prog = benchmark("gemm", small=True)
    with pytest.raises(ScheduleError, match="fewer than"):
        state(prog, Schedule((Interchange("S0", 1),)))  # S0 itself has two loops
    with pytest.raises(ScheduleError, match="no loop level"):
        state(prog, Schedule((Reversal("S1", 7),)))


def test_interchange_distributes_the_loop_a_shorter_statement_shares():
    """gemm: `C[i][j] *= beta` sits in the j loop beside the k loop; interchanging j and k of the
    reduction gives C *= beta its own j loop first (i { j: S0 } { k { j: S1 } }), in program order."""
    st = state(benchmark("gemm", small=True), Schedule((Interchange("S1", 1),)))
    assert (st["S0"].betas, st["S0"].loops) == ([0, 0, 0], ["i", "j"])
    assert (st["S1"].betas, st["S1"].loops) == ([0, 1, 0, 0], ["i", "k", "j"])
    later = state(benchmark("2mm", small=True), Schedule((Interchange("S1", 1),)))
    assert later["S2"].betas == [1, 0, 0] and later["S3"].betas == [1, 0, 1, 0]  # the next nest is untouched


def test_distribution_moves_what_follows_the_loop_in_its_parent():
    """i { j { S0; k: S1 }; S2 }: the j loop becomes two, and S2 still runs after both."""
    from llmopt.poly.program import program_from_dict

    two = {"type": "double", "shape": ["N", "N"]}
    prog = program_from_dict({"name": "after-the-loop", "params": {"N": 8}, "tensors": {"A": two, "C": two},
                              "statements": [
                                  {"name": "S0", "iterators": ["i", "j"], "domain": "0 <= i < N and 0 <= j < N",
                                   "body": "C[i][j] = 0.0", "shares": 0},
                                  {"name": "S1", "iterators": ["i", "j", "k"],
                                   "domain": "0 <= i < N and 0 <= j < N and 0 <= k < N",
                                   "body": "C[i][j] += A[i][k]", "shares": 2},
                                  {"name": "S2", "iterators": ["i"], "domain": "0 <= i < N",
                                   "body": "A[i][0] = C[i][0]", "shares": 1}]})
    st = state(prog, Schedule((Interchange("S1", 1),)))
    assert [st[n].betas for n in ("S0", "S1", "S2")] == [[0, 0, 0], [0, 1, 0, 0], [0, 2]]
    assert check(prog, Schedule((Interchange("S1", 1),)))[0]


@pytest.mark.parametrize("read, legal", [("C[i][j]", True), ("C[i][j-1]", False)])
def test_distribution_against_a_dependence_is_refused(read, legal):
    """S0 reads C[i][j-1], which the reduction S1 finished in the previous j iteration: with S1 moved
    into a j loop of its own after S0's, S0 would read it unfinished. Reading C[i][j] (before this j's
    sum, in both orders) keeps the split legal."""
    from llmopt.poly.program import program_from_dict

    two = {"type": "double", "shape": ["N", "N"]}
    prog = program_from_dict({"name": "reads-a-sum", "params": {"N": 8}, "tensors": {"A": two, "C": two, "X": two},
                              "statements": [
                                  {"name": "S0", "iterators": ["i", "j"], "domain": "0 <= i < N and 1 <= j < N",
                                   "body": f"X[i][j] = {read}", "shares": 0},
                                  {"name": "S1", "iterators": ["i", "j", "k"],
                                   "domain": "0 <= i < N and 1 <= j < N and 0 <= k < N",
                                   "body": "C[i][j] += A[i][k]", "shares": 2}]})
    ok, reason = check(prog, Schedule((Interchange("S1", 1),)))
    assert ok == legal and (legal or "reversed" in reason)


def test_branches_follow_the_loop_tree():
    assert branches(state(benchmark("doitgen", small=True), Schedule())) == [["S0"], ["S1"], ["S2"]]
    assert branches(state(benchmark("mvt", small=True), Schedule((Fuse("S0", 0),)))) == [["S0"], ["S1"]]


def test_action_mask_and_memoization(tmp_path):
    prog = benchmark("heat2d", small=True)
    cache = ResultCache(tmp_path / "c.sqlite")
    legality = Legality(prog, cache)
    mask = action_mask(legality, Schedule(), "S0")
    assert len(mask) == len(ACTIONS) == 56 and mask[NEXT]
    named = {a.name: m for a, m in zip(ACTIONS, mask, strict=True)}
    assert not named["P(0)"] and named["P(1)"] and not named["I(3,4)"] and named["U(8)"]
    assert named["T(1,2,32,32)"] and not named["I(0,1)"]
    assert legality.computed > 0
    again = Legality(prog, cache)  # a new process would see the same: answers come from the cache
    assert action_mask(again, Schedule(), "S0") == mask and again.computed == 0 and again.hit_rate() == 1.0


@pytest.mark.parametrize("name", ["seidel2d", "gemm", "heat2d", "mvt"])
def test_loop_carries_answers_as_the_whole_schedule_map_does(name):
    """The compiler view's cheap question (a truncated map of the loop's statements) against `carries` on the
    full schedule map, for every loop of every statement, after each first transformation: carried and
    uncarried loops both occur, so a wrong truncation shows."""
    prog = benchmark(name, small=True)
    every = dependences(prog).all
    answers = set()
    for sched in [Schedule()] + [c for c in extensions(prog, Schedule()) if check(prog, c)[0]][:12]:
        st = state(prog, sched)
        full = schedule_map(prog, st, bare=True)
        for stmt in prog.statements:
            for level in range(st[stmt.name].depth):
                names = {n for n, o in st.items()
                         if o.depth > level and o.betas[: level + 1] == st[stmt.name].betas[: level + 1]}
                expected = carries(prog, st, every, full, names, level)
                assert loop_carries(prog, st, restrict(every, names, prog), names, level) == expected
                answers.add(expected)
    assert answers == {True, False}
