"""`llmopt loops schedule` prints the documented keys and writes C that compiles and runs; bad programs
are one-line exit-2 errors; `llmopt loops pearl-bench` writes its table, JSON and chart and resumes."""

from __future__ import annotations

import json
import subprocess

import pytest

from llmopt.llvm.toolchain import find_toolchain
from llmopt.loops.cli import main
from llmopt.poly.generator import random_program
from llmopt.poly.program import save_program

FAST = ["--small", "--repeats", "2", "--budget-seconds", "4", "--depth", "1"]
BENCH_FAST = [*FAST, "--quiet-cores", "-1"]  # the busy-machine guard would wait out a busy test machine
KEYS = ("schedule", "speedup", "speedup_polly", "speedup_o3", "seconds")


def test_schedule_json_and_the_c_it_writes(tmp_path, capsys):
    c_file = tmp_path / "heat2d.c"
    argv = ["schedule", "heat2d", *FAST, "--json", "--cache", str(tmp_path / "c.sqlite"), "-o", str(c_file)]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert all(k in out for k in KEYS)
    assert out["speedup"] >= 1.0 and out["speedup_o3"] == 1.0 and out["seconds"] > 0
    assert out["speedup_polly"] is None or out["speedup_polly"] > 0
    exe = tmp_path / "heat2d"
    flags = ["-fopenmp"] if "omp" in c_file.read_text() else []
    subprocess.run([find_toolchain().clang, "-O3", *flags, str(c_file), "-o", str(exe), "-lm"], check=True)
    run = subprocess.run([str(exe), "2"], capture_output=True, text=True, check=True)
    assert run.stdout.startswith("seconds ")


def test_schedule_text_on_a_program_file(tmp_path, capsys):
    path = tmp_path / "prog.json"
    save_program(random_program(4, small=True), path)
    argv = ["schedule", str(path), "--search", "greedy", "--repeats", "2", "--budget-seconds", "3", "--depth", "1",
            "--no-cache"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    for word in ("program    random-4", "schedule ", "speedup ", "polly ", "-O3 ", "search     greedy"):
        assert word in text, text


OUT_OF_BOUNDS = {"params": {"N": 8}, "tensors": {"A": {"shape": ["N"]}},
                 "statements": [{"name": "S0", "iterators": ["i"], "domain": "0 <= i < N", "body": "A[i] = A[i+1]"}]}
BAD_FILES = {"notjson.json": ("{nope", "not valid JSON"), "nostmts.json": ('{"tensors": {}}', "missing field"),
             "oob.json": (json.dumps(OUT_OF_BOUNDS), "leaves its shape")}  # name -> (content, words of the error)


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_bad_program_file_is_one_line_error(tmp_path, capsys, name):
    content, words = BAD_FILES[name]
    (tmp_path / name).write_text(content)
    assert main(["schedule", str(tmp_path / name), "--no-cache"]) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1, err


@pytest.mark.parametrize("argv,words", [
    (["schedule", "nosuch"], "not a benchmark"),
    (["schedule", "gemm", "--search", "nope"], "unknown search"),
    (["schedule", "gemm", "--budget-seconds", "0"], "seconds must be"),
    (["schedule", "gemm", "-o", "/nonexistent-folder/x.c"], "does not exist"),
    (["pearl-bench", "--benchmarks", "gemm,nosuch"], "unknown benchmark 'nosuch'"),
    (["schedule", "gemm", "--small", "--no-cache", "--search", "agent", "--policy", "/nonexistent/agent.pt"],
     "no trained Pearl agent"),
])
def test_bad_arguments_are_one_line_errors(capsys, argv, words):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1, err


def test_small_with_a_program_file_is_refused(tmp_path, capsys):
    path = tmp_path / "prog.json"
    save_program(random_program(1, small=True), path)
    assert main(["schedule", str(path), "--small"]) == 2
    assert "--small" in capsys.readouterr().err


def test_pearl_bench_writes_table_json_chart_and_resumes(tmp_path, capsys):
    from llmopt.poly.agent.policy import DEFAULT_POLICY

    out = tmp_path / "bench"
    argv = ["pearl-bench", "--benchmarks", "mvt", *BENCH_FAST, "--out", str(out)]
    assert main(argv) == 0
    data = json.loads((out / "bench.json").read_text())
    row = data["rows"][0]
    assert row["benchmark"] == "mvt" and row["beam"] >= 1.0 and row["o3"] == 1.0
    assert row["beam_search_seconds"] > 0 and row["beam_evaluations"] >= 1
    if not DEFAULT_POLICY.exists():
        assert row["agent"] is None and "n/a" in (out / "bench.md").read_text()
    assert (out / "bench.png").stat().st_size > 1000
    capsys.readouterr()
    assert main(argv) == 0  # same settings: the finished row is reused, not re-measured
    assert json.loads((out / "bench.json").read_text())["rows"][0] == row
    assert "mvt: beam" not in capsys.readouterr().out


def test_bench_defaults_do_not_overwrite_the_committed_results():
    from llmopt.cli import build_parser

    args = build_parser().parse_args(["loops", "pearl-bench"])
    assert args.out == "runs/pearl-bench" and args.repeats == 30 and args.benchmarks is None
    assert args.quiet_cores == 0.15  # the committed bench is guarded against other work


def test_pearl_bench_agent_column_with_a_policy(tmp_path, capsys):
    import numpy as np
    import torch

    from llmopt.poly.agent.model import ActorCritic
    from llmopt.poly.agent.train import TrainConfig, save_checkpoint

    torch.manual_seed(1)
    model = ActorCritic(hidden=16, heads=2)
    save_checkpoint(tmp_path / "agent.pt", model, torch.optim.Adam(model.parameters()), 0, TrainConfig(),
                    np.random.default_rng(0))
    out = tmp_path / "bench"
    assert main(["pearl-bench", "--benchmarks", "mvt", *BENCH_FAST, "--out", str(out), "--policy",
                 str(tmp_path / "agent.pt")]) == 0
    row = json.loads((out / "bench.json").read_text())["rows"][0]
    assert row["agent"] >= 1.0 and 0 < row["agent_search_seconds"] < 60
    capsys.readouterr()


def test_beam_catch_up_reads_the_trace_against_the_agents_speedup():
    from eval.pearl_bench import beam_catch_up, catch_up_rows, markdown, summarize

    base = {"params": {"N": 8}, "o3_seconds": 0.01, "beam_schedule": "S0: P(0)", "beam_evaluations": 9,
            "polly": 1.0, "o3": 1.0}
    fast = {**base, "benchmark": "fast", "beam": 3.0, "beam_search_seconds": 50.0, "agent": 2.0,
            "agent_search_seconds": 0.05, "beam_trace": [[0.0, 1.0], [1.0, 1.5], [9.0, 1.85], [20.0, 3.0]]}
    never = {**base, "benchmark": "never", "beam": 1.2, "beam_search_seconds": 40.0, "agent": 2.0,
             "agent_search_seconds": 0.08, "beam_trace": [[0.0, 1.0], [3.0, 1.2]]}
    kept = {**base, "benchmark": "kept", "beam": 1.1, "beam_search_seconds": 30.0, "agent": 1.0,
            "agent_search_seconds": 0.02, "beam_trace": [[0.0, 1.0]]}
    assert beam_catch_up(fast) == 9.0  # 1.85 >= 0.9 * 2.0; 1.5 is not
    assert beam_catch_up(never) is None
    table = catch_up_rows([fast, never, kept])
    assert [c["benchmark"] for c in table] == ["fast", "never"]  # an identity answer has nothing to catch up to
    assert round(table[0]["ratio"]) == 180 and not table[1]["caught_up"] and round(table[1]["ratio"]) == 500
    text = markdown([fast, never, kept], summarize([fast, never, kept]),
                    {"small": False, "repeats": 3, "threads": 2, "width": 4, "depth": 4, "budget_seconds": 60})
    assert "| fast | 2.00x | 50 | 9.0 s | 180x |" in text and "> 500x" in text
    assert "on 2 of 2; the agent's time is at most 80 ms" in text
