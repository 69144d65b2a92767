"""`python -m llmopt.loops.cli`: tune prints the documented JSON keys; bad input is a one-line error."""

import json

import pytest

import llmopt.loops.backend as backend_mod
from llmopt.loops import DEFAULT_POLICY
from llmopt.loops.cli import main


@pytest.mark.skipif(not DEFAULT_POLICY.exists(), reason="no shipped policy")
def test_tune_json(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(backend_mod, "DEFAULT_CACHE_DIR", tmp_path)
    assert main(["tune", "64", "80", "96", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    for key in ("schedule", "gflops", "gflops_start", "gflops_numpy", "peak_gflops", "seconds", "candidates"):
        assert key in out
    assert out["gflops"] > 0 and out["seconds"] > 0 and out["candidates"] > 1  # timings: scripts/bench_loops.py


@pytest.mark.parametrize("argv,words", [
    (["tune", "0", "64", "64"], "must be >= 1"),
    (["tune", "64", "64", "64", "--candidates", "0"], "--candidates"),
    (["tune", "64", "64", "64", "--candidates", "100000"], "in [1, 64]"),
    (["tune", "1000000000", "1", "1"], "GiB"),  # tensors that do not fit in memory
    (["tune", "100000", "100000", "100000"], "GiB"),
    (["tune", "2048", "2048", "2048"], "flops"),  # fits, but the start schedule would only time out
    (["tune", "64", "64", "64", "--search", "nosuch"], "unknown search"),
    (["bench", "--remeasure", "0"], "--remeasure"),
    (["bench", "--n-shapes", "100000"], "--n-shapes"),
    (["train", "--envs", "0"], "--envs"),
])
def test_bad_input_is_one_line_error(capsys, argv, words):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1, err


@pytest.mark.parametrize("content", [b"", b"not a zip", b"PK\x03\x04 truncated zip"])
def test_bad_policy_file_is_one_line_error(tmp_path, capsys, content):
    policy = tmp_path / "policy.zip"
    policy.write_bytes(content)
    assert main(["tune", "64", "64", "64", "--policy", str(policy)]) == 2
    err = capsys.readouterr().err
    assert "not a policy" in err and err.count("\n") == 1, err
    assert main(["tune", "64", "64", "64", "--policy", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err


def test_bench_writes_to_runs_by_default_not_the_committed_results():
    from llmopt.cli import build_parser

    args = build_parser().parse_args(["loops", "bench"])
    assert args.out == "runs/loops-bench" and args.remeasure == 3
