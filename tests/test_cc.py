"""`llmopt cc`: a real make build of a small C project through the wrapper (real clang-19, real model),
its summary, the answer cache on a rebuild, clang's own errors, fallbacks and pass-through calls."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from llmopt.cc_args import classify, codegen_args, fallback_args, frontend_args
from llmopt.cc_store import AnswerCache
from llmopt.llvm.toolchain import find_toolchain

LLMOPT = [shutil.which("llmopt")] if shutil.which("llmopt") else [sys.executable, "-m", "llmopt"]
EXPECTED = "hello gcd=12 squares=385 vowels=4 mvll\n"
# Two C files and a C++ one: `prog` is linked straight from main.c (a C source to an executable), the
# others are compiled to objects with -MMD; strutil.cpp has an unused variable for -Wall to report.
FILES = {
    "include/util.h": '#ifdef __cplusplus\nextern "C" {\n#endif\nint gcd(int a, int b);\nlong sum_squares(int n);\n'
                      "void reverse(char *s);\nint count_vowels(const char *s);\n#ifdef __cplusplus\n}\n#endif\n",
    "main.c": '#include <stdio.h>\n#include "util.h"\nint main(void) {\n  char word[] = "llvm";\n  reverse(word);\n'
              '  printf("%s gcd=%d squares=%ld vowels=%d %s\\n", GREETING, gcd(84, 36), sum_squares(10),\n'
              '         count_vowels("optimizer"), word);\n  return 0;\n}\n',
    "mathutil.c": '#include "util.h"\nint gcd(int a, int b) { while (b) { int t = a % b; a = b; b = t; } return a; }\n'
                  "long sum_squares(int n) { long s = 0; for (int i = 1; i <= n; i++) s += (long)i * i; return s; }\n",
    "strutil.cpp": '#include "util.h"\ntemplate <class C> bool is_vowel(C c) {\n'
                   "  return c == 'a' || c == 'e' || c == 'i' || c == 'o' || c == 'u';\n}\n"
                   "void reverse(char *s) {\n  unsigned long i = 0, j = 0;\n  while (s[j]) j++;\n"
                   "  for (; i + 1 < j; i++, j--) { char t = s[i]; s[i] = s[j - 1]; s[j - 1] = t; }\n}\n"
                   "int count_vowels(const char *s) {\n  int n = 0, spare;\n  for (; *s; s++) n += is_vowel(*s);\n"
                   "  return n;\n}\n",
    "Makefile": "CFLAGS = -O2 -g -Wall -Iinclude -DGREETING='\"hello\"'\nCXXFLAGS = -Os -Wall -Iinclude -fno-exceptions\n"
                "prog: main.c mathutil.o strutil.o\n\t$(CC) $(CFLAGS) -MMD -MP -o $@ main.c mathutil.o strutil.o\n"
                "%.o: %.c\n\t$(CC) $(CFLAGS) -MMD -MP -c $< -o $@\n"
                "%.o: %.cpp\n\t$(CXX) $(CXXFLAGS) -MMD -MP -c $< -o $@\n-include prog.d mathutil.d strutil.d\n",
}
UNITS = ["mathutil.o", "prog", "strutil.o"]
DEPENDENCY_FILES = ("prog.d", "mathutil.d", "strutil.d")
FUNCTIONS = 6  # main, gcd, sum_squares, reverse, count_vowels, is_vowel<char>


def _env(cache: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LLMOPT_CC_")}
    return {**env, "LLMOPT_CACHE_DIR": str(cache), "LLMOPT_CC_SAMPLES": "2", **extra}


def _write_project(root: Path) -> Path:
    for name, text in FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def _make(root: Path, env: dict[str, str], *extra: str) -> subprocess.CompletedProcess:
    llmopt = " ".join(shlex.quote(w) for w in LLMOPT)
    return subprocess.run(["make", "-j2", f"CC={llmopt} cc", f"CXX={llmopt} c++", *extra], cwd=root, env=env, capture_output=True, text=True,
                          timeout=300)


def _summary(root: Path, env: dict[str, str]) -> dict:
    out = subprocess.run([*LLMOPT, "cc-summary", "--json"], cwd=root, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def _cc(args: list[str], cwd: Path, env: dict[str, str], lang: str = "cc", **kw) -> subprocess.CompletedProcess:
    return subprocess.run([*LLMOPT, lang, *args], cwd=cwd, env=env, capture_output=True, **kw)


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """The project built once with `make CC="llmopt cc" CXX="llmopt c++"`: (directory, environment, make's result)."""
    root = _write_project(tmp_path_factory.mktemp("proj"))
    env = _env(root.parent / "cache")
    return root, env, _make(root, env)


def test_make_build_runs_and_is_quiet(project):
    root, _, built = project
    assert built.returncode == 0, built.stderr
    assert "llmopt" not in built.stderr  # quiet on success; clang's own warning shown once
    assert built.stderr.count("warning:") == built.stderr.count("unused variable 'spare'") == 1
    assert subprocess.run([root / "prog"], capture_output=True, text=True).stdout == EXPECTED


def test_summary_counts_units_functions_and_bytes(project):
    root, env, _ = project
    data = _summary(root, env)
    totals, units = data["totals"], data["units"]
    assert totals["units"] == totals["optimized"] == 3 and totals["functions"] == FUNCTIONS
    assert sorted(Path(u["output"]).name for u in units) == UNITS
    for unit in units:  # instructions never worse than -Oz; both objects measured
        assert 0 < unit["instcount_result"] <= unit["instcount_oz"] < unit["instcount_input"]
        assert unit["objsize_oz"] > 0 and unit["objsize_result"] > 0
    text = subprocess.run([*LLMOPT, "cc-summary"], cwd=root, env=env, capture_output=True, text=True).stdout
    assert "3 units" in text and "strutil.o" in text and any(ln.startswith("total ") for ln in text.splitlines())


def test_dependency_files_match_plain_clang(project, tmp_path):
    root, env, _ = project
    plain = _write_project(tmp_path)
    toolchain = find_toolchain()
    built = subprocess.run(["make", f"CC={toolchain.clang}", f"CXX={toolchain.tool('clang++')}"], cwd=plain,
                           capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    for name in DEPENDENCY_FILES:
        assert (root / name).read_text() == (plain / name).read_text()
    assert (root / "prog.d").read_text().startswith("prog: main.c include/util.h")


def test_rebuild_takes_answers_from_the_cache(project):
    root, env, _ = project
    answers = AnswerCache(Path(env["LLMOPT_CACHE_DIR"]) / "cc" / "answers.sqlite")
    stored = len(answers.cache)
    rebuilt = _make(root, env, "-B")
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert subprocess.run([root / "prog"], capture_output=True, text=True).stdout == EXPECTED
    assert _summary(root, env)["totals"]["cache_hits"] == 3
    assert len(answers.cache) == stored  # nothing predicted or measured anew


def test_syntax_error_is_reported_as_clang_reports_it(tmp_path):
    env = _env(tmp_path / "cache")
    (tmp_path / "bad.c").write_text("int f(void) {\n  return 1 +;\n}\n")
    ours = _cc(["-c", "bad.c", "-o", "bad.o"], tmp_path, env, text=True)
    theirs = subprocess.run([find_toolchain().clang, "-Oz", "-c", "bad.c", "-o", "bad.o"], cwd=tmp_path,
                            capture_output=True, text=True)
    assert ours.returncode == theirs.returncode != 0
    assert ours.stderr == theirs.stderr and "expected expression" in ours.stderr
    assert [u["status"] for u in _summary(tmp_path, env)["units"]] == ["error"]


def test_failure_falls_back_to_clang_with_one_warning(tmp_path):
    env = _env(tmp_path / "cache", LLMOPT_CC_TIMEOUT="0.2")  # the prediction cannot finish in time
    (tmp_path / "ok.c").write_text("int twice(int x) { return 2 * x; }\n")
    out = _cc(["-c", "ok.c", "-o", "ok.o"], tmp_path, env, text=True)
    assert out.returncode == 0 and (tmp_path / "ok.o").stat().st_size > 0
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("llmopt cc: warning: ok.c:") and "plain clang" in lines[0]
    [unit] = _summary(tmp_path, env)["units"]
    assert unit["status"] == "fallback" and unit["reason"].startswith("predict: timed out")
    bad = _cc(["-c", "ok.c", "-o", "ok2.o"], tmp_path, {**env, "LLMOPT_CC_MODEL": str(tmp_path / "no-model")}, text=True)
    assert bad.returncode == 0 and "LLMOPT_CC_MODEL" in bad.stderr and (tmp_path / "ok2.o").exists()


def test_pass_through_calls_behave_as_clang(tmp_path):
    env, clang = _env(tmp_path / "cache"), find_toolchain().clang
    (tmp_path / "p.c").write_text("#define N 3\nint n = N;\n")
    for args in (["-E", "p.c"], ["--version"], ["-dumpmachine"]):
        ours, theirs = _cc(args, tmp_path, env), subprocess.run([clang, *args], cwd=tmp_path, capture_output=True)
        assert (ours.returncode, ours.stdout, ours.stderr) == (theirs.returncode, theirs.stdout, theirs.stderr)
    stdin = _cc(["-c", "-x", "c", "-", "-o", "s.o"], tmp_path, env, input=b"int s(void) { return 4; }\n")
    assert stdin.returncode == 0 and (tmp_path / "s.o").exists()
    assert _summary(tmp_path, env)["units"] == []  # none of these is a unit


def test_classify_and_rewrite_arguments():
    assert classify(["-E", "a.c"]).kind == classify(["a.o", "b.o", "-o", "p"]).kind == "pass"
    assert classify(["-c", "a.c", "b.c"]).kind == classify(["-c", "x.s"]).kind == "pass"
    assert classify(["-c", "-fsanitize=address", "a.c"]).kind == "skip"
    inv = classify(["-O2", "-Iinc", "-D", "X=1", "-MMD", "-c", "src/a.c", "-o", "out/a.o"])
    assert (inv.kind, inv.mode, inv.output_path()) == ("unit", "object", "out/a.o")
    front = frontend_args(inv, "/t/a.ll")
    assert "-O2" not in front and front[:3] == ["-Oz", "-Xclang", "-disable-llvm-passes"]
    assert front[front.index("-MF") + 1] == "out/a.d" and front[front.index("-MQ") + 1] == "out/a.o"
    back = codegen_args(inv, "/t/a.ll")
    assert "-Iinc" not in back and "-D" not in back and "-MMD" not in back and "/t/a.ll" in back
    assert fallback_args(inv)[0] == "-O2" and fallback_args(classify(["-c", "a.c"]))[0] == "-Oz"
    bare = classify(["-MD", "-c", "dir/b.c"])
    bare_front = frontend_args(bare, "x.ll")
    assert bare.output_path() == "b.o" and bare_front[bare_front.index("-MQ") + 1] == "b.o"
    assert bare_front[bare_front.index("-MF") + 1] == "b.d"
    link = classify(["m.c", "lib.o", "-lm", "-o", "prog"])
    assert link.mode == "link" and codegen_args(link, "m.ll")[3:7] == ["m.ll", "lib.o", "-lm", "-o"]


def test_assembly_to_stdout_from_cached_answer(project):
    root, env, _ = project
    answers = AnswerCache(Path(env["LLMOPT_CACHE_DIR"]) / "cc" / "answers.sqlite")
    stored = len(answers.cache)
    out = _cc(["-O2", "-g", "-Wall", "-Iinclude", "-DGREETING=\"hello\"", "-S", "mathutil.c", "-o", "-"], root, env,
              text=True)
    assert out.returncode == 0 and out.stderr == "", out.stderr
    assert "gcd:" in out.stdout and "sum_squares:" in out.stdout
    assert len(answers.cache) == stored  # the IR is the one make built: its answer and sizes are cached
