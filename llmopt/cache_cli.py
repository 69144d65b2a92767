"""`llmopt cache info|clear`: what the result cache holds, and emptying it.

Without `--cache FILE` both caches in the cache folder ($LLMOPT_CACHE_DIR, default
~/.cache/llmopt) are meant: results.sqlite (pass lists) and loops.sqlite (loop kernels).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from llmopt.cli_options import add_json_flag
from llmopt.errors import UsageError


def _files(args: argparse.Namespace) -> list[Path]:
    from llmopt.harness.cache import DEFAULT_CACHE_DIR

    if args.cache:
        path = Path(args.cache)
        if path.is_dir():
            raise UsageError(f"--cache {path}: is a directory, expected the SQLite file")
        if not path.exists():
            raise UsageError(f"--cache {path}: no such file")
        return [path]
    return [DEFAULT_CACHE_DIR / "results.sqlite", DEFAULT_CACHE_DIR / "loops.sqlite"]


def _size(path: Path) -> int:
    return sum(os.path.getsize(f"{path}{s}") for s in ("", "-wal") if os.path.exists(f"{path}{s}"))


def _open(path: Path):
    """The cache at an existing `path` (a corrupt one is moved aside by ResultCache, with a warning)."""
    import sqlite3

    from llmopt.harness.cache import CacheUnusableError, ResultCache

    try:
        return ResultCache(path)
    except (CacheUnusableError, sqlite3.DatabaseError) as err:
        raise UsageError(f"{path}: not a usable llmopt cache: {err}") from None


def cmd_info(args: argparse.Namespace) -> int:
    report: list[dict[str, Any]] = []
    for path in _files(args):
        entry: dict[str, Any] = {"path": str(path), "exists": path.exists(), "bytes": _size(path) if path.exists() else 0}
        if path.exists():
            cache = _open(path)
            entry["kinds"] = cache.kinds()
            entry["entries"] = sum(entry["kinds"].values())
            entry["bytes"] = _size(path)  # a corrupt file was replaced by an empty one
            cache.close()
        report.append(entry)
    if args.json:
        print(json.dumps({"caches": report}))
        return 0
    for entry in report:
        if not entry["exists"]:
            print(f"{entry['path']}: none yet")
            continue
        kinds = ", ".join(f"{k} {v:,}" for k, v in entry["kinds"].items()) or "empty"
        print(f"{entry['path']}: {entry['bytes'] / 1e6:,.1f} MB, {entry['entries']:,} entries ({kinds})")
    return 0


def cmd_clear(args: argparse.Namespace) -> int:
    cleared = []
    for path in _files(args):
        if not path.exists():
            continue
        before = _size(path)
        cache = _open(path)
        n = cache.clear()
        cache.close()
        cleared.append({"path": str(path), "entries": n, "bytes_freed": max(0, before - _size(path))})
    if args.json:
        print(json.dumps({"cleared": cleared}))
    elif not cleared:
        print("nothing to clear")
    for entry in cleared if not args.json else ():
        print(f"{entry['path']}: removed {entry['entries']:,} entries, freed {entry['bytes_freed'] / 1e6:,.1f} MB")
    return 0


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register `cache` with `info` and `clear`."""
    p = subparsers.add_parser("cache", help="the result cache: info (size, entries per kind) or clear",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cache_command", required=True)
    for name, func, text in (("info", cmd_info, "path, size, entries and entries per kind"),
                             ("clear", cmd_clear, "delete every entry (safe while a job uses the cache)")):
        q = sub.add_parser(name, help=text)
        q.add_argument("--cache", metavar="FILE", help="one cache file (default: results.sqlite and loops.sqlite "
                                                       "in $LLMOPT_CACHE_DIR or ~/.cache/llmopt)")
        add_json_flag(q)
        q.set_defaults(func=func)
    return p
