"""`python -m llmopt.loops.cli`: tune prints the documented JSON keys; bad input is a one-line error."""

import json

import pytest

import llmopt.loops.backend as backend_mod
from llmopt.loops.agent import DEFAULT_POLICY
from llmopt.loops.cli import main


@pytest.mark.skipif(not DEFAULT_POLICY.exists(), reason="no shipped policy")
def test_tune_json(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(backend_mod, "DEFAULT_CACHE_DIR", tmp_path)
    assert main(["tune", "64", "80", "96", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    for key in ("schedule", "gflops", "gflops_start", "gflops_numpy", "peak_gflops", "seconds", "candidates"):
        assert key in out
    assert out["gflops"] > 0 and out["seconds"] < 5 and out["candidates"] > 1


@pytest.mark.parametrize("argv", [["tune", "0", "64", "64"], ["tune", "64", "64", "64", "--candidates", "0"]])
def test_bad_input_is_one_line_error(capsys, argv):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and err.count("\n") == 1
