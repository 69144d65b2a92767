"""The reference path: spawn `opt` / `llc` and read their output.

Slower than the in-process C API path (one process per evaluation) but immune to LLVM
aborts; tests compare the fast path against it.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

from llmopt.llvm.elf import text_and_data_bytes
from llmopt.llvm.passes import build_pipeline
from llmopt.llvm.toolchain import find_toolchain


class OptError(RuntimeError):
    """`opt` or `llc` failed; the message is the tool's last stderr line."""


def _last_line(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else "unknown error"


def run_opt(ir: str, passes: list[str] | None = None, pipeline: str | None = None, *,
            version: int | None = None, timeout: float = 60) -> str:
    """Optimized IR text of `ir` under a vocabulary pass list (or a raw pipeline string)."""
    if pipeline is None:
        pipeline = build_pipeline(passes or [], version)
    opt = find_toolchain(version).opt
    try:
        proc = subprocess.run([opt, f"-passes={pipeline}", "-S", "-o", "-", "-"], input=ir,
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as err:
        raise OptError(f"opt timed out after {timeout:g}s") from err
    if proc.returncode != 0:
        raise OptError(_last_line(proc.stderr))
    return proc.stdout


def _continuation(line: str) -> bool:
    """A line that continues the instruction above it rather than starting one."""
    return line.startswith(("to label ", "catch ", "filter ")) or line == "cleanup"


def count_instructions_text(ir: str) -> dict[str, int]:
    """Instructions per defined function, counted from IR text (independent of the C API).

    Inside a `define ... {` body every line is an instruction except labels, comments,
    blank lines, debug records and the continuation lines of multi-line instructions (an
    invoke's `to label ... unwind label ...`, a landingpad's `catch` / `filter` / `cleanup`
    clauses) -- the same definition as LLVM's instcount.
    """
    counts: dict[str, int] = {}
    current = None
    in_table = False
    for raw in ir.splitlines():
        line = raw.split(";", 1)[0].strip() if '"' not in raw else raw.strip()
        if current is None:
            match = re.match(r'define [^@]*@("(?:[^"\\]|\\.)*"|[\w.$\-]+)\(', line)
            if match and line.endswith("{"):
                name = match.group(1)
                current = name[1:-1] if name.startswith('"') else name
                counts[current] = 0
            continue
        if in_table:  # the case list of a multi-line `switch ... [` ends at `]`
            in_table = not line.endswith("]")
        elif line == "}":
            current = None
        elif line and not line.startswith((";", "#dbg_")) and not re.match(r"^[\w.\-\"]+:", line) \
                and not _continuation(line):
            counts[current] += 1
            in_table = line.endswith("[")
    return counts


def objsize(ir: str, *, version: int | None = None, timeout: float = 60) -> int:
    """Bytes of .text + .data after `llc -filetype=obj` (the secondary metric)."""
    toolchain = find_toolchain(version)
    with tempfile.TemporaryDirectory() as tmp:
        obj = Path(tmp) / "out.o"
        try:
            proc = subprocess.run([toolchain.llc, "-filetype=obj", "-o", str(obj), "-"], input=ir,
                                  capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as err:
            raise OptError(f"llc timed out after {timeout:g}s") from err
        if proc.returncode != 0:
            raise OptError(_last_line(proc.stderr))
        return text_and_data_bytes(obj.read_bytes())
