"""predict: every strategy's answer is verified by LLVM and never worse than -Oz; the CLI writes valid IR."""

from __future__ import annotations

import json
import subprocess

import pytest

from llmopt.llvm.toolchain import find_toolchain
from llmopt.predict import predict_many
from tests.test_sampling import EXAMPLES, example_functions, harness, tiny_lm, tiny_model_dir  # noqa: F401


@pytest.mark.parametrize("name", ["greedy", "nucleus", "priority", "random", "coreset"])
def test_every_strategy_verified_never_worse_than_oz(name, tiny_lm, harness, example_functions):  # noqa: F811
    from llmopt.sampling import make_strategy
    from training.sample_data import CANDIDATES

    strategy = make_strategy(name, lm=tiny_lm, temperature=1.0, train_pass_lists=CANDIDATES)
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


def test_predict_cli_errors(tmp_path, capsys):
    from llmopt.cli import main

    bad = tmp_path / "bad.ll"
    bad.write_text("this is not IR")
    assert main(["predict", str(bad), "--model", str(tmp_path)]) == 2
    assert "malformed" in capsys.readouterr().err
    assert main(["predict", str(EXAMPLES / "example.ll"), "--model", str(tmp_path)]) == 2
    assert "not an llmopt model directory" in capsys.readouterr().err
