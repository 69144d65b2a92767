"""The CLI contract on bad input, for every subcommand: exit code 2, exactly one line on stderr, no
traceback, no hang (each run has a timeout).

Every case runs the real `python -m llmopt` in a subprocess; the cases run concurrently (a small thread
pool, in one module fixture) so the whole file stays well under two minutes on two cores.
"""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES

TIMEOUT = 90  # seconds per run: a hang fails the case instead of the suite
EX = str(EXAMPLES / "example.ll")
EXAMPLE = Path(EX).read_text()
VERIFIER_INVALID = "define i32 @f(i32 %a) {\n  %b = add i32 %c, 1\n  %c = add i32 %a, 1\n  ret i32 %b\n}\n"


def _files(root: Path) -> dict[str, Path]:
    """The bad inputs, by name (created once per module)."""
    contents = {
        "empty.ll": b"",
        "garbage.ll": b"hello, this is not LLVM IR\n" * 3,
        "binary.ll": bytes(range(256)) * 8,
        "truncated.ll": EXAMPLE[: len(EXAMPLE) * 2 // 5].encode(),
        "invalid.ll": VERIFIER_INVALID.encode(),  # parses, the verifier rejects it
        "nofunc.ll": b"declare i32 @g()\n",
        "huge.ll": b"; padding comment line\n" * 100_000,  # 2.3 MB, over LLMOPT_MAX_INPUT_MB=1
        "garbage.json": b"{not json",
        "empty.json": b"",
        "binary.json": bytes(range(256)),
        "unknown.json": b'{"no_such_key": 1}',
        "policy.zip": b"PK\x03\x04 not really a zip",
        "notes.txt": b"not a database, and not the cache's to move\n",
        "a_file": b"x",
    }
    paths = {}
    for name, data in contents.items():
        paths[name] = root / name
        paths[name].write_bytes(data)
    for name in ("garbage.ll", "binary.ll", "truncated.ll", "invalid.ll"):  # eval reads .ll directories
        folder = root / f"dir-{name[:-3]}"
        folder.mkdir()
        (folder / "f.ll").write_bytes(paths[name].read_bytes())
    (root / "dir-parquet").mkdir()
    (root / "dir-parquet" / "test.parquet").write_bytes(b"PAR1" + bytes(range(200)))
    (root / "dir-example").mkdir()
    (root / "dir-example" / "example.ll").write_text(EXAMPLE)
    (root / "emptydir").mkdir()
    return paths


Case = dict[str, tuple[list[str], str]]  # {case id: (argv after `llmopt`, a word the one-line error must contain)}


def _cases(root: Path, f: dict[str, Path]) -> Case:
    """Every command's cases, by case id."""
    return {**_ir_cases(root, f), **_eval_cases(root, f), **_datagen_cases(root, f), **_train_cases(root, f),
            **_loops_cases(root, f), **_cache_cases(root, f)}


def _ir_cases(root: Path, f: dict[str, Path]) -> Case:
    """count, opt, passes and the global options."""
    missing, ex = str(root / "missing.ll"), EX
    bad_ir = {"empty": "empty", "garbage": "malformed", "binary": "binary", "truncated": "malformed",
              "invalid": "verifier", "nofunc": "no function definitions", "huge": "LLMOPT_MAX_INPUT_MB"}
    cases: Case = {}
    for name, word in bad_ir.items():
        cases[f"count-{name}"] = (["count", str(f[f"{name}.ll"])], word)
        cases[f"opt-{name}"] = (["opt", str(f[f"{name}.ll"]), "-p", "sroa", "--no-cache"], word)
    return cases | {
        "count-missing": (["count", missing], "no such file"),
        "count-directory": (["count", str(root)], "is a directory"),
        "count-no-file": (["count"], "required"),
        "opt-missing": (["opt", missing, "-p", "sroa"], "no such file"),
        "opt-directory": (["opt", str(root), "-p", "sroa"], "is a directory"),
        "opt-empty-element": (["opt", ex, "-p", "gvn,,"], "unknown function pass"),
        "opt-empty-pipeline": (["opt", ex, "-p", ""], "empty pass pipeline"),
        "opt-unknown-pass": (["opt", ex, "-p", "sroa,no-such-pass"], "no-such-pass"),
        "opt-unbalanced": (["opt", ex, "-p", "function(gvn"], "invalid pipeline"),
        "opt-output-folder-missing": (["opt", ex, "-p", "sroa", "-o", str(root / "no" / "o.ll")], "does not exist"),
        "opt-output-directory": (["opt", ex, "-p", "sroa", "-o", str(root)], "is a directory"),
        "passes-bad-option": (["passes", "--bogus"], "--bogus"),
        "no-such-command": (["frobnicate"], "invalid choice"),
        "llvm-version-bad": (["--llvm-version", "x", "count", ex], "--llvm-version"),
    }


def _eval_cases(root: Path, f: dict[str, Path]) -> Case:
    """llmopt eval"""
    missing, out, ex = str(root / "missing.ll"), str(root / "out-never"), EX
    return {
        "eval-missing": (["eval", "--dataset", missing, "--out", out], "no such dataset"),
        "eval-garbage-parquet": (["eval", "--dataset", str(root / "dir-parquet"), "--out", out], "parquet"),
        "eval-binary-ll": (["eval", "--dataset", str(root / "dir-binary"), "--out", out], "binary"),
        "eval-garbage-ll": (["eval", "--dataset", str(root / "dir-garbage"), "--out", out], "malformed"),
        "eval-truncated-ll": (["eval", "--dataset", str(root / "dir-truncated"), "--out", out], "malformed"),
        "eval-invalid-ll": (["eval", "--dataset", str(root / "dir-invalid"), "--out", out], "verifier"),
        "eval-empty-dir": (["eval", "--dataset", str(root / "emptydir"), "--out", out], "no .ll files"),
        "eval-huge-ll": (["eval", "--dataset", str(f["huge.ll"]), "--out", out], "LLMOPT_MAX_INPUT_MB"),
        "eval-out-is-a-file": (["eval", "--dataset", ex, "--out", str(f["a_file"])], "is a file"),
        "eval-chunk-0": (["eval", "--dataset", ex, "--out", out, "--chunk", "0"], "--chunk"),
        "eval-samples-0": (["eval", "--dataset", ex, "--out", out, "--samples", "0"], "--samples"),
        "eval-samples-huge": (["eval", "--dataset", ex, "--out", out, "--samples", "1,100000"], "--samples"),
        "eval-top-p": (["eval", "--dataset", ex, "--out", out, "--top-p", "1.5"], "top-p"),
        "eval-temperature": (["eval", "--dataset", ex, "--out", out, "--temperature", "-1"], "temperature"),
        "eval-limit-0": (["eval", "--dataset", ex, "--out", out, "--limit", "0"], "--limit"),
        "eval-unknown-method": (["eval", "--dataset", ex, "--out", out, "--methods", "bogus"], "unknown method"),
        "eval-nothing-evaluated": (["eval", "--dataset", str(root / "dir-example"), "--out", str(root / "ev"),
                                    "--methods", "autotuner", "--samples", "1", "--no-cache", "--workers", "1",
                                    "--no-progress"], "nothing was evaluated"),
    }


def _datagen_cases(root: Path, f: dict[str, Path]) -> Case:
    """llmopt datagen"""
    missing, out = str(root / "missing.ll"), str(root / "out-never")
    return {
        "datagen-shard-units": (["datagen", "--source", "csmith:2", "--out", out, "--shard-units", "-1"], "must be"),
        "datagen-budget-0": (["datagen", "--source", "csmith:2", "--out", out, "--budget", "0"], "--budget"),
        "datagen-share": (["datagen", "--source", "csmith:2", "--out", out, "--test-share", "2"], "share"),
        "datagen-workers-0": (["datagen", "--source", "csmith:2", "--out", out, "--workers", "0"], "--workers"),
        "datagen-metric": (["datagen", "--source", "csmith:2", "--out", out, "--metric", "speed"], "--metric"),
        "datagen-no-source": (["datagen", "--out", out], "--source"),
        "datagen-unknown-source": (["datagen", "--source", "bogus:1", "--out", out], "unknown source"),
        "datagen-missing-dir-source": (["datagen", "--source", f"dir:{missing}", "--out", out], "not a directory"),
        "datagen-out-is-a-file": (["datagen", "--source", "csmith:2", "--out", str(f["a_file"])], "is a file"),
        "datagen-config-missing": (["datagen", "--config", missing], "--config"),
        "datagen-config-garbage": (["datagen", "--config", str(f["garbage.json"])], "--config"),
        "datagen-config-directory": (["datagen", "--config", str(root)], "--config"),
        "datagen-status-no-job": (["datagen", "--status", "--out", str(root)], "no datagen job"),
        "datagen-status-no-out": (["datagen", "--status"], "--out"),
        "datagen-ray-unreachable": (["datagen", "--source", "csmith:2", "--out", out, "--executor", "ray",
                                     "--address", "127.0.0.1:1"], "cannot reach"),
    }


def _train_cases(root: Path, f: dict[str, Path]) -> Case:
    """llmopt train"""
    missing = str(root / "missing.ll")
    return {
        "train-missing": (["train", missing], "not found"),
        "train-directory": (["train", str(root)], "is a directory"),
        "train-empty": (["train", str(f["empty.json"])], "empty.json"),
        "train-garbage": (["train", str(f["garbage.json"])], "garbage.json"),
        "train-binary": (["train", str(f["binary.json"])], "binary.json"),
        "train-unknown-key": (["train", str(f["unknown.json"])], "no_such_key"),
        "train-bad-set": (["train", "training/configs/tiny.json", "--set", "max_steps"], "key=value"),
    }


def _loops_cases(root: Path, f: dict[str, Path]) -> Case:
    """llmopt loops"""
    missing = str(root / "missing.ll")
    return {
        "loops-zero": (["loops", "tune", "0", "64", "64"], "must be >= 1"),
        "loops-negative": (["loops", "tune", "64", "-3", "64"], "must be >= 1"),
        "loops-not-a-number": (["loops", "tune", "64", "x", "64"], "whole number"),
        "loops-too-big-for-memory": (["loops", "tune", "1000000000", "1", "1"], "GiB"),
        "loops-too-big": (["loops", "tune", "100000", "100000", "100000"], "GiB"),
        "loops-candidates": (["loops", "tune", "64", "64", "64", "--candidates", "100000"], "--candidates"),
        "loops-search": (["loops", "tune", "64", "64", "64", "--search", "nosuch"], "unknown search"),
        "loops-policy-garbage": (["loops", "tune", "64", "64", "64", "--policy", str(f["policy.zip"])], "not a policy"),
        "loops-policy-directory": (["loops", "tune", "64", "64", "64", "--policy", str(root)], "is a directory"),
        "loops-policy-missing": (["loops", "tune", "64", "64", "64", "--policy", missing], "no such file"),
        "loops-bench-remeasure": (["loops", "bench", "--remeasure", "0"], "--remeasure"),
        "loops-bench-out-file": (["loops", "bench", "--out", str(f["a_file"])], "is a file"),
        "loops-train-envs": (["loops", "train", "--envs", "0"], "--envs"),
    }


def _cache_cases(root: Path, f: dict[str, Path]) -> Case:
    """llmopt cache"""
    missing = str(root / "missing.ll")
    return {
        "cache-no-subcommand": (["cache"], "required"),
        "cache-info-missing": (["cache", "info", "--cache", missing], "no such file"),
        "cache-info-directory": (["cache", "info", "--cache", str(root)], "is a directory"),
        "cache-clear-not-a-cache": (["cache", "clear", "--cache", str(f["notes.txt"])], "not a usable llmopt cache"),
    }


def _run(argv: list[str], cache_dir: Path) -> subprocess.CompletedProcess | str:
    env = {**os.environ, "LLMOPT_MAX_INPUT_MB": "1", "LLMOPT_CACHE_DIR": str(cache_dir)}
    try:
        return subprocess.run([sys.executable, "-m", "llmopt", *argv], capture_output=True, text=True,
                              timeout=TIMEOUT, env=env, cwd=Path(__file__).resolve().parent.parent)
    except subprocess.TimeoutExpired:
        return f"hung: no answer within {TIMEOUT} s"


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    root = tmp_path_factory.mktemp("bad")
    cases = _cases(root, _files(root))
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = {case: pool.submit(_run, argv, root / "cache") for case, (argv, _) in cases.items()}
        results = {case: future.result() for case, future in futures.items()}
    return root, cases, results


CASE_IDS = list(_cases(Path("/x"), {k: Path("/x") / k for k in (
    "empty.ll", "garbage.ll", "binary.ll", "truncated.ll", "invalid.ll", "nofunc.ll", "huge.ll", "garbage.json",
    "empty.json", "binary.json", "unknown.json", "policy.zip", "notes.txt", "a_file")}))


@pytest.mark.parametrize("case", CASE_IDS)
def test_bad_input_is_one_line_and_exit_2(outcomes, case):
    _, cases, results = outcomes
    argv, word = cases[case]
    out = results[case]
    assert not isinstance(out, str), f"llmopt {' '.join(argv)}: {out}"
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2, f"llmopt {' '.join(argv)} -> {out.returncode}: {out.stderr[-2000:]}"
    assert "Traceback" not in out.stderr and len(lines) == 1, out.stderr[-2000:]
    assert word in lines[0], lines[0]


def test_nothing_was_written_or_moved(outcomes):
    """Refused commands leave no output behind, and a file that is not a cache is never moved aside."""
    root, _, _ = outcomes
    assert not (root / "out-never").exists()
    assert (root / "notes.txt").read_bytes().startswith(b"not a database")
    assert not list(root.glob("notes.txt.corrupt-*"))
