"""Affine programs: the input of the polyhedral loop path (Pearl, issue 15).

A `Program` is an ordered list of statements (Tiramisu's "computations") over named tensors.
Each statement has its own loop iterators, an iteration domain given by affine constraints (bounds
may use outer iterators and size parameters, so triangular nests work), and one assignment in C
whose array subscripts are affine (or quasi-affine: `t % 2`, `floor(i/2)`) in the iterators and
parameters.  Reads and the write are parsed from the assignment, so the text says everything once.

Loop structure (imperfect nests, several statements per nest) is given the classic way: each
statement says how many outer loops it `shares` with the statement before it (0 = a new nest).
`for t { for i {S0}; for i {S1} }` is S0 (shares 0) then S1 (shares 1: the t loop).  Because a
loop tree is contiguous, sharing with the previous statement is enough to describe any tree.

File format (JSON; `load_program(path)`, `Program.to_json()`):

    {"name": "jacobi1d",
     "params": {"T": 100, "N": 4000},                 # size parameters and their values
     "tensors": {"A": {"type": "double", "shape": ["N"]},
                 "B": {"type": "double", "shape": ["N"]}},
     "statements": [
       {"name": "S0", "iterators": ["t", "i"], "domain": "0 <= t < T and 1 <= i < N - 1",
        "body": "B[i] = 0.33333 * (A[i-1] + A[i] + A[i+1])"},
       {"name": "S1", "iterators": ["t", "i"], "domain": "0 <= t < T and 1 <= i < N - 1",
        "body": "A[i] = B[i]", "shares": 1}]}

`body` is `LHS = EXPR` (also `+=`, `-=`, `*=`, `/=`); EXPR is any C expression over tensor
elements, iterators, parameters and numbers (math.h functions allowed).  Domains use isl syntax
(`and`, `or`, chained comparisons, `floor`, `%`).  Types are "float" or "double".
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from llmopt.errors import LlmoptError

DTYPES = ("float", "double")
_ASSIGN = re.compile(r"^\s*(?P<lhs>[A-Za-z_]\w*\s*(?:\[[^\[\]]*\]\s*)+)(?P<op>[-+*/]?=)(?!=)(?P<rhs>.+)$", re.S)
_ACCESS = re.compile(r"\b([A-Za-z_]\w*)\s*((?:\[[^\[\]]*\]\s*)+)")
_NAME = re.compile(r"^[A-Za-z_]\w*$")
_EXTENT = re.compile(r"^[\w\s+\-*/()]+$")


class ProgramError(ValueError, LlmoptError):
    """A program (file or dict) that is malformed: the message says which field and why."""


@dataclass(frozen=True)
class Tensor:
    """A named array: element type and shape (each extent a number or an expression in parameters)."""

    name: str
    dtype: str
    shape: tuple[str, ...]


@dataclass(frozen=True)
class Access:
    """One array reference: tensor name and its subscripts (affine expressions, as written)."""

    tensor: str
    indices: tuple[str, ...]

    def isl(self) -> str:
        """The access's range in isl syntax, e.g. `A[i - 1, j]`."""
        return f"{self.tensor}[{', '.join(self.indices)}]"


def parse_accesses(text: str, tensors: set[str]) -> list[Access]:
    """Every `T[..][..]` of a known tensor in `text`, in order (repeats kept)."""
    out = []
    for name, subs in _ACCESS.findall(text):
        if name in tensors:
            out.append(Access(name, tuple(s.strip() for s in re.findall(r"\[([^\[\]]*)\]", subs))))
    return out


@dataclass(frozen=True)
class Statement:
    """One computation: `iterators` (outermost first), affine `domain`, and `body` (`LHS = EXPR`)."""

    name: str
    iterators: tuple[str, ...]
    domain: str
    body: str
    shares: int = 0  # outer loops shared with the previous statement of the program

    @property
    def lhs(self) -> str:
        return _split_body(self)[0]

    @property
    def expr(self) -> str:
        """The right-hand side as a plain C expression (`+=` and friends expanded)."""
        return _split_body(self)[1]

    def write(self, tensors: set[str]) -> Access:
        return parse_accesses(self.lhs, tensors)[0]

    def reads(self, tensors: set[str]) -> list[Access]:
        return parse_accesses(self.expr, tensors)


def _split_body(stmt: Statement) -> tuple[str, str]:
    match = _ASSIGN.match(stmt.body)
    if not match:
        raise ProgramError(f"statement {stmt.name}: body must be `ARRAY[...] = EXPR`, got {stmt.body!r}")
    lhs, op, rhs = match["lhs"].strip(), match["op"], match["rhs"].strip()
    if op != "=":
        rhs = f"{lhs} {op[0]} ({rhs})"
    return lhs, rhs


@dataclass(frozen=True)
class Program:
    """Named tensors, size parameters with values, statements in textual (execution) order."""

    name: str
    params: dict[str, int]
    tensors: dict[str, Tensor]
    statements: tuple[Statement, ...]
    _hash: list = field(default_factory=list, compare=False, repr=False)

    def statement(self, name: str) -> Statement:
        for s in self.statements:
            if s.name == name:
                return s
        raise ProgramError(f"program {self.name} has no statement {name!r}")

    def outputs(self) -> list[str]:
        """Tensors written by some statement (what a run's result is compared on)."""
        names = {s.write(set(self.tensors)).tensor for s in self.statements}
        return [t for t in self.tensors if t in names]

    def to_dict(self) -> dict:
        return {"name": self.name, "params": dict(self.params),
                "tensors": {t.name: {"type": t.dtype, "shape": list(t.shape)} for t in self.tensors.values()},
                "statements": [{"name": s.name, "iterators": list(s.iterators), "domain": s.domain,
                                "body": s.body, "shares": s.shares} for s in self.statements]}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1)

    def hash(self) -> str:
        """sha256 of the canonical JSON: the program part of every cache key."""
        if not self._hash:
            blob = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
            self._hash.append(hashlib.sha256(blob.encode()).hexdigest())
        return self._hash[0]

    def with_params(self, **values: int) -> Program:
        """The same program at other sizes (e.g. a small size for tests)."""
        return program_from_dict({**self.to_dict(), "params": {**self.params, **values}})


def _need(obj: dict, key: str, where: str):
    if key not in obj:
        raise ProgramError(f"{where}: missing field {key!r}")
    return obj[key]


def _tensor(name: str, spec: dict) -> Tensor:
    dtype = spec.get("type", "double")
    if dtype not in DTYPES:
        raise ProgramError(f"tensor {name}: type must be one of {DTYPES}, got {dtype!r}")
    return Tensor(name, dtype, tuple(str(x) for x in _need(spec, "shape", f"tensor {name}")))


def _statement(spec: dict, index: int) -> Statement:
    where = f"statement {index}"
    stmt = Statement(str(_need(spec, "name", where)), tuple(_need(spec, "iterators", where)),
                     str(_need(spec, "domain", where)), str(_need(spec, "body", where)), int(spec.get("shares", 0)))
    if not _NAME.match(stmt.name) or not all(_NAME.match(i) for i in stmt.iterators):
        raise ProgramError(f"{where}: names must be C identifiers ({stmt.name}, {stmt.iterators})")
    return stmt


def program_from_dict(spec: dict) -> Program:
    """Build and check a program from the JSON structure described in the module docstring."""
    if not isinstance(spec, dict):
        raise ProgramError("a program must be a JSON object")
    tensors = {n: _tensor(n, t) for n, t in _need(spec, "tensors", "program").items()}
    stmts = tuple(_statement(s, i) for i, s in enumerate(_need(spec, "statements", "program")))
    params = {str(k): int(v) for k, v in spec.get("params", {}).items()}
    prog = Program(str(spec.get("name", "program")), params, tensors, stmts)
    validate(prog)
    return prog


def validate(prog: Program) -> None:
    """Names unique, bodies parse, writes go to known tensors with the right rank, `shares` fits."""
    names = [s.name for s in prog.statements]
    if not names or len(set(names)) != len(names):
        raise ProgramError(f"program {prog.name}: statement names must be unique and non-empty")
    clash = (set(prog.tensors) | set(prog.params)) & (set(names) | {i for s in prog.statements for i in s.iterators})
    if clash:
        raise ProgramError(f"program {prog.name}: names used twice: {sorted(clash)}")
    for t in prog.tensors.values():
        for e in t.shape:
            if not _EXTENT.match(e) or set(re.findall(r"[A-Za-z_]\w*", e)) - set(prog.params):
                raise ProgramError(f"tensor {t.name}: extent {e!r} must be arithmetic over numbers and params")
    prev = None
    for s in prog.statements:
        accesses = parse_accesses(s.lhs, set(prog.tensors)) + s.reads(set(prog.tensors))
        if not parse_accesses(s.lhs, set(prog.tensors)):
            raise ProgramError(f"statement {s.name}: writes to an unknown tensor ({s.lhs})")
        for a in accesses:
            if len(a.indices) != len(prog.tensors[a.tensor].shape):
                raise ProgramError(f"statement {s.name}: {a.tensor} has rank {len(prog.tensors[a.tensor].shape)}")
        limit = 0 if prev is None else min(len(prev.iterators), len(s.iterators))
        if not 0 <= s.shares <= limit:
            raise ProgramError(f"statement {s.name}: shares={s.shares}, at most {limit} loops can be shared")
        prev = s


def extent(expr: str, params: dict[str, int]) -> int:
    """A tensor extent's value: a number, a parameter, or arithmetic over them (`validate` lets
    nothing else through, so only those reach eval)."""
    return int(eval(expr, {"__builtins__": {}}, dict(params)))


def load_program(path: str | Path) -> Program:
    """Read a program file (JSON, format in the module docstring); one-line ProgramError if bad."""
    try:
        spec = json.loads(Path(path).read_text())
    except OSError as err:
        raise ProgramError(f"cannot read program file {path}: {err.strerror or err}") from None
    except json.JSONDecodeError as err:
        raise ProgramError(f"program file {path} is not valid JSON: {err}") from None
    return program_from_dict(spec)


def save_program(prog: Program, path: str | Path) -> None:
    Path(path).write_text(prog.to_json() + "\n")
