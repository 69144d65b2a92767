"""`llmopt predict` / `llmopt feedback-data` as a user runs them: a real process, the real LLVM and model.

Many inputs (files, a directory, C and C++, stdin), `-o -`, `--output-dir`, `--metric objsize`, the
printed `opt -passes=` pipelines (re-run through opt-19 here), `--verbose`, and bad input: exit 2,
one stderr line, no traceback, before any work.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from llmopt.llvm.ir import defined_functions
from llmopt.llvm.subprocess_opt import count_instructions_text, objsize, run_opt
from llmopt.llvm.toolchain import find_toolchain
from tests.conftest import EXAMPLES, compile_c

TIMEOUT = 300

SMALL_LL = """
define i32 @f(i32 %x) #0 {
  %p = alloca i32
  store i32 %x, ptr %p
  %v = load i32, ptr %p
  %w = add i32 %v, 1
  ret i32 %w
}
attributes #0 = { minsize optsize nounwind }
"""

# slp-vectorizer (not in -Oz) makes these few vector instructions, which SSE2 codegen makes larger
# than -Oz's scalar code: fewer instructions, more bytes.
VEC_C = """
void mul4(int *restrict a, const int *restrict b) { a[0] *= b[0]; a[1] *= b[1]; a[2] *= b[2]; a[3] *= b[3]; }
void div4(int *restrict a) { a[0] /= 3; a[1] /= 3; a[2] /= 3; a[3] /= 3; }
"""

TEMPLATE_CPP = "template <class T> T twice(T x) { return x + x; }\nint use(int v) { return twice(v) * 3; }\n"

VERIFIER_INVALID = "define i32 @f(i32 %a) {\n  %c = add i32 %b, 1\n  %b = add i32 %a, 1\n  ret i32 %c\n}\n"

# The coreset strategy proposes these, most frequent first: deterministic, model-free candidates.
CORESET_LISTS = [["sroa", "instcombine", "simplifycfg"]] * 3 + [["default<Oz>", "slp-vectorizer"]] * 2 + [
    ["mem2reg", "licm", "loop-rotate", "gvn"]]


def llmopt(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "llmopt", *args], input=stdin, capture_output=True, text=True,
                          timeout=TIMEOUT)


def json_lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def instcount(ir: str) -> int:
    return sum(count_instructions_text(ir).values())


def reproduce(ir_path: Path, function: str | None, pipeline: str) -> str:
    """opt-19 -passes=PIPELINE on the function as llvm-extract gives it (None: on the whole module)."""
    ir = ir_path.read_text()
    if function is not None and len(defined_functions(ir)) > 1:
        extract = find_toolchain().tool("llvm-extract")
        ir = subprocess.run([extract, f"--func={function}", "-S", "-o", "-", str(ir_path)], check=True,
                            capture_output=True, text=True).stdout
    return run_opt(ir, pipeline=pipeline)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("inputs")
    (d / "small.ll").write_text(SMALL_LL)
    (d / "vec.c").write_text(VEC_C)
    (d / "tmpl.cpp").write_text(TEMPLATE_CPP)
    (d / "notes.txt").write_text("not an input: skipped by the directory listing")
    return d


@pytest.fixture(scope="module")
def vec_ll(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("vec")
    (d / "vec.c").write_text(VEC_C)
    compile_c(d / "vec.c", d / "vec.ll")
    return d / "vec.ll"


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    """A dataset directory: the coreset's train lists and rows that feedback-data answers."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from llmopt.llvm.ir import normalize_ir, split_functions

    d = tmp_path_factory.mktemp("dataset")
    functions = [normalize_ir(m) for _, m in split_functions((EXAMPLES / "example.ll").read_text())]
    rows = [{"ir": functions[i % len(functions)], "passes": passes, "instcount_input": 30, "instcount_best": 14,
             "optimized_ir": ""} for i, passes in enumerate(CORESET_LISTS)]
    pq.write_table(pa.Table.from_pylist(rows), d / "train.parquet")
    return d


def test_many_inputs_with_the_model_write_one_module_each(inputs, tmp_path):
    """Files and a directory (.ll, .c, .cpp; other files skipped), the model loaded once, one JSON line each."""
    out = tmp_path / "made-by-predict"
    proc = llmopt("predict", str(EXAMPLES / "example.ll"), str(inputs), "-k", "2", "--output-dir", str(out),
                  "--json", "--cache", str(tmp_path / "cache.sqlite"))
    assert proc.returncode == 0, proc.stderr
    reports = json_lines(proc.stdout)
    expected = [EXAMPLES / "example.ll", inputs / "small.ll", inputs / "tmpl.cpp", inputs / "vec.c"]
    assert [r["input"] for r in reports] == [str(p) for p in expected]
    assert {f["name"] for f in reports[3]["functions"]} == {"mul4", "div4"}
    assert any(f["name"] == "_Z3usei" for f in reports[2]["functions"])  # C++, mangled
    opt = find_toolchain().opt
    for r in reports:
        assert r["strategy"] == "priority" and r["samples"] == 2 and r["model"] and r["llvm_version"] == 19
        written = Path(r["output"])
        assert written.parent == out and written.name == Path(r["input"]).stem + ".opt.ll"
        subprocess.run([opt, "-passes=verify", "-disable-output", str(written)], check=True)
        assert instcount(written.read_text()) == r["instcount_result"] <= r["instcount_oz"]
        assert r["versus_oz"] in ("better", "same")
        assert all(f["instcount_result"] <= f["instcount_oz"] for f in r["functions"])
    # The printed pipelines are real: opt-19 reproduces every reported count (.ll inputs: the file is the IR).
    for r in reports[:2]:
        for f in r["functions"]:
            assert instcount(reproduce(Path(r["input"]), f["name"], f["pipeline"])) == f["instcount_result"], f
        if r["module_mode"] == "single-list":
            assert instcount(reproduce(Path(r["input"]), None, r["pipeline"])) == r["instcount_result"]


def test_stdin_to_stdout_with_verbose_report_on_stderr():
    proc = llmopt("predict", "-", "-o", "-", "-k", "3", "--verbose", "--no-cache", stdin=SMALL_LL)
    assert proc.returncode == 0, proc.stderr
    assert instcount(run_opt(proc.stdout, pipeline="verify")) == 2  # stdout is the optimized module only
    err = proc.stderr.splitlines()
    assert "<stdin>: 1 function" in err
    row = next(line for line in err if line.startswith("f "))
    assert row.split()[1:4] == ["5", "2", "2"] and "same as -Oz" in row
    candidates = [line for line in err if line.lstrip(" *").startswith("#")]
    assert len(candidates) >= 2 and sum(line.strip().startswith("*") for line in candidates) == 1
    assert all("insts" in line or "error:" in line for line in candidates)
    assert any(line.startswith("written module: opt -passes='") for line in err)


def test_coreset_answers_pipelines_reproduce_and_json_candidates(dataset, vec_ll, tmp_path):
    proc = llmopt("predict", str(EXAMPLES / "example.ll"), str(vec_ll), "--strategy", "coreset", "--data",
                  str(dataset), "-k", "3", "--json", "--verbose", "--no-cache", "--output-dir", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    example, vec = json_lines(proc.stdout)
    for r in (example, vec):
        for f in r["functions"]:
            assert instcount(reproduce(Path(r["input"]), f["name"], f["pipeline"])) == f["instcount_result"], f
            assert [c["rank"] for c in f["candidates"]] == [1, 2, 3, None]  # the lists, then the -Oz backup
            assert f["passes"] in [c["passes"] for c in f["candidates"]]
        if r["module_mode"] == "single-list":
            assert instcount(reproduce(Path(r["input"]), None, r["pipeline"])) == r["instcount_result"]
        else:
            assert r["pipeline"] is None
        assert instcount(Path(r["output"]).read_text()) == r["instcount_result"]
    sum_scaled = next(f for f in example["functions"] if f["name"] == "sum_scaled")
    assert sum_scaled["instcount_result"] < sum_scaled["instcount_oz"]
    assert sum_scaled["pipeline"].startswith("function(sroa")  # wrapped by kind, not the bare list
    # Fewer instructions than -Oz that cost bytes are said so.
    assert vec["passes"] == ["default<Oz>", "slp-vectorizer"] and vec["versus_oz"] == "better"
    assert vec["objsize_result"] > vec["objsize_oz"]
    assert any("fewer instructions than -Oz cost" in note for note in vec["notes"])


def test_text_report_verdicts_and_notes(dataset, vec_ll):
    proc = llmopt("predict", str(EXAMPLES / "example.ll"), str(vec_ll), "--strategy", "coreset", "--data",
                  str(dataset), "-k", "3", "--no-cache")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "better than -Oz by" in out and "same as -Oz" in out
    notes = [line for line in out.splitlines() if line.startswith("note: ")]
    assert any("instructions than -Oz cost" in n and "--metric objsize" in n for n in notes)
    # The example's @clamp is inlined into its caller on the whole module: the rows do not add up, and it says why.
    assert any("extracted alone" in n and "@clamp" in n for n in notes)
    assert out.rstrip().splitlines()[-1].startswith("total over 2 inputs:")
    # One list only (sroa,instcombine,simplifycfg): @saturate_all needs the -Oz backup, or is worse without it.
    one = ["predict", str(EXAMPLES / "example.ll"), "--strategy", "coreset", "--data", str(dataset), "-k", "1",
           "--no-cache"]
    row = next(line for line in llmopt(*one).stdout.splitlines() if line.startswith("saturate_all"))
    assert "same as -Oz" in row and row.endswith("default<Oz>  (-Oz backup)")
    row = next(line for line in llmopt(*one, "--no-oz-backup").stdout.splitlines() if line.startswith("saturate_all"))
    assert "worse than -Oz by" in row


def test_metric_objsize_never_more_bytes_than_oz(dataset, vec_ll, tmp_path):
    proc = llmopt("predict", str(EXAMPLES / "example.ll"), str(vec_ll), "--strategy", "coreset", "--data",
                  str(dataset), "-k", "3", "--metric", "objsize", "--json", "--no-cache", "--output-dir", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    reports = json_lines(proc.stdout)
    for r in reports:
        assert r["metric"] == "objsize" and r["objsize_result"] <= r["objsize_oz"]
        # Measured again by llc (not the in-process path) on the written module and on opt -Oz.
        assert objsize(Path(r["output"]).read_text()) == r["objsize_result"]
        assert objsize(run_opt(Path(r["input"]).read_text(), ["default<Oz>"])) == r["objsize_oz"]
        assert all(f["objsize_result"] <= f["objsize_oz"] for f in r["functions"])
    vec = reports[1]
    assert vec["passes"] != ["default<Oz>", "slp-vectorizer"]  # fewer instructions, but more bytes
    sum_scaled = next(f for f in reports[0]["functions"] if f["name"] == "sum_scaled")
    assert sum_scaled["objsize_result"] < sum_scaled["objsize_oz"]


def assert_usage_error(proc: subprocess.CompletedProcess, expected: str) -> None:
    """Exit 2, exactly one stderr line naming the problem, no traceback, nothing on stdout."""
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert expected in lines[0], lines[0]
    assert proc.stdout == ""


EXAMPLE = str(EXAMPLES / "example.ll")

# (case, files to write, arguments, what the one line says); {d} is the case's directory.
BAD_PREDICT = [
    ("empty", {"in.ll": b""}, ["{d}/in.ll"], "empty"),
    ("garbage", {"in.ll": b"this is not IR\n"}, ["{d}/in.ll"], "malformed LLVM IR"),
    ("binary", {"in.ll": b"\x7fELF\x02\x01\x00\x00garbage\x00"}, ["{d}/in.ll"], "binary file"),
    ("verifier-invalid", {"in.ll": VERIFIER_INVALID.encode()}, ["{d}/in.ll"], "verifier rejects it"),
    ("one bad among good", {"in.ll": VERIFIER_INVALID.encode()}, [EXAMPLE, "{d}/in.ll"], "verifier rejects it"),
    ("C that does not compile", {"bad.c": b"int f( {\n"}, ["{d}/bad.c"], "hint: add include directories"),
    ("C without functions", {"none.c": b"int x;\n"}, ["{d}/none.c"], "no function definitions"),
    ("missing file", {}, ["{d}/nope.ll"], "no such file"),
    ("empty directory", {"README": b"x"}, ["{d}"], "holds no"),
    ("stdin twice", {}, ["-", "-"], "only once"),
    ("-o into a missing directory", {}, [EXAMPLE, "-o", "{d}/missing/out.ll"], "does not exist"),
    ("-o is a directory", {}, [EXAMPLE, "-o", "{d}"], "is a directory"),
    ("-o with two inputs", {}, [EXAMPLE, EXAMPLE, "-o", "{d}/out.ll"], "--output-dir"),
    ("--output-dir is a file", {"f": b"x"}, [EXAMPLE, "--output-dir", "{d}/f"], "expected a folder"),
    ("two inputs one output name", {"a.ll": SMALL_LL.encode(), "a.c": VEC_C.encode()},
     ["{d}", "--output-dir", "{d}/out"], "would both be written"),
    ("top-p 0", {}, [EXAMPLE, "--strategy", "nucleus", "--top-p", "0"], "top-p must be in (0.0, 1.0]"),
    ("top-p above 1", {}, [EXAMPLE, "--top-p", "1.5"], "top-p"),
    ("negative temperature", {}, [EXAMPLE, "--temperature", "-1"], "temperature must be >= 0"),
    ("zero samples", {}, [EXAMPLE, "-k", "0"], "--samples"),
    ("samples not a number", {}, [EXAMPLE, "-k", "many"], "expected a whole number"),
    ("zero workers", {}, [EXAMPLE, "--workers", "0"], "--workers"),
    ("unknown metric", {}, [EXAMPLE, "--metric", "speed"], "--metric"),
    ("unbalanced --cflags", {}, [EXAMPLE, "--cflags", "-DX='"], "--cflags"),
]


@pytest.mark.parametrize(("files", "args", "expected"), [c[1:] for c in BAD_PREDICT], ids=[c[0] for c in BAD_PREDICT])
def test_predict_bad_input_is_one_line_before_any_work(files, args, expected, tmp_path):
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    # A model that does not exist: the error is the input's, so it was found before the model loads.
    proc = llmopt("predict", *(a.format(d=tmp_path) for a in args), "--model", str(tmp_path / "no-model"),
                  "--no-cache", stdin="")
    assert_usage_error(proc, expected)


T = ["--splits", "train"]
BAD_FEEDBACK_DATA = [
    ("missing directory", {}, ["{d}/nope", "{d}/out", *T], "no such dataset directory"),
    ("garbage parquet", {"train.parquet": b"garbage"}, ["{d}", "{d}/out", *T], "not a readable parquet file"),
    ("empty parquet", {"train.parquet": b""}, ["{d}", "{d}/out", *T], "not a readable parquet file"),
    ("no ir column", "no-ir", ["{d}", "{d}/out", *T], "no `ir` column"),
    ("missing split", "dataset", ["{d}", "{d}/out"], "no split 'validation'"),
    ("no splits", "dataset", ["{d}", "{d}/out", "--splits", ","], "--splits"),
    ("out is a file", "dataset", ["{d}", "{d}/train.parquet", *T], "expected a folder"),
    ("zero limit", "dataset", ["{d}", "{d}/out", *T, "--limit", "0"], "--limit"),
]


@pytest.mark.parametrize(("files", "args", "expected"), [c[1:] for c in BAD_FEEDBACK_DATA],
                         ids=[c[0] for c in BAD_FEEDBACK_DATA])
def test_feedback_data_bad_input_is_one_line(files, args, expected, dataset, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    if files == "dataset":
        (tmp_path / "train.parquet").write_bytes((dataset / "train.parquet").read_bytes())
    elif files == "no-ir":
        pq.write_table(pa.table({"passes": [["sroa"]]}), tmp_path / "train.parquet")
    else:
        for name, data in files.items():
            (tmp_path / name).write_bytes(data)
    proc = llmopt("feedback-data", *(a.format(d=tmp_path) for a in args), "--model", str(tmp_path / "no-model"),
                  "--no-cache")
    assert_usage_error(proc, expected)


def test_feedback_data_writes_feedback_rows(dataset, tmp_path):
    """The command used to crash on every run (a keyword mismatch); now it answers rows with the model."""
    import pyarrow.parquet as pq

    from llmopt.model import format as fmt

    out = tmp_path / "feedback"
    proc = llmopt("feedback-data", str(dataset), str(out), "--splits", "train", "--limit", "2", "--json",
                  "--no-cache", "--workers", "1")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["rows"] == {"train": 2} and report["format"] == "fast"
    table = pq.read_table(out / "train.parquet")
    assert table.num_rows == 2 and {"feedback_history", "verdict"} <= set(table.column_names)
    assert set(table.column("verdict").to_pylist()) <= {fmt.SURE, fmt.RETRY}
    turn = table.column("feedback_history").to_pylist()[0][0]
    assert turn["passes"] and "instructions after" in turn["feedback"]


def _stderr_on_a_terminal(*args: str) -> str:
    """What `llmopt` writes to stderr when stderr is a terminal (a pty 120 columns wide)."""
    import fcntl
    import os
    import pty
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    proc = subprocess.Popen([sys.executable, "-m", "llmopt", *args], stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    assert proc.wait(timeout=TIMEOUT) == 0
    return b"".join(chunks).decode(errors="replace")


def test_progress_on_a_terminal_unless_no_progress(dataset):
    args = ["predict", str(EXAMPLES / "example.ll"), "--strategy", "coreset", "--data", str(dataset), "-k", "1",
            "--no-cache"]
    assert "5/5" in _stderr_on_a_terminal(*args)  # the bar counts functions
    assert _stderr_on_a_terminal(*args, "--no-progress").strip() == ""
