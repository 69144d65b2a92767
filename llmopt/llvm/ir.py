"""IR text utilities: normalization (thesis §4.2.2), optnone stripping, per-function split,
token-length estimate.

Normalization drops what a model does not need -- comments, debug metadata, module
identification metadata, indentation -- and folds attribute groups into the functions that
use them, keeping keyword attributes (`minsize`, `optsize`, `nounwind`, ...) but dropping
string attributes ("target-cpu"=..., "frame-pointer"=...).  The result still parses and has
the same instructions; it is the text that the dataset, the model and the cache key share.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
import warnings
from collections.abc import Iterator

from llmopt.errors import LlmoptError
from llmopt.llvm.syntax import split_top_level
from llmopt.llvm.toolchain import find_toolchain

CHARS_PER_TOKEN = 2.5  # measured ballpark for IR with a BPE tokenizer (thesis: 2.02 for Llama 2)
_ATTR_GROUP = re.compile(r"^attributes #(\d+) = \{(.*)\}\s*$")
_ATTR_REF = re.compile(r"(?<![\w\"])#(\d+)\b")
_DEBUG_RECORD = re.compile(r"^\s*#dbg_\w+\(")
_META_DEF = re.compile(r"^(![\w.\-]+) = ")
_META_REF = re.compile(r"!(\d+)\b")


class IRError(ValueError, LlmoptError):
    """Text that is not LLVM IR we can work with."""


def ir_hash(ir: str) -> str:
    return hashlib.sha256(ir.encode()).hexdigest()


def estimate_tokens(ir: str) -> int:
    """A rough token count of `ir` for context budgeting (no tokenizer needed)."""
    return int(len(ir) / CHARS_PER_TOKEN) + 1


def _split_code_comment(line: str) -> str:
    """The line without its `;` comment, leaving semicolons inside quoted strings alone."""
    in_quote = False
    for i, char in enumerate(line):
        if char == '"':
            in_quote = not in_quote
        elif char == ";" and not in_quote:
            return line[:i]
    return line


def _squeeze_spaces(line: str) -> str:
    """Collapse whitespace runs outside quoted strings; strip both ends."""
    out, in_quote, last_space = [], False, False
    for char in line.strip():
        if char == '"':
            in_quote = not in_quote
        if not in_quote and char in " \t":
            if not last_space:
                out.append(" ")
            last_space = True
            continue
        last_space = False
        out.append(char)
    return "".join(out)


def _split_attributes(body: str) -> list[str]:
    """`a b(1, 2) "k"="v c"` -> ["a", "b(1, 2)", '"k"="v c"'] (quotes and parens respected)."""
    return split_top_level(body, " ", "()", quotes=True)


def normalize_ir(ir: str) -> str:
    """Normalized IR per thesis §4.2.2 (see module docstring). Expects debug info already stripped
    (use `strip_debug_info_text` / the harness for IR that carries it)."""
    lines = ir.splitlines()
    groups: dict[str, str] = {}
    for line in lines:
        match = _ATTR_GROUP.match(line.strip())
        if match:
            keep = [a for a in _split_attributes(match.group(2).strip()) if not a.startswith('"')]
            groups[match.group(1)] = " ".join(keep)

    def inline_attrs(code: str) -> str:
        def repl(m: re.Match) -> str:
            return groups.get(m.group(1), "")

        return _ATTR_REF.sub(repl, code) if groups else code

    body: list[str] = []
    for raw in lines:
        code = _split_code_comment(raw)
        stripped = code.strip()
        if not stripped or stripped.startswith("attributes #") or stripped.startswith("source_filename"):
            continue
        if _DEBUG_RECORD.match(stripped):
            continue
        if stripped.startswith(("define ", "declare ")) or " call " in code or stripped.startswith("call "):
            code = inline_attrs(code)
        body.append(_squeeze_spaces(code))
    return "\n".join(_drop_unused_metadata(body)) + "\n"


def _drop_unused_metadata(lines: list[str]) -> list[str]:
    """Remove module identification metadata and metadata nodes nothing refers to."""
    lines = [ln for ln in lines if not ln.startswith(("!llvm.ident", "!llvm.module.flags"))]
    defs = {m.group(1): i for i, ln in enumerate(lines) if (m := _META_DEF.match(ln))}
    if not defs:
        return lines
    # Reachability from every non-metadata line (and named metadata we keep).
    reached: set[str] = set()
    frontier = [ln for ln in lines if not _META_DEF.match(ln) or not ln.startswith("!") or ln[1:2].isalpha()]
    while frontier:
        line = frontier.pop()
        for ref in _META_REF.findall(line):
            name = f"!{ref}"
            if name not in reached and name in defs:
                reached.add(name)
                frontier.append(lines[defs[name]])
    return [ln for ln in lines if not ((m := _META_DEF.match(ln)) and m.group(1)[1:].isdigit() and m.group(1) not in reached)]


def strip_optnone(ir: str) -> tuple[str, bool]:
    """Remove `optnone` (from -O0 input) so passes can work; returns (ir, whether it was there)."""
    found = re.search(r"\boptnone\b", ir) is not None
    if found:
        ir = re.sub(r"[ ]?\boptnone\b", "", ir)
        warnings.warn("input carries `optnone` (built with -O0): stripped it so that passes apply", stacklevel=2)
    return ir, found


def defined_functions(ir: str) -> list[str]:
    """Names of the functions defined (not declared) in `ir`, in order."""
    names = []
    for match in re.finditer(r'^define [^@]*@("(?:[^"\\]|\\.)*"|[\w.$\-]+)\(', ir, flags=re.M):
        name = match.group(1)
        names.append(name[1:-1] if name.startswith('"') else name)
    return names


def extract_function(ir: str, name: str, version: int | None = None) -> str:
    """A module holding only the definition of `name` (other functions become declarations)."""
    return extract_functions(ir, [name], version)


def extract_functions(ir: str, names: list[str], version: int | None = None) -> str:
    """A module holding only the definitions of `names` (others become declarations).

    Extracting one function from this smaller module gives the same text as from the whole one, which
    makes many extractions from a large module cheap: llvm-extract parses its whole input each time."""
    tool = find_toolchain(version).tool("llvm-extract")
    proc = subprocess.run(
        [tool, *[f"--func={name}" for name in names], "-S", "-o", "-", "-"], input=ir, capture_output=True,
        text=True, timeout=120,
    )
    if proc.returncode != 0:
        raise IRError(f"llvm-extract failed for {', '.join('@' + n for n in names[:3])}"
                      f"{' ...' if len(names) > 3 else ''}: {proc.stderr.strip().splitlines()[-1:]}")
    return proc.stdout


def split_functions(ir: str, version: int | None = None) -> Iterator[tuple[str, str]]:
    """(name, single-function module) for every defined function of `ir`."""
    for name in defined_functions(ir):
        yield name, extract_function(ir, name, version)
