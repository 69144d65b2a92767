"""Persistent memoization of measurements: a key and a measurement, nothing more.

Every path (pass lists, loop schedules) stores what it measured here so that the
same question is never compiled twice.  SQLite in WAL mode lets several processes
(the datagen workers, an eval run, a training callback) read and write at once.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

DEFAULT_CACHE_DIR = Path(os.environ.get("LLMOPT_CACHE_DIR", Path.home() / ".cache" / "llmopt"))


def make_key(*parts: Any) -> str:
    """A stable key from any JSON-serialisable parts (version, IR hash, pipeline, metric...)."""
    blob = json.dumps(parts, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


class ResultCache:
    """`get(key) -> value | None`, `put(key, value)`; values are JSON-serialisable."""

    def __init__(self, path: str | os.PathLike | None = None):
        self.path = Path(path) if path is not None else DEFAULT_CACHE_DIR / "results.sqlite"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self.hits = 0
        self.misses = 0
        # Switching a new database to WAL and creating the table can meet SQLITE_BUSY without the busy
        # handler when several processes open the same new file at once: retry briefly.
        for attempt in range(50):
            try:
                self._conn().execute(
                    "CREATE TABLE IF NOT EXISTS results (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
                break
            except sqlite3.OperationalError as err:
                if "locked" not in str(err) or attempt == 49:
                    raise
                self._local.conn.close()
                self._local.conn = None
                time.sleep(0.05 * (attempt + 1))

    def _conn(self) -> sqlite3.Connection:
        # One connection per thread and per process: sqlite connections must not cross forks.
        conn = getattr(self._local, "conn", None)
        if conn is None or getattr(self._local, "pid", None) != os.getpid():
            conn = sqlite3.connect(self.path, timeout=60, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            self._local.conn, self._local.pid = conn, os.getpid()
        return conn

    def get(self, key: str) -> Any | None:
        row = self._conn().execute("SELECT value FROM results WHERE key = ?", (key,)).fetchone()
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        return json.loads(row[0])

    def get_many(self, keys: list[str]) -> dict[str, Any]:
        found: dict[str, Any] = {}
        conn = self._conn()
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for k, v in conn.execute(f"SELECT key, value FROM results WHERE key IN ({marks})", chunk):
                found[k] = json.loads(v)
        self.hits += len(found)
        self.misses += len(set(keys)) - len(found)
        return found

    def put(self, key: str, value: Any) -> None:
        self.put_many({key: value})

    def put_many(self, items: dict[str, Any]) -> None:
        if not items:
            return
        rows = [(k, json.dumps(v, separators=(",", ":"))) for k, v in items.items()]
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.executemany("INSERT OR REPLACE INTO results (key, value) VALUES (?, ?)", rows)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def __len__(self) -> int:
        return self._conn().execute("SELECT COUNT(*) FROM results").fetchone()[0]
