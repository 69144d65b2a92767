"""What an evaluation runs on: dataset rows (docs/interfaces.md) or a directory of .ll files.

`load_functions("data/x:test", limit=100)` reads a dataset through `llmopt.dataset.read_rows` (parquet
splits, shards, a `save_to_disk` DatasetDict, `PATH,PATH` mixes); `load_functions("some/dir")` reads every
`.ll` below the directory, splits multi-function modules per function and normalizes them (no
labels: only the -Oz baseline and model-free / model methods apply).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llmopt.dataset import is_dataset, read_rows, split_spec
from llmopt.errors import LlmoptError
from llmopt.inputs import check_ir, read_ir_file
from llmopt.llvm.ir import estimate_tokens, ir_hash, normalize_ir


class InputError(ValueError, LlmoptError):
    """The evaluation input cannot be read (message says what to do)."""


@dataclass
class Function:
    """One function to evaluate; label fields are None for unlabelled inputs."""

    fid: str  # ir_hash (unique within an evaluation)
    name: str
    source: str
    ir: str
    n_tokens: int
    instcount_input: int | None = None
    instcount_oz: int | None = None
    passes: list[str] | None = None  # autotuner label
    instcount_best: int | None = None
    evaluations: int | None = None
    optimized_ir: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def labelled(self) -> bool:
        return self.passes is not None


def _from_row(row: dict[str, Any]) -> Function:
    ir = row.get("ir")
    if not isinstance(ir, str) or not ir.strip():
        raise InputError("a dataset row has no `ir` text: is this a datagen dataset (docs/interfaces.md)?")
    passes = row.get("passes")
    return Function(
        fid=row.get("ir_hash") or ir_hash(ir),
        name=str(row.get("name") or ""),
        source=str(row.get("source") or "unknown"),
        ir=ir,
        n_tokens=int(row.get("n_tokens") or estimate_tokens(ir)),
        instcount_input=row.get("instcount_input"),
        instcount_oz=row.get("instcount_oz"),
        passes=list(passes) if passes is not None else None,
        instcount_best=row.get("instcount_best"),
        evaluations=row.get("evaluations"),
        optimized_ir=row.get("optimized_ir"),
    )


def _from_ll_dir(path: Path) -> list[Function]:
    files = sorted(path.rglob("*.ll"))
    if not files:
        raise InputError(f"{path}: no .ll files and no dataset (train/validation/test.parquet) here")
    return [fn for file in files for fn in _from_ll(file, f"dir:{file.relative_to(path)}")]


def _from_ll(file: Path, source: str) -> list[Function]:
    """The functions of one .ll file, one normalized module each; bad files are one-line errors."""
    import warnings

    from llmopt.llvm.ir import defined_functions, split_functions, strip_optnone

    text = read_ir_file(str(file))  # empty, binary, huge: errors that name the file
    check_ir(text, str(file))  # malformed or failing the verifier
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        text, _ = strip_optnone(text)
    names = defined_functions(text)
    modules = [(names[0], text)] if len(names) == 1 else list(split_functions(text))
    out = []
    for name, module in modules:
        ir = normalize_ir(module)
        out.append(Function(fid=ir_hash(ir), name=name, source=source, ir=ir, n_tokens=estimate_tokens(ir)))
    return out


def load_functions(spec: str, limit: int | None = None, seed: int = 0) -> tuple[list[Function], str]:
    """(functions, description) for a `PATH[:split]` spec; `limit` takes a seeded random subset.

    Duplicate inputs (same normalized IR) are evaluated once.
    """
    path_text, split = split_spec(spec)
    path = Path(path_text)
    mix = "," in path_text  # several datasets (read_rows)
    if not mix and not path.exists():
        raise InputError(f"{path}: no such dataset or directory")
    if not mix and path.is_file():
        if path.suffix != ".ll":
            raise InputError(f"{path}: expected a dataset directory, a directory of .ll files, or a .ll file")
        functions = _from_ll(path, f"file:{path.name}")
        what = str(path)
    elif mix or is_dataset(path):
        split = split or "test"
        rows = read_rows(path, split)
        if not rows:
            raise InputError(f"{path}: split {split!r} is empty or missing")
        functions = [_from_row(r) for r in rows]
        what = f"{path}:{split}"
    else:
        functions = _from_ll_dir(path)
        what = str(path)
    unique: dict[str, Function] = {}
    for fn in functions:
        unique.setdefault(fn.fid, fn)
    functions = sorted(unique.values(), key=lambda f: f.fid)
    if limit is not None and limit < len(functions):
        functions = sorted(random.Random(seed).sample(functions, limit), key=lambda f: f.fid)
        what += f" (seeded random {limit} of {len(unique)})"
    return functions, what


def training_rows(spec: str | None, eval_spec: str) -> list[dict[str, Any]]:
    """Training rows for the coreset baselines: `spec`, else the `train` split next to the eval dataset."""
    if spec is None:
        path, _ = split_spec(eval_spec)
        if "," not in path and not is_dataset(path):
            return []
        return read_rows(path, "train")
    path, split = split_spec(spec)
    return read_rows(path, split or "train")
