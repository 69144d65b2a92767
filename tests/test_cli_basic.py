"""`llmopt count / opt / passes` and their handling of bad input (exit 2, one line, no traceback)."""

import json
import subprocess
import sys

import pytest

from tests.conftest import EXAMPLES

EXAMPLE = str(EXAMPLES / "example.ll")


def run(*args):
    return subprocess.run([sys.executable, "-m", "llmopt.cli", *args], capture_output=True, text=True, timeout=300)


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
    assert set(data) == {"instcount_input", "instcount_oz", "instcount_result", "passes", "llvm_version"}
    assert data["instcount_result"] <= data["instcount_input"] and data["passes"] == ["default<Oz>", "simplifycfg"]
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
    out = run("opt", EXAMPLE, "-p", "sroa,bogus-pass")
    assert out.returncode == 2 and "bogus-pass" in out.stderr and "Traceback" not in out.stderr


def test_missing_toolchain_is_one_line():
    out = run("--llvm-version", "99", "opt", EXAMPLE, "-p", "sroa")
    assert out.returncode == 2 and "apt-get install llvm-99" in out.stderr and "Traceback" not in out.stderr


def test_count_falls_back_to_llvmlite_without_system_llvm():
    out = run("--llvm-version", "99", "count", EXAMPLE, "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["instcount"] == 151 and str(data["llvm_version"]).startswith("llvmlite-")
