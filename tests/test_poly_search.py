"""The random program generator (deterministic, in bounds, compiles and matches its reference, never a
benchmark) and the searches (beam search never answers worse than the identity, nor illegally)."""

from __future__ import annotations

import math

import pytest

from llmopt.harness.cache import ResultCache
from llmopt.poly.benchmarks import NAMES, benchmark
from llmopt.poly.generator import Limits, _is_benchmark, random_program
from llmopt.poly.legality import check
from llmopt.poly.measure import Measurer
from llmopt.poly.polyhedral import check_bounds
from llmopt.poly.program import ProgramError, extent
from llmopt.poly.schedule import Interchange, Parallel, Schedule, Skew, Tile, Unroll
from llmopt.poly.search import SEARCHES, beam, children, extensions, greedy, notation

SEEDS = range(60)


@pytest.fixture(scope="module")
def measurer(tmp_path_factory):
    m = Measurer(ResultCache(tmp_path_factory.mktemp("poly-search") / "cache.sqlite"), repeats=2, timeout=60)
    yield m
    m.close()


@pytest.mark.parametrize("small", [False, True])
def test_generator_is_deterministic_per_seed(small):
    for seed in range(10):
        assert random_program(seed, small).to_dict() == random_program(seed, small).to_dict()
    assert len({random_program(s, small).hash() for s in range(10)}) == 10


@pytest.mark.parametrize("small", [False, True])
def test_generated_programs_are_in_bounds_and_never_benchmarks(small):
    limit = Limits().max_elements if not small else 1 << 12
    for seed in SEEDS:
        prog = random_program(seed, small)
        check_bounds(prog)  # random_program checks too; a failure here is a generator bug
        assert prog.name == f"random-{seed}" and prog.name not in NAMES
        assert not _is_benchmark(prog.to_dict()["statements"])
        assert 1 <= len(prog.statements) <= 4 and all(1 <= len(s.iterators) <= 4 for s in prog.statements)
        for t in prog.tensors.values():
            assert math.prod(extent(e, prog.params) for e in t.shape) <= limit


def test_generator_draws_every_pattern():
    """Across a few dozen seeds: reductions, stencil offsets, time loops, triangular loops, imperfect
    nests (shared loops), several computations, buffers shared between computations, depth 4."""
    progs = [random_program(s) for s in SEEDS]
    bodies = [s.body for p in progs for s in p.statements]
    assert any("+=" in b for b in bodies)
    assert any("-1]" in b or "+1]" in b for b in bodies)
    assert any("0 <= t < T" in s.domain for p in progs for s in p.statements)
    assert any("<= i " in s.domain or "<= j " in s.domain for p in progs for s in p.statements)
    assert any(s.shares > 0 for p in progs for s in p.statements)
    assert any(len(p.statements) == 4 for p in progs) and any(len(p.statements) == 1 for p in progs)
    assert any(len(s.iterators) == 4 for p in progs for s in p.statements)
    assert any(len(p.tensors) < sum(1 + len(s.reads(set(p.tensors))) for s in p.statements) for p in progs)
    assert {t.dtype for p in progs for t in p.tensors.values()} == {"float", "double"}


def test_double_buffers_are_opt_in_and_older_seeds_keep_their_programs():
    """p_double_buffer = 0 (the default) draws no ping-pong and leaves the random stream alone: seed
    100000 is still the program data/poly-greedy measured before the pattern existed."""
    import gzip
    import json
    from pathlib import Path

    assert not any("% 2" in s.body for seed in SEEDS for s in random_program(seed).statements)
    data = Path(__file__).resolve().parent.parent / "data"

    def measured(folder: str, block: int, seed: int) -> dict:
        with gzip.open(data / folder / "packed" / f"{block}.jsonl.gz", "rt") as f:
            return next(row for row in map(json.loads, f) if row["seed"] == seed)["program"]

    assert random_program(100000, iterations=(1.5e7, 1.5e8)).to_dict() == measured("poly-greedy", 1000, 100000)
    # and the double-buffer folder's programs are what its config.json's limits draw
    db = random_program(200001, iterations=(1.5e7, 1.5e8), p_double_buffer=1, p_time=0.7)
    assert db.to_dict() == measured("poly-greedy-db", 2000, 200001)
    hw = random_program(300001, iterations=(1.5e7, 1.5e8), p_transpose=0.2, p_double_buffer=0.3, p_time=0.4)
    assert hw.to_dict() == measured("poly-greedy-hw", 3000, 300001)


def _in_loop_order(prog) -> tuple[int, int]:
    """(reads indexing two or more spatial loops, of which in the nest's loop order) in `prog`."""
    import re

    total = ordered = 0
    for st in prog.statements:
        loops = [i for i in st.iterators if i != "t"]
        for access in st.reads(set(prog.tensors)):
            used = [x for x in (re.sub(r"[^a-z]", "", sub) for sub in access.indices) if x in loops]
            if len(used) >= 2:
                total += 1
                ordered += used == sorted(used, key=loops.index)
    return total, ordered


def test_reads_in_loop_order_are_opt_in():
    """p_transpose < 1 writes most reads outermost loop first, as people do; the default keeps any order
    (and, drawing nothing more, every older seed's program: the test above)."""
    def share(**limits) -> float:
        counts = [_in_loop_order(random_program(seed, **limits)) for seed in range(300000, 300060)]
        return sum(o for _, o in counts) / sum(t for t, _ in counts)

    default, in_order = share(), share(p_transpose=0.0)
    assert default < 0.6
    assert in_order > 0.85  # the rest: reused tensors whose shape forces the order
    assert in_order > share(p_transpose=0.5) > default


def test_double_buffered_stencils_compile_match_and_keep_time_sequential(measurer):
    """A ping-pong stencil (X[(t + 1) % 2] from X[t % 2]): in bounds, its output matches the reference,
    its time loop may not run in parallel (each step reads the last), its spatial loop may."""
    progs = [random_program(s, small=True, p_double_buffer=1.0, p_time=1.0) for s in range(12)]
    found = [(p, s) for p in progs for s in p.statements if "% 2" in s.body]
    assert len({p.name for p, _ in found}) >= 4
    prog, stmt = found[0]
    assert stmt.iterators[0] == "t" and prog.tensors[stmt.body.split("[", 1)[0]].shape[0] == "2"
    assert not check(prog, Schedule((Parallel(stmt.name, 0),)))[0]
    spatial = Schedule((Parallel(stmt.name, 1),))
    assert check(prog, spatial)[0]
    assert measurer.baseline_o3(prog)["ok"] and measurer.measure(prog, spatial)["ok"]


def test_init_statements_make_gemms_nest_and_distribute(measurer):
    """p_init > 0: a reduction over its innermost loop first gets its own statement in the loops
    outside it, which the reduction shares (gemm's `C[i][j] *= beta`); the interchange that distributes
    that loop is then legal in some programs, and the distributed program matches its reference.
    With p_init = 0 (the default) no seed's program changes (the test above pins older seeds)."""
    progs = [random_program(s, small=True, p_init=1.0, p_reduction=1.0) for s in range(20)]
    pairs = [(p, a, b) for p in progs for a, b in zip(p.statements, p.statements[1:], strict=False)
             if "+=" in b.body and "+=" not in a.body and b.shares == len(a.iterators) == len(b.iterators) - 1]
    assert len({p.name for p, _, _ in pairs}) >= 8
    for _, a, b in pairs:
        assert a.body.split(" = ")[0] == b.body.split(" += ")[0]  # the init writes what the reduction sums into
    legal = [(p, Schedule((Interchange(b.name, b.shares - 1),))) for p, _, b in pairs
             if check(p, Schedule((Interchange(b.name, b.shares - 1),)))[0]]
    assert legal
    prog, sched = legal[0]
    assert measurer.baseline_o3(prog)["ok"] and measurer.measure(prog, sched)["ok"]
    assert all(random_program(s, small=True).to_dict() == random_program(s, small=True, p_init=0.0).to_dict()
               for s in range(5))


def test_limits_are_checked():
    assert len(random_program(3, computations=(1, 1)).statements) == 1
    with pytest.raises(ProgramError, match="unknown limits"):
        random_program(3, nosuch=1)


@pytest.mark.parametrize("seed", range(6))
def test_generated_programs_compile_and_match_their_reference(measurer, seed):
    """The original runs; the first legal transformation of each kind emits C with the same output."""
    prog = random_program(seed, small=True)
    assert measurer.baseline_o3(prog)["ok"]
    kids = children(prog, measurer, Schedule())
    picked = {s.transforms[0].kind: s for s in reversed(kids)}  # the first child of each kind
    assert picked, "some transformation applies"
    for sched in picked.values():
        assert measurer.measure(prog, sched)["ok"], (prog.to_json(), sched)


def test_children_are_legal_one_step_extensions(measurer):
    prog = benchmark("jacobi2d", small=True)
    kids = children(prog, measurer, Schedule())
    assert kids and all(len(k.transforms) == 1 for k in kids)
    assert all(check(prog, k)[0] for k in kids[:: max(1, len(kids) // 12)])
    every = extensions(prog, Schedule())  # the shared enumeration, legal or not, in the same order
    assert kids == [e for e in every if check(prog, e)[0]] and len(every) > len(kids)
    assert kids[0].transforms[0].kind == "parallelization" or not any(
        k.transforms[0].kind == "parallelization" for k in kids)


def test_beam_never_returns_slower_or_illegal_than_the_identity(measurer):
    prog = benchmark("jacobi2d", small=True)
    res = beam(prog, measurer, budget_seconds=6, width=2, depth=2)
    assert check(prog, res.schedule)[0]
    assert res.speedup >= 1.0 and res.seconds <= res.baseline_seconds
    assert res.evaluations >= 1 and res.search_seconds < 6 + 30  # overrun: at most one compile-and-run
    assert 0 < res.measure_seconds <= res.search_seconds
    if res.schedule.transforms:
        assert measurer.measure(prog, res.schedule)["ok"]
    assert [t for t, _ in res.trace] == sorted(t for t, _ in res.trace)


def test_beam_returns_the_identity_when_nothing_helps(measurer):
    """Nothing is 1000x faster: with that bar the answer is the original order at speedup 1."""
    prog = benchmark("mvt", small=True)
    res = beam(prog, measurer, budget_seconds=3, width=2, depth=1, min_gain=0.999)
    assert res.schedule == Schedule() and res.speedup == 1.0 and res.evaluations >= 1
    assert notation(res.schedule) == "identity"


def test_a_search_says_when_its_budget_cut_it_short(measurer):
    prog = benchmark("atax", small=True)
    cut = beam(prog, measurer, budget_seconds=0.0, width=2, depth=2)  # one schedule measured, then the deadline
    assert cut.cut_short and cut.evaluations == 1 and cut.to_dict()["cut_short"]
    whole = beam(prog, measurer, budget_seconds=120, width=1, depth=1)  # cached timings: one depth in seconds
    assert not whole.cut_short and whole.evaluations > 1


def test_greedy_and_registry(measurer):
    assert {"beam", "greedy"} <= set(SEARCHES)
    prog = random_program(2, small=True)
    res = greedy(prog, measurer, budget_seconds=4, depth=1)
    assert check(prog, res.schedule)[0] and res.speedup >= 1.0
    assert res.to_dict()["schedule"] == notation(res.schedule)


def test_notation_is_pearls():
    sched = Schedule((Parallel("S0", 0), Tile("S0", 1, sizes=(32, 64)), Unroll("S0", factor=4),
                      Interchange("S2", 0), Skew("S2", 1, 1)))
    assert notation(sched) == "S0: P(0) T(1,2,32,64) U(4) | S2: I(0,1) S(1,2)"


def test_parallel_statement_seeds_find_fdtd2ds_nest_and_skip_sequential_ones():
    """`distributing_seeds.py --parallel-statements N` keeps a program by the statements whose outermost
    spatial loop may run in parallel: all four of fdtd-2d's (past its time loop), none of seidel2d's
    (an in-place stencil carries a dependence on every loop)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
    import distributing_seeds

    assert distributing_seeds.outer_parallel_statements(benchmark("fdtd-2d", small=True)) == ["S0", "S1", "S2", "S3"]
    assert distributing_seeds.outer_parallel_statements(benchmark("seidel2d", small=True)) == []
