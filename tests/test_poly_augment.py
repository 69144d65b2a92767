"""Relabelled programs (llmopt.poly.agent.augment): a measured interchange read as the source order of
another program, checked against the compiler's preprocessor and the replayed schedules."""

from __future__ import annotations

import re
import subprocess

import pytest

from llmopt.poly.agent.augment import augment, interchanged, relabelled_rows
from llmopt.poly.agent.imitate import split
from llmopt.poly.benchmarks import benchmark
from llmopt.poly.emit import kernel_c
from llmopt.poly.generator import random_program
from llmopt.poly.schedule import Interchange, Parallel, Schedule, Tile


def expanded(c: str) -> str:
    """The kernel after the preprocessor: what the compiler sees, macros expanded, spacing dropped."""
    out = subprocess.run(["clang-19", "-E", "-P", "-x", "c", "-"], input=c, capture_output=True, text=True, check=True)
    body = out.stdout[out.stdout.index("void kernel"):]
    return re.sub(r"\s+", "", body)


@pytest.mark.parametrize("name, x", [("syrk", Interchange("S1", 1, 2)), ("gemm", Interchange("S0", 0, 1)),
                                     ("mvt", Interchange("S0", 0, 1))])
def test_the_interchanged_program_compiles_to_the_code_of_the_interchange(name, x):
    prog = benchmark(name, small=True)
    swapped = interchanged(prog, x)
    assert swapped is not None and swapped.hash() != prog.hash()
    assert expanded(kernel_c(swapped, Schedule())) == expanded(kernel_c(prog, Schedule((x,))))
    assert expanded(kernel_c(swapped, Schedule())) != expanded(kernel_c(prog, Schedule()))


def test_random_programs_with_triangular_and_shared_loops_relabel_exactly():
    done = 0
    for seed in range(40):
        prog = random_program(seed, small=True)
        for stmt in prog.statements:
            for level in range(len(stmt.iterators) - 1):
                x = Interchange(stmt.name, level, level + 1)
                swapped = interchanged(prog, x)
                if swapped is not None:
                    assert expanded(kernel_c(swapped, Schedule())) == expanded(kernel_c(prog, Schedule((x,))))
                    done += 1
        if done >= 12:
            break
    assert done >= 12


def test_an_interchange_that_does_not_fit_makes_no_program():
    assert interchanged(benchmark("syrk", small=True), Interchange("S0", 1, 2)) is None  # S0 has two loops


def test_rows_move_to_the_relabelled_program_with_their_speedups_rescaled():
    """Made-up speedups: the bookkeeping, not a result."""
    prog = benchmark("syrk", small=True)
    x, par, tile = Interchange("S1", 1, 2), Parallel("S0", 0), Tile("S1", 1, (32, 32))
    row = {"hash": prog.hash(), "program": prog.to_dict()}
    rows = [{**row, "schedule": Schedule(s).to_list(), "speedup": v}
            for s, v in [((), 1.0), ((x,), 2.0), ((x, tile), 4.0), ((par,), 1.5), ((tile,), 0.5)]]
    new = relabelled_rows(rows, rows[1])
    swapped = interchanged(prog, x)
    got = {tuple(str(t) for t in Schedule.from_list(r["schedule"]).transforms): r["speedup"] for r in new}
    assert got == {(str(x),): 0.5, (): 1.0, (str(tile),): 2.0, (str(par), str(x)): 0.75, (str(x), str(tile)): 0.25}
    assert {r["hash"] for r in new} == {swapped.hash()} and {r["origin"] for r in new} == {prog.hash()}
    assert len(augment(rows, per_program=1)) == len(rows) + len(new)
    assert augment(rows, per_program=0) == rows


def test_a_relabelled_program_stays_on_its_origins_side_of_the_split():
    programs = [f"p{k}" for k in range(200)]
    family = {f"q{k}": f"p{k}" for k in range(200)}
    train, val = split(programs + list(family), 0.1, 0, family)
    assert val and all((f"q{p[1:]}" in val) == (p in val) for p in programs)
    assert split(programs, 0.1, 0)[1] == [v for v in val if v.startswith("p")]
