"""Checking where results will go, before any work: a bad `-o` / `--out` must fail in one line at the
start, not after minutes of compiling (or with a traceback at the end)."""

from __future__ import annotations

import os
from pathlib import Path

from llmopt.errors import UsageError


def _existing_ancestor(path: Path) -> Path:
    for parent in [path, *path.parents]:
        if parent.exists():
            return parent
    return Path(".")


def check_output_file(path: str, what: str = "output") -> Path:
    """`path` as a Path, or UsageError unless a file can be written there (its folder must exist)."""
    p = Path(path)
    if p.is_dir():
        raise UsageError(f"{what} {path}: is a directory, expected a file name")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.exists():
        raise UsageError(f"{what} {path}: folder {parent} does not exist (create it first)")
    if not parent.is_dir():
        raise UsageError(f"{what} {path}: {parent} is not a folder")
    if not os.access(parent, os.W_OK) or (p.exists() and not os.access(p, os.W_OK)):
        raise UsageError(f"{what} {path}: permission denied")
    return p


def check_output_dir(path: str, what: str = "--out") -> Path:
    """`path` as a Path, or UsageError unless it is (or can be created as) a writable folder."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise UsageError(f"{what} {path}: is a file, expected a folder (it would be overwritten)")
    base = _existing_ancestor(p)
    if not base.is_dir():
        raise UsageError(f"{what} {path}: {base} is a file, not a folder")
    if not os.access(base, os.W_OK | os.X_OK):
        raise UsageError(f"{what} {path}: permission denied in {base}")
    return p
