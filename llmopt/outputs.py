"""Where results go: checked before any work (a bad `-o` / `--out` must fail in one line at the start,
not after minutes of compiling), and written atomically (a killed run leaves the old file or the whole
new one, never half of one, so resumed jobs can trust every file they find)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from llmopt.errors import UsageError


@contextmanager
def atomic_target(path: str | os.PathLike) -> Iterator[Path]:
    """A temporary file beside `path` for the block to write (any writer: text, parquet, torch.save);
    renamed over `path` when the block ends normally, removed when it raises."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # Hidden and ending in .tmp: globs for `*.parquet` / `*.json.gz` never see a half-written file.
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        os.chmod(tmp, 0o644)  # mkstemp makes files private; results are ordinary files
        os.replace(tmp, path)  # atomic on POSIX
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_atomic(path: str | os.PathLike, data: bytes | str) -> None:
    """Write `data` to `path` atomically and durably (flushed to disk before the rename)."""
    with atomic_target(path) as tmp, open(tmp, "wb") as f:
        f.write(data.encode() if isinstance(data, str) else data)
        f.flush()
        os.fsync(f.fileno())


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
