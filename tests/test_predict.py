"""predict: every strategy's answer is verified by LLVM and never worse than -Oz; the CLI writes valid IR."""

from __future__ import annotations

import json
import subprocess

import pytest

from llmopt.llvm.toolchain import find_toolchain
from llmopt.predict import predict_many
from tests.conftest import EXAMPLES


@pytest.mark.parametrize("name", ["greedy", "nucleus", "priority", "random", "coreset"])
def test_every_strategy_verified_never_worse_than_oz(name, tiny_lm, harness, example_functions):  # noqa: F811
    from llmopt.sampling import SamplingConfig, strategy_from_name
    from training.sample_data import CANDIDATES

    strategy = strategy_from_name(name, lm=tiny_lm, config=SamplingConfig(temperature=1.0), train_pass_lists=CANDIDATES)
    irs = example_functions[:3]
    results = predict_many(irs, strategy, 4, harness)
    for ir, fp in zip(irs, results, strict=True):
        assert fp.instcount_result is not None and fp.instcount_oz is not None
        assert fp.instcount_result <= fp.instcount_oz
        assert fp.compilations >= 1
        # The answer is a real measurement of the chosen list.
        assert harness.evaluate(ir, fp.passes).instcount == fp.instcount_result


def test_predict_cli_multi_function_module_opt_accepts(tiny_model_dir, tmp_path, capsys):  # noqa: F811
    from llmopt.cli import main

    out = tmp_path / "out.ll"
    code = main(["predict", str(EXAMPLES / "example.ll"), "--model", str(tiny_model_dir), "--samples", "3",
                 "-o", str(out), "--json", "--no-cache"])
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert [f["name"] for f in report["functions"]] == ["sum_scaled", "saturate_all", "clamp", "checksum",
                                                        "classify"]
    for f in report["functions"]:
        assert set(f) >= {"name", "instcount_input", "instcount_oz", "instcount_result", "passes", "compilations"}
        assert f["instcount_result"] <= f["instcount_oz"]
    assert report["instcount_result"] <= report["instcount_oz"]
    assert report["strategy"] == "priority" and report["samples"] == 3 and report["llvm_version"]
    opt = find_toolchain().opt
    proc = subprocess.run([opt, "-passes=verify", "-disable-output", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    count = main(["count", str(out), "--json"])
    assert count == 0
    assert json.loads(capsys.readouterr().out)["instcount"] == report["instcount_result"]


def test_predict_cli_int8_and_max_passes(tiny_model_dir, capsys):  # noqa: F811
    from llmopt.cli import main

    code = main(["predict", str(EXAMPLES / "example.ll"), "--model", str(tiny_model_dir), "--samples", "4", "--int8",
                 "--max-passes", "2", "--json", "--no-cache", "-v"])
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    ranked = [c for f in report["functions"] for c in f["candidates"] if c["rank"] is not None]  # -Oz has none
    assert ranked and all(1 <= len(c["passes"]) <= 2 for c in ranked)
    assert all(f["instcount_result"] <= f["instcount_oz"] for f in report["functions"])


def test_predict_cli_bf16_prefill_and_threads(tiny_model_dir, capsys):  # noqa: F811
    import torch

    from llmopt.cc_optimize import Settings, _predict_args
    from llmopt.cli import main

    code = main(["predict", str(EXAMPLES / "example.ll"), "--model", str(tiny_model_dir), "--samples", "3",
                 "--prefill-dtype", "bfloat16", "--threads", "2", "--json", "--no-cache"])
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert all(f["instcount_result"] <= f["instcount_oz"] for f in report["functions"])
    assert torch.get_num_threads() == 2
    # int8 and a bfloat16 prefill do not combine: a usage error, not a traceback.
    assert main(["predict", str(EXAMPLES / "example.ll"), "--model", str(tiny_model_dir), "--int8",
                 "--prefill-dtype", "bfloat16"]) == 2
    assert "torch engine" in capsys.readouterr().err
    # `llmopt cc` runs under make -j: its model keeps one thread.
    assert _predict_args(Settings()).threads == 1


def test_predict_cli_errors(tmp_path, capsys):
    from llmopt.cli import main

    bad = tmp_path / "bad.ll"
    bad.write_text("this is not IR")
    assert main(["predict", str(bad), "--model", str(tmp_path)]) == 2
    assert "malformed" in capsys.readouterr().err
    assert main(["predict", str(EXAMPLES / "example.ll"), "--model", str(tmp_path)]) == 2
    assert "not an llmopt model directory" in capsys.readouterr().err


# @a improves only with mem2reg (one block), @b only with simplifycfg (no allocas): no single list
# serves both, so only the per-function module gets both wins.
TWO_NEEDS_MODULE = """
define i32 @a(i32 %x) #0 {
  %p = alloca i32
  store i32 %x, ptr %p
  %v = load i32, ptr %p
  ret i32 %v
}

define internal i32 @b(i32 %x) #0 {
  br label %next
next:
  br label %end
end:
  ret i32 %x
}

define i32 @c(i32 %x) #0 {
  %r = call i32 @b(i32 %x)
  ret i32 %r
}

attributes #0 = { minsize optsize nounwind }
"""


class _OwnList:
    """A strategy with a fixed list per function (mem2reg for @a, simplifycfg for the others)."""

    name = "own-list"

    def sample(self, ir, n):
        from llmopt.sampling.base import Sample

        return [Sample(["mem2reg"] if "@a(" in ir else ["simplifycfg"], None)]


def test_module_per_function_lists_keep_every_win(harness, tmp_path):  # noqa: F811
    from llmopt.predict import predict_module

    result = predict_module(TWO_NEEDS_MODULE, _OwnList(), 1, harness, oz_backup=False)
    own = {f.name: f.passes for f in result.functions}
    assert own["a"] == ["mem2reg"] and own["b"] == ["simplifycfg"]
    single = min(harness.evaluate(TWO_NEEDS_MODULE, [p]).instcount for p in ("mem2reg", "simplifycfg"))
    assert result.mode == "per-function" and result.instcount_result < single
    # Each function was optimized by its own list only: @b (not inlined into the frozen @c) lost its
    # branches, @a its memory, and the freeze left no trace in the attributes.
    out = tmp_path / "out.ll"
    out.write_text(result.ir)
    subprocess.run([find_toolchain().opt, "-passes=verify", "-disable-output", str(out)], check=True)
    assert "alloca" not in result.ir and "br label" not in result.ir and "call i32 @b" in result.ir
    assert "optnone" not in result.ir and "noinline" not in result.ir and "minsize" in result.ir
    assert harness.evaluate(result.ir, []).instcount == result.instcount_result


def test_module_single_list_when_functions_agree(harness):  # noqa: F811
    from llmopt.predict import predict_module

    class Same(_OwnList):
        def sample(self, ir, n):
            from llmopt.sampling.base import Sample

            return [Sample(["default<Oz>"], None)]

    result = predict_module(TWO_NEEDS_MODULE, Same(), 1, harness)
    assert result.mode == "single-list" and result.passes == ["default<Oz>"]
