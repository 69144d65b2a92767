"""Instruction counts and object sizes: in-process C API vs the `opt` subprocess reference."""

import random

from llmopt.harness import Harness
from llmopt.llvm.capi import Context
from llmopt.llvm.ir import estimate_tokens, normalize_ir, strip_optnone
from llmopt.llvm.passes import vocabulary
from llmopt.llvm.subprocess_opt import count_instructions_text, objsize, run_opt


def test_counts_match_opt_on_csmith_functions(corpus):
    names = vocabulary()
    rng = random.Random(1)
    lists = [["default<Oz>"], ["default<O3>"], []] + [[rng.choice(names[6:]) for _ in range(5)] for _ in range(12)]
    # Lists after a meta-pass run on the worker's memoized post-meta module: must equal `opt` too.
    lists += [["default<Oz>"] + [rng.choice(names[6:]) for _ in range(4)] for _ in range(6)]
    with Harness(workers=2, cache=False) as harness:
        for ir in corpus[:: max(1, len(corpus) // 12)]:
            results = harness.evaluate_many(ir, lists)
            for passes, result in zip(lists, results, strict=True):
                reference = sum(count_instructions_text(run_opt(ir, passes)).values())
                assert result.ok and result.instcount == reference, (passes, result.error)


def test_objsize_matches_llc(example_ir):
    optimized = run_opt(example_ir, ["default<Oz>"])
    module = Context().parse(optimized)
    assert module.objsize() == objsize(optimized) > 0
    assert objsize(example_ir) > objsize(optimized)  # -Oz makes the code smaller


def test_normalization_keeps_ir_parseable_and_counts(corpus, example_ir):
    ctx = Context()
    raw = ctx.parse(example_ir).instcount_by_function()
    normalized = normalize_ir(example_ir)
    assert ctx.parse(normalized).instcount_by_function() == raw
    assert "attributes #" not in normalized and "; " not in normalized and "\n  " not in normalized
    assert "minsize" in normalized and "target-cpu" not in normalized
    assert normalize_ir(normalized) == normalized  # idempotent
    for ir in corpus:
        assert ctx.parse(normalize_ir(ir)).instcount() == ctx.parse(ir).instcount()
    # -Oz behaves the same on normalized input (minsize/optsize survive).
    assert (sum(count_instructions_text(run_opt(normalized, ["default<Oz>"])).values())
            == sum(count_instructions_text(run_opt(example_ir, ["default<Oz>"])).values()))


def test_strip_optnone_and_token_estimate(example_ir):
    o0 = example_ir.replace("minsize nounwind optsize", "noinline nounwind optnone")
    stripped, found = strip_optnone(o0)
    assert found and "optnone" not in stripped
    Context().parse(stripped)
    assert strip_optnone(example_ir) == (example_ir, False)
    assert 0 < estimate_tokens(example_ir) < len(example_ir)


def test_llvmlite_cross_check(corpus):
    """llvmlite's bundled (newer) LLVM counts the same instructions as the system libLLVM."""
    import pytest

    from llmopt.llvm import llvmlite_counts

    if not llvmlite_counts.llvmlite_available():
        pytest.skip("llvmlite not installed")
    ctx = Context()
    for ir in corpus:
        assert llvmlite_counts.instcount_by_function(ir) == ctx.parse(ir).instcount_by_function()


def test_handles_close_once_and_functions_are_typed(example_ir):
    with Context() as ctx:
        with ctx.parse(example_ir) as module:
            defined = [fn for fn in module.functions() if not fn.is_declaration]
            assert {fn.name for fn in defined} == set(module.instcount_by_function())
            fn = module.function(defined[0].name)
            assert fn is not None and module.function("no_such_function") is None
            was = fn.has_attr("noinline")
            fn.add_attr("noinline")
            assert fn.has_attr("noinline")
            if not was:
                fn.remove_attr("noinline")
                assert not fn.has_attr("noinline")
        assert module.closed
        module.close()  # a second close does nothing
    assert ctx.closed


def test_text_count_skips_continuation_lines_of_invoke_and_landingpad():
    """`to label ... unwind label ...` and `catch ptr null` continue an instruction: not counted twice."""
    from pathlib import Path

    from llmopt.llvm.subprocess_opt import count_instructions_text, run_opt

    ir = (Path(__file__).resolve().parent / "data" / "cxx_invoke_landingpad.ll").read_text()
    optimized = run_opt(ir, ["default<Oz>"])
    assert "invoke" in optimized and "landingpad" in optimized and "catch ptr null" in optimized
    with Context() as ctx:
        for text in (ir, optimized):
            with ctx.parse(text) as module:
                assert count_instructions_text(text) == module.instcount_by_function()
