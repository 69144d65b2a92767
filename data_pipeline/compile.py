"""Compile a unit the way `clang -Oz` sees it before optimization, and split it per function.

Baseline (DESIGN.md): `clang -Oz -Xclang -disable-llvm-passes -emit-llvm -S`, so the IR keeps
`minsize`/`optsize` and `default<Oz>` on it is what `clang -Oz` does.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from data_pipeline.sources import Unit
from llmopt.errors import LlmoptError
from llmopt.llvm.ir import (
    IRError,
    defined_functions,
    estimate_tokens,
    extract_function,
    ir_hash,
    normalize_ir,
    strip_optnone,
)
from llmopt.llvm.toolchain import find_toolchain

CLANG_BASELINE = ("-Oz", "-Xclang", "-disable-llvm-passes", "-emit-llvm", "-S", "-w")


class CompileError(RuntimeError, LlmoptError):
    """A unit that does not compile (skipped and counted, never fatal)."""


@dataclass(frozen=True)
class Function:
    """One defined function of a unit, as a normalized single-function module."""

    unit: Unit
    name: str
    ir: str
    ir_hash: str
    n_tokens: int


def compile_unit(unit: Unit, timeout: float = 120) -> str:
    """The unit's whole-module IR text (unoptimized, -Oz attributes), or CompileError."""
    tc = find_toolchain()
    if unit.language in ("ll", "bc"):
        # Text out, debug info off (normalization expects none), optnone off (from -O0 builds).
        proc = subprocess.run([tc.opt, "-S", "--strip-debug", unit.path, "-o", "-"], capture_output=True,
                              text=True, timeout=timeout)
        if proc.returncode != 0:
            raise CompileError(f"{unit.uid}: {_last(proc.stderr)}")
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return strip_optnone(proc.stdout)[0]
    text = unit_text(unit)
    lang = "c++" if unit.language == "c++" else "c"
    with tempfile.TemporaryDirectory(prefix="llmopt-cc-") as tmp:
        if text is not None:
            path = Path(tmp) / f"unit.{'cpp' if lang == 'c++' else 'c'}"
            path.write_text(text)
        else:
            path = Path(unit.path)
        clang = tc.clang + ("++" if lang == "c++" and Path(tc.clang + "++").exists() else "")
        cmd = [clang, "-x", lang, *CLANG_BASELINE, *unit.flags, str(path), "-o", "-"]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise CompileError(f"{unit.uid}: clang timed out after {timeout}s") from None
    if proc.returncode != 0:
        raise CompileError(f"{unit.uid}: {_last(proc.stderr)}")
    return proc.stdout


def unit_text(unit: Unit) -> str | None:
    """Source text of a generated unit (None: the unit is a file)."""
    if unit.generator == "csmith":
        from data_pipeline.sources.csmith import generate

        return generate(unit.seed)
    return None


def _last(stderr: str) -> str:
    lines = [ln for ln in stderr.strip().splitlines() if "error" in ln] or stderr.strip().splitlines() or ["?"]
    return lines[0][:300]


_DEFINE = re.compile(r"^define [^@]*@(\"(?:[^\"\\]|\\.)*\"|[\w.$\-]+)\(", re.M)


def _body_chars(module_ir: str) -> dict[str, int]:
    """Characters of each function definition in the module (cheap size bound before extraction)."""
    sizes, starts = {}, list(_DEFINE.finditer(module_ir))
    for m in starts:
        end = module_ir.find("\n}\n", m.start())
        name = m.group(1).strip('"')
        sizes[name] = (end if end >= 0 else len(module_ir)) - m.start()
    return sizes


class TokenCounter:
    """Tokens of the model's own tokenizer (the context budget is in these, not in characters)."""

    def __init__(self, directory: str | Path | None = None):
        from llmopt.model.loading import default_model_dir
        from llmopt.model.tokenizer import InferenceTokenizer

        self.directory = Path(directory) if directory else default_model_dir()
        self._tok = InferenceTokenizer(self.directory)

    def __call__(self, text: str) -> int:
        return len(self._tok(text)["input_ids"])


def instruction_lines(ir: str) -> int:
    """Instructions in the defined functions of normalized IR (one a line; labels end in ':')."""
    n, inside = 0, False
    for line in ir.splitlines():
        if line.startswith("define "):
            inside = True
        elif inside and line.startswith("}"):
            inside = False
        elif inside and line.strip() and not line.rstrip().endswith(":"):
            n += 1
    return n


# Characters per token of the model's tokenizer on IR, at least (measured 3.6-3.7): a cheap bound that
# skips clearly-too-long functions before they are extracted.
MAX_CHARS_PER_TOKEN = 5.0


def split_unit(unit: Unit, module_ir: str, max_tokens: int, stats: Counter, count_tokens=None,
               min_instructions: int = 1, names: list[str] | None = None) -> list[Function]:
    """Single-function modules of `unit` within the token budget, boilerplate removed; `stats` counts drops.

    `count_tokens` measures the budget (default: the character estimate `estimate_tokens`); functions
    with fewer than `min_instructions` instructions are dropped; `names` picks which (default: all, in order).
    """
    count_tokens = count_tokens or estimate_tokens
    boiler = re.compile("|".join(f"(?:{b})" for b in unit.boilerplate)) if unit.boilerplate else None
    sizes = _body_chars(module_ir)
    out = []
    for name in names if names is not None else defined_functions(module_ir):
        if boiler and boiler.fullmatch(name):
            stats["boilerplate"] += 1
            continue
        # Normalization only shrinks a body by a fraction: skip clearly-too-big ones unextracted.
        if sizes.get(name, 0) * 0.6 > max_tokens * MAX_CHARS_PER_TOKEN:
            stats["too_long"] += 1
            continue
        try:
            ir = normalize_ir(extract_function(module_ir, name))
        except (IRError, subprocess.TimeoutExpired):
            stats["extract_failed"] += 1
            continue
        if instruction_lines(ir) < min_instructions:
            stats["too_short"] += 1
            continue
        n_tokens = count_tokens(ir)
        if n_tokens > max_tokens:
            stats["too_long"] += 1
            continue
        out.append(Function(unit, name, ir, ir_hash(ir), n_tokens))
    return out
