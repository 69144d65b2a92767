"""What `llmopt cc` keeps between builds: the answer cache and the per-unit summary store.

Both live in SQLite files under `$LLMOPT_CACHE_DIR/cc/` (default `~/.cache/llmopt/cc/`), which
concurrent compiler processes of a `make -j` share safely (WAL, busy timeout):

* answers.sqlite -- optimized IR per (unoptimized IR, model, settings), and object sizes per
  (IR, codegen flags): a rebuild of unchanged code predicts and measures nothing (a
  `llmopt.harness.cache.ResultCache`);
* summary.sqlite -- one row per unit, keyed by the absolute output path, replaced on every
  rebuild: what `llmopt cc-summary` reports.
"""

from __future__ import annotations

import base64
import json
import os
import sqlite3
import time
import zlib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from llmopt.harness.cache import ResultCache


def cc_dir() -> Path:
    """`$LLMOPT_CACHE_DIR/cc` (read at call time: a build may set it per project)."""
    root = os.environ.get("LLMOPT_CACHE_DIR") or str(Path.home() / ".cache" / "llmopt")
    return Path(root) / "cc"


class AnswerCache:
    """Optimized IR text and small JSON reports under keys from `llmopt.harness.cache.make_key`."""

    def __init__(self, path: Path | None = None):
        self.cache = ResultCache(path or cc_dir() / "answers.sqlite")

    def get_ir(self, key: str) -> tuple[str, dict[str, Any]] | None:
        value = self.cache.get(key)
        if value is None:
            return None
        return zlib.decompress(base64.b64decode(value["ir_z"])).decode(), value["report"]

    def put_ir(self, key: str, ir: str, report: dict[str, Any]) -> None:
        packed = base64.b64encode(zlib.compress(ir.encode(), 6)).decode()
        self.cache.put(key, {"ir_z": packed, "report": report})

    def get(self, key: str) -> Any | None:
        return self.cache.get(key)

    def put(self, key: str, value: Any) -> None:
        self.cache.put(key, value)


@dataclass
class UnitRecord:
    """One translation unit as last built.  `status`: optimized, fallback, skipped or error."""

    output: str                          # absolute path of what the call produced (the key)
    source: str                          # absolute path of the C/C++ source
    status: str
    reason: str = ""
    cache_hit: bool = False
    functions: int = 0
    instcount_input: int | None = None
    instcount_oz: int | None = None
    instcount_result: int | None = None
    objsize_oz: int | None = None        # .text + .data bytes of what `clang -Oz` makes of the unit
    objsize_result: int | None = None    # the same for what llmopt made
    seconds: float = 0.0
    built_at: float = field(default_factory=time.time)
    detail: dict[str, Any] = field(default_factory=dict)   # per-function counts and passes


_COLUMNS = [f for f in UnitRecord.__dataclass_fields__]


class SummaryStore:
    """Rows of `UnitRecord`, one per output path; safe for many writers at once."""

    def __init__(self, path: Path | None = None):
        self.path = path or cc_dir() / "summary.sqlite"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(self.path, timeout=60, isolation_level=None)
        # Processes that create the file at once can meet SQLITE_BUSY outside the busy handler while
        # switching to WAL (as in ResultCache): retry briefly.
        for attempt in range(50):
            try:
                self._conn.execute("PRAGMA journal_mode=WAL")
                self._conn.execute(f"CREATE TABLE IF NOT EXISTS units ({', '.join(_COLUMNS)}, PRIMARY KEY (output))")
                break
            except sqlite3.OperationalError as err:
                if "locked" not in str(err) or attempt == 49:
                    raise
                time.sleep(0.05 * (attempt + 1))

    def record(self, unit: UnitRecord) -> None:
        row = asdict(unit)
        row["detail"] = json.dumps(row["detail"], separators=(",", ":"))
        marks = ", ".join("?" * len(_COLUMNS))
        self._conn.execute(f"INSERT OR REPLACE INTO units ({', '.join(_COLUMNS)}) VALUES ({marks})",
                           [row[c] for c in _COLUMNS])

    def _where(self, prefix: str | None) -> tuple[str, list[str]]:
        """Units whose output or source lies under the directory `prefix` (all when None)."""
        if prefix is None:
            return "", []
        root = prefix.rstrip("/") + "/"
        return " WHERE substr(output, 1, ?) = ? OR substr(source, 1, ?) = ?", [len(root), root] * 2

    def units(self, prefix: str | None = None) -> list[UnitRecord]:
        where, params = self._where(prefix)
        rows = self._conn.execute(f"SELECT {', '.join(_COLUMNS)} FROM units{where} ORDER BY output", params)
        out = []
        for row in rows:
            values = dict(zip(_COLUMNS, row, strict=True))
            values["detail"] = json.loads(values["detail"] or "{}")
            values["cache_hit"] = bool(values["cache_hit"])
            out.append(UnitRecord(**values))
        return out

    def clear(self, prefix: str | None = None) -> int:
        where, params = self._where(prefix)
        return self._conn.execute(f"DELETE FROM units{where}", params).rowcount

    def close(self) -> None:
        self._conn.close()
