"""Reading the user's IR: one place that turns a path (or `-` for stdin) into checked IR text.

Every command that takes an IR file goes through `read_ir_file` / `prepare_input`, so the same
bad input (empty, binary, huge, bitcode, malformed, failing the verifier) gives the same one-line
`UsageError` everywhere.
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import BinaryIO

from llmopt.errors import UsageError, one_line

BITCODE_MAGIC = (b"BC\xc0\xde", b"\xde\xc0\x17\x0b")  # raw bitcode, bitcode wrapper
_CHUNK = 1 << 20


def max_input_bytes() -> int:
    """Largest input read (LLMOPT_MAX_INPUT_MB, default 512): `/dev/zero` must not grow without bound."""
    return int(float(os.environ.get("LLMOPT_MAX_INPUT_MB", "512")) * (1 << 20))


def _read_bounded(stream: BinaryIO, name: str) -> bytes:
    """All of `stream`, failing early on text with NUL bytes (binary) or past `max_input_bytes()`."""
    limit, chunks, size = max_input_bytes(), [], 0
    while chunk := stream.read(_CHUNK):
        if not chunks and not chunk.startswith(BITCODE_MAGIC) and b"\0" in chunk:
            raise UsageError(f"{name}: binary file, expected LLVM IR text (.ll) or bitcode (.bc)")
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            raise UsageError(f"{name}: larger than {limit >> 20} MiB (set LLMOPT_MAX_INPUT_MB to allow more)")
    return b"".join(chunks)


def read_input_bytes(path: str) -> bytes:
    """The bytes of `path` (`-` = stdin), or a UsageError that says what is wrong with it."""
    if path == "-":
        return _read_bounded(sys.stdin.buffer, "<stdin>")
    p = Path(path)
    if not p.exists():
        raise UsageError(f"{path}: no such file")
    if p.is_dir():
        raise UsageError(f"{path}: is a directory, expected an LLVM IR file (.ll)")
    try:
        with open(p, "rb") as f:
            return _read_bounded(f, path)
    except PermissionError:
        raise UsageError(f"{path}: permission denied") from None


def decode_ir(data: bytes, name: str) -> str:
    """IR text from bytes: bitcode is disassembled; a stray non-UTF-8 byte (in a comment, say) is kept
    as U+FFFD instead of rejecting the file, since LLVM itself accepts it there."""
    if not data.strip():
        raise UsageError(f"{name}: file is empty")
    if data.startswith(BITCODE_MAGIC):
        from llmopt.llvm.toolchain import find_toolchain

        proc = subprocess.run([find_toolchain().tool("llvm-dis"), "-o", "-", "-"], input=data, capture_output=True)
        if proc.returncode != 0:
            raise UsageError(f"{name}: cannot read bitcode: {one_line(proc.stderr.decode(errors='replace'))}")
        return proc.stdout.decode(errors="replace")
    if b"\0" in data:
        raise UsageError(f"{name}: binary file, expected LLVM IR text (.ll) or bitcode (.bc)")
    return data.decode("utf-8", errors="replace")


def read_ir_file(path: str) -> str:
    """The text of an IR (.ll) or bitcode (.bc) file (`-` = stdin)."""
    return decode_ir(read_input_bytes(path), "<stdin>" if path == "-" else path)


def check_ir(ir: str, name: str) -> None:
    """UsageError unless `ir` parses, passes the verifier and defines at least one function."""
    from llmopt.llvm.capi import Context, LLVMError
    from llmopt.llvm.ir import defined_functions

    with Context() as ctx:
        try:
            module = ctx.parse(ir)
        except LLVMError as err:
            raise UsageError(f"{name}: malformed LLVM IR: {one_line(err)}") from None
        with module:
            problem = module.verify()
    if problem:
        raise UsageError(f"{name}: invalid LLVM IR (the verifier rejects it): {one_line(problem)}")
    if not defined_functions(ir):
        raise UsageError(f"{name}: no function definitions to optimize")


def prepare_input(path: str) -> tuple[str, list[str]]:
    """Read, check and un-optnone an input; returns (ir, notes for the user)."""
    from llmopt.llvm.ir import strip_optnone

    ir = read_ir_file(path)
    check_ir(ir, "<stdin>" if path == "-" else path)
    notes = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ir, had_optnone = strip_optnone(ir)
    if had_optnone:
        notes.append("input was built with -O0 (optnone): stripped optnone; build with "
                     "`clang -Oz -Xclang -disable-llvm-passes` for a faithful -Oz baseline")
    return ir, notes
