"""The program format and the polyhedral analysis of llmopt.poly (no compiler needed)."""

from __future__ import annotations

import islpy as isl
import pytest

from llmopt.poly.benchmarks import NAMES, benchmark
from llmopt.poly.deps import dependences
from llmopt.poly.polyhedral import check_bounds
from llmopt.poly.program import ProgramError, load_program, program_from_dict, save_program

TINY = {"name": "tiny", "params": {"N": 8},
        "tensors": {"A": {"type": "double", "shape": ["N"]}, "B": {"type": "float", "shape": ["N", "N"]}},
        "statements": [{"name": "S0", "iterators": ["i", "j"], "domain": "0 <= i < N and 0 <= j <= i",
                        "body": "B[i][j] += A[j] * 2.0"}]}


@pytest.mark.parametrize("name", NAMES)
def test_file_format_round_trips(tmp_path, name):
    prog = benchmark(name, small=True)
    save_program(prog, tmp_path / "p.json")
    again = load_program(tmp_path / "p.json")
    assert again.to_dict() == prog.to_dict() and again.hash() == prog.hash()
    check_bounds(again)  # every access stays inside its tensor


def test_statement_parts_are_parsed_from_the_body():
    prog = program_from_dict(TINY)
    s = prog.statements[0]
    assert s.expr == "B[i][j] + (A[j] * 2.0)"
    assert s.write(set(prog.tensors)).indices == ("i", "j")
    assert [a.tensor for a in s.reads(set(prog.tensors))] == ["B", "A"]
    assert prog.outputs() == ["B"]
    assert prog.with_params(N=4).params == {"N": 4}


@pytest.mark.parametrize("change, message", [
    (lambda p: p["statements"][0].update(body="C[i][j] = 1.0"), "unknown tensor"),
    (lambda p: p["statements"][0].update(body="B[i] = 1.0"), "rank"),
    (lambda p: p["statements"][0].update(shares=1), "shares"),
    (lambda p: p["tensors"]["A"].update(type="int"), "type"),
    (lambda p: p["statements"][0].pop("domain"), "domain"),
    (lambda p: p["tensors"]["A"].update(shape=["__import__('os')"]), "extent"),
])
def test_bad_programs_say_what_is_wrong(change, message):
    spec = {**TINY, "statements": [dict(TINY["statements"][0])],
            "tensors": {k: dict(v) for k, v in TINY["tensors"].items()}}
    change(spec)
    with pytest.raises(ProgramError, match=message):
        program_from_dict(spec)


def test_non_affine_and_out_of_bounds_accesses_are_refused(tmp_path):
    spec = {**TINY, "statements": [{**TINY["statements"][0], "body": "B[i][j] = A[i * j]"}]}
    with pytest.raises(ProgramError, match="affine"):
        dependences(program_from_dict(spec))
    spec["statements"][0]["body"] = "B[i][j] = A[j + 1]"
    with pytest.raises(ProgramError, match="leaves its shape"):
        check_bounds(program_from_dict(spec))
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ProgramError, match="not valid JSON"):
        load_program(tmp_path / "bad.json")


def _deltas(umap: isl.UnionMap) -> isl.UnionSet:
    return umap.deltas()


def test_dependences_of_stencils():
    # seidel2d: a RAW dependence (0, 1, -1) inside one time step (A[i-1][j+1] was updated this step).
    seidel = dependences(benchmark("seidel2d", small=True))
    assert not _deltas(seidel.raw).intersect(isl.UnionSet("{ S0[0, 1, -1] }")).is_empty()
    # heat2d writes the other buffer: every dependence is carried by the time loop.
    heat = dependences(benchmark("heat2d", small=True))
    assert _deltas(heat.all).intersect(isl.UnionSet("{ S0[0, i, j] }")).is_empty()
    # jacobi2d: all three kinds exist between its two statements.
    jac = dependences(benchmark("jacobi2d", small=True))
    assert not jac.raw.is_empty() and not jac.war.is_empty() and not jac.waw.is_empty()
