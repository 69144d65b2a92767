"""The inputs and outputs of `llmopt predict`: which files, their checked IR, where results go.

    paths = expand_inputs(["a.ll", "src/", "-"])      # a directory = its .ll/.bc/.c/.cpp files, sorted
    outputs = plan_outputs(paths, output=None, output_dir="out")   # checked before any work
    inp = load_input("src/x.c", cflags=["-Iinclude"])              # C/C++ compiled like the baseline

C and C++ are compiled the way the -Oz baseline sees them (DESIGN.md): `clang -Oz -Xclang
-disable-llvm-passes -emit-llvm -S` (C++ with clang++ -std=c++17), then checked like any IR.
Every problem is a one-line `UsageError`, raised before the model loads.
"""

from __future__ import annotations

import subprocess
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from llmopt.errors import UsageError
from llmopt.inputs import check_ir, prepare_input
from llmopt.outputs import check_output_dir, check_output_file, write_atomic

SOURCE_LANGUAGES = {".c": "c", ".cc": "c++", ".cpp": "c++", ".cxx": "c++"}
INPUT_SUFFIXES = (".ll", ".bc", *SOURCE_LANGUAGES)
OUTPUT_SUFFIX = ".opt.ll"
COMPILE_TIMEOUT_S = 300


@dataclass
class Input:
    """One checked input: `path` as given (`-` = stdin) and the IR to optimize."""

    path: str
    ir: str
    notes: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return "<stdin>" if self.path == "-" else self.path


def expand_inputs(paths: list[str]) -> list[str]:
    """Command-line order; a directory stands for its input files (not recursive), sorted by name."""
    out: list[str] = []
    for path in paths:
        if path != "-" and Path(path).is_dir():
            found = sorted(str(p) for p in Path(path).iterdir() if p.is_file() and p.suffix in INPUT_SUFFIXES)
            if not found:
                raise UsageError(f"{path}: directory holds no {'/'.join(INPUT_SUFFIXES)} files")
            out += found
        else:
            out.append(path)
    if out.count("-") > 1:
        raise UsageError("`-` (stdin) can be given only once")
    return out


def compile_source(path: str, cflags: list[str]) -> str:
    """IR text of a C / C++ file as the -Oz baseline sees it; a one-line error with a hint if clang fails."""
    from llmopt.llvm.toolchain import find_toolchain

    if not Path(path).is_file():
        raise UsageError(f"{path}: no such file")
    toolchain = find_toolchain()
    cxx = SOURCE_LANGUAGES[Path(path).suffix] == "c++"
    compiler = f"clang{'++' if cxx else ''}-{toolchain.version}"
    cmd = [toolchain.tool("clang++" if cxx else "clang"), *(["-std=c++17"] if cxx else []), "-Oz", "-Xclang",
           "-disable-llvm-passes", "-emit-llvm", "-S", "-o", "-", *cflags, path]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=COMPILE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise UsageError(f"{path}: {compiler} did not finish within {COMPILE_TIMEOUT_S}s") from None
    if proc.returncode != 0:
        lines = [ln.strip() for ln in proc.stderr.splitlines() if ln.strip()]
        first = next((ln for ln in lines if "error" in ln), lines[-1] if lines else f"exit code {proc.returncode}")
        raise UsageError(f"{path}: {compiler} cannot compile it: {first} (hint: add include directories with "
                         "-I DIR, macros with -D NAME, other flags with --cflags='...', or give the .ll instead)")
    return proc.stdout


def load_input(path: str, cflags: list[str] | None = None) -> Input:
    """A checked input: IR / bitcode through `llmopt.inputs.prepare_input`, C / C++ compiled first."""
    if path == "-" or Path(path).suffix not in SOURCE_LANGUAGES:
        ir, notes = prepare_input(path)
        return Input(path, ir, notes)
    ir = compile_source(path, cflags or [])
    check_ir(ir, path)
    from llmopt.llvm.ir import strip_optnone

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ir, had_optnone = strip_optnone(ir)  # only if the user's flags asked for -O0
    notes = ["built with optnone (-O0 in the flags?): stripped it"] if had_optnone else []
    return Input(path, ir, notes)


def plan_outputs(inputs: list[str], output: str | None, output_dir: str | None) -> list[str | None]:
    """Where each input's optimized module goes (None: not written), checked before any work.

    `-o FILE` (or `-o -`, stdout) takes exactly one input; `--output-dir DIR` writes
    DIR/<input stem>.opt.ll for each (`stdin.opt.ll` for `-`)."""
    if output is not None:
        if len(inputs) != 1:
            raise UsageError(f"-o names one output file but there are {len(inputs)} inputs: "
                             "use --output-dir DIR for one optimized file per input")
        if output != "-":
            check_output_file(output, "-o")
        return [output]
    if output_dir is None:
        return [None] * len(inputs)
    check_output_dir(output_dir, "--output-dir")
    planned: dict[Path, str] = {}
    resolved_inputs = {Path(i).resolve() for i in inputs if i != "-"}
    for path in inputs:
        target = Path(output_dir) / (("stdin" if path == "-" else Path(path).stem) + OUTPUT_SUFFIX)
        if target in planned:
            raise UsageError(f"{planned[target]} and {path} would both be written to {target}: "
                             "rename one or run them separately")
        if target.resolve() in resolved_inputs:
            raise UsageError(f"{target}: is also an input; choose another --output-dir")
        planned[target] = path
    return [str(t) for t in planned]


def write_output(path: str, text: str) -> None:
    """Write `text` to `path` (`-` = stdout) atomically: a reader never sees half a module."""
    if path == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    target = Path(path)
    try:
        write_atomic(target, text)
    except OSError as err:
        raise UsageError(f"{path}: cannot write the optimized IR: {err.strerror or err}") from None
