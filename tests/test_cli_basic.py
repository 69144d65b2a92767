"""`llmopt count / opt / passes` and their handling of bad input (exit 2, one line, no traceback)."""

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import EXAMPLES

EXAMPLE = str(EXAMPLES / "example.ll")


def run(*args, env=None):
    return subprocess.run([sys.executable, "-m", "llmopt.cli", *args], capture_output=True, text=True, timeout=300,
                          env=env)


def one_line_error(out, *words):
    assert out.returncode == 2, out
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
    for word in words:
        assert word in out.stderr, out.stderr


def test_count_json():
    out = run("count", EXAMPLE, "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["instcount"] == sum(data["functions"].values()) > 0 and data["llvm_version"] == 19


def test_opt_json_and_output(tmp_path):
    target = tmp_path / "out.ll"
    out = run("opt", EXAMPLE, "-p", "default<Oz>,simplifycfg", "-o", str(target), "--json", "--no-cache")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert set(data) == {"instcount_input", "instcount_oz", "instcount_result", "passes", "pipeline", "llvm_version"}
    assert data["instcount_result"] <= data["instcount_input"] and data["passes"] == ["default<Oz>", "simplifycfg"]
    assert data["pipeline"] == "default<Oz>,function(simplifycfg)"
    counted = json.loads(run("count", str(target), "--json").stdout)
    assert counted["instcount"] == data["instcount_result"]


def test_passes_lists_vocabulary():
    data = json.loads(run("passes", "--json").stdout)
    assert {"name": "licm", "kind": "loop-mssa"} in data["passes"]


@pytest.mark.parametrize("content,expected", [
    (b"", "empty"),
    (b"define i32 @f( {\n", "malformed"),
    (b"\x7fELF\x02\x01\x01\x00\x00\x00", "binary"),
])
def test_bad_inputs_one_line_exit_2(tmp_path, content, expected):
    path = tmp_path / "in.ll"
    path.write_bytes(content)
    out = run("opt", str(path), "-p", "sroa")
    assert out.returncode == 2 and expected in out.stderr
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_directory_and_unknown_pass(tmp_path):
    assert run("count", str(tmp_path)).returncode == 2
    one_line_error(run("opt", EXAMPLE, "-p", "sroa,bogus-pass"), "bogus-pass")


@pytest.mark.parametrize("pipeline,words", [
    ("gvn,,", ["unknown function pass ''"]),
    ("", ["empty pass pipeline"]),
    ("   ", ["empty pass pipeline"]),
    ("function(gvn", ["invalid pipeline"]),
])
def test_opt_rejects_malformed_pipelines(pipeline, words):
    one_line_error(run("opt", EXAMPLE, "-p", pipeline, "--no-cache"), *words)


@pytest.mark.parametrize("given", [
    "function(instcombine<max-iterations=2>),cgscc(inline)",  # not vocabulary: LLVM's own syntax
    "default<O2>",
    "sroa,licm,default<Oz>",  # vocabulary: wrapped by kind
    "default<Oz>,default<Oz>",  # two meta-passes: not a model answer, but a pipeline opt accepts
])
def test_opt_pipeline_reproduces_with_opt(given, tmp_path):
    """Any pipeline opt accepts runs, and the printed `pipeline` gives the same count through opt-19."""
    from llmopt.llvm.subprocess_opt import count_instructions_text, run_opt

    out = run("opt", EXAMPLE, "-p", given, "--json", "--no-cache")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    by_opt = run_opt((EXAMPLES / "example.ll").read_text(), pipeline=data["pipeline"])
    assert sum(count_instructions_text(by_opt).values()) == data["instcount_result"]


def test_opt_checks_output_before_work(tmp_path):
    one_line_error(run("opt", EXAMPLE, "-p", "sroa", "-o", str(tmp_path / "missing" / "out.ll")), "does not exist")
    one_line_error(run("opt", EXAMPLE, "-p", "sroa", "-o", str(tmp_path)), "is a directory")


def test_opt_survives_a_corrupt_or_unusable_cache(tmp_path):
    """A garbage results.sqlite is moved aside with one warning; a directory as --cache runs uncached."""
    env = {**os.environ, "LLMOPT_CACHE_DIR": str(tmp_path)}
    (tmp_path / "results.sqlite").write_bytes(b"not a database " * 500)
    out = run("opt", EXAMPLE, "-p", "gvn", "--json", env=env)
    assert out.returncode == 0, out.stderr
    assert "corrupt" in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert [p.name for p in tmp_path.glob("results.sqlite.corrupt-*")]
    again = run("opt", EXAMPLE, "-p", "gvn", "--json", env=env)  # the fresh cache works: no warning
    assert again.returncode == 0 and again.stderr == "" and json.loads(again.stdout) == json.loads(out.stdout)
    out = run("opt", EXAMPLE, "-p", "gvn", "--cache", str(tmp_path), env=env)
    assert out.returncode == 0 and "is a directory" in out.stderr


def test_missing_toolchain_is_one_line():
    out = run("--llvm-version", "99", "opt", EXAMPLE, "-p", "sroa")
    assert out.returncode == 2 and "apt-get install llvm-99" in out.stderr and "Traceback" not in out.stderr


def test_count_falls_back_to_llvmlite_without_system_llvm():
    out = run("--llvm-version", "99", "count", EXAMPLE, "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["instcount"] == 151 and str(data["llvm_version"]).startswith("llvmlite-")
