"""Label safety: a label that changes what the program prints, or makes it hang, is rejected.

No real pass list is known to miscompile a csmith program, so the test hands `check_program`
the optimized IR a label would produce -- the same object the job checks -- after editing it by
hand into a miscompilation (the function now exits with a different status) and into a hang.
The unedited optimized IR must pass.
"""

from __future__ import annotations

import re
from collections import Counter

import pytest

from data_pipeline.compile import compile_unit, split_unit
from data_pipeline.safety import check_program
from data_pipeline.sources.csmith import CsmithSource
from llmopt.harness import Harness, ResultCache
from llmopt.llvm.ir import normalize_ir

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    """A csmith program whose func_1 (always called by main) fits the token budget."""
    for unit in CsmithSource(12, seed=5).units():
        module = compile_unit(unit)
        fns = {f.name: f for f in split_unit(unit, module, 1000, Counter())}
        if "func_1" in fns:
            cache = ResultCache(tmp_path_factory.mktemp("cache") / "c.sqlite")
            with Harness(workers=1, cache=cache) as h:
                res = h.evaluate(fns["func_1"].ir, ["default<Oz>", "instcombine", "simplifycfg"], want_ir=True)
            return module, normalize_ir(res.ir)
    pytest.skip("no csmith program with a small func_1 in these seeds")


def _edit_entry(ir: str, code: str) -> str:
    """Insert `code` at the start of func_1's body (a hand-made 'optimization').

    The function attributes go too: they may promise `memory(none) willreturn`, and a call to such
    a function whose result is unused may legally be dropped, hiding the edit."""
    ir = re.sub(r"(@func_1\([^)]*\))[^{\n]*\{", r"\1 {", ir)
    head = re.search(r"^define [^\n]*@func_1\([^\n]*\{\n", ir, flags=re.M)
    return ir[: head.end()] + code + ir[head.end():]


def test_correct_label_passes(program):
    module, optimized = program
    assert check_program(module, {"func_1": optimized}) == {"func_1": "ok"}


def test_miscompiling_label_is_rejected(program):
    module, optimized = program
    bad = _edit_entry(optimized, "call void @exit(i32 3)\nunreachable\nfake:\n") + "declare void @exit(i32)\n"
    assert check_program(module, {"func_1": bad}) == {"func_1": "changed"}


def test_hanging_label_is_rejected(program):
    module, optimized = program
    hang = _edit_entry(optimized, "br label %spin\nspin:\nbr label %spin\nfake:\n")
    assert check_program(module, {"func_1": hang}, timeout=2.0) == {"func_1": "timeout"}
