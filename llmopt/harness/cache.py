"""Persistent memoization of measurements: a key and a measurement, nothing more.

Every path (pass lists, loop schedules) stores what it measured here so that the
same question is never compiled twice.  SQLite in WAL mode lets several processes
(the datagen workers, an eval run, a training callback) read and write at once.

A cache is only an accelerator, so it never stops a run: a corrupt file (truncated, overwritten)
is moved aside to `results.sqlite.corrupt-<time>` with a one-line warning and a fresh one is used;
a path that cannot hold a database (a directory, no permission) means running uncached
(`open_cache`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from llmopt.errors import LlmoptError

DEFAULT_CACHE_DIR = Path(os.environ.get("LLMOPT_CACHE_DIR", Path.home() / ".cache" / "llmopt"))
_SIDE_FILES = ("-wal", "-shm")  # SQLite's companions of a WAL database
log = logging.getLogger("llmopt.cache")


def make_key(*parts: Any) -> str:
    """A stable key from any JSON-serialisable parts (version, IR hash, pipeline, metric...)."""
    blob = json.dumps(parts, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


def default_cache_path() -> Path:
    return DEFAULT_CACHE_DIR / "results.sqlite"


class CacheUnusableError(sqlite3.OperationalError, LlmoptError):
    """The cache path cannot hold a database (a directory, no permission, a file that is not SQLite).
    An OperationalError as sqlite3's own "unable to open database file" is, for callers that catch that."""


def is_corruption(err: BaseException) -> bool:
    """SQLITE_CORRUPT / SQLITE_NOTADB, not a busy or locked database (those are OperationalError)."""
    return isinstance(err, sqlite3.DatabaseError) and not isinstance(err, sqlite3.OperationalError)


def warn(message: str) -> None:
    log.warning("llmopt: warning: %s", message)


class ResultCache:
    """`get(key) -> value | None`, `put(key, value)`; values are JSON-serialisable."""

    def __init__(self, path: str | os.PathLike | None = None):
        self.path = Path(path) if path is not None else default_cache_path()
        if self.path.is_dir():
            raise CacheUnusableError(f"result cache {self.path} is a directory")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise CacheUnusableError(f"cannot create the result cache folder {self.path.parent}: "
                                     f"{err.strerror or err}") from None
        self._local = threading.local()
        self._generation = 0  # bumped when a corrupt file is replaced: threads reconnect
        self._inode: int | None = None
        self.hits = 0
        self.misses = 0
        try:
            self._create_table()
        except sqlite3.DatabaseError as err:
            if not is_corruption(err):
                raise CacheUnusableError(f"cannot use the result cache {self.path}: {err}") from None
            if not self._looks_like_a_cache():  # `--cache README.md`: not ours to move
                raise CacheUnusableError(f"{self.path} is not an SQLite cache ({err})") from None
            self._replace_corrupt(err)
            self._create_table()

    def _looks_like_a_cache(self) -> bool:
        """A damaged cache (SQLite header, or a cache file name) may be moved aside; another file may not."""
        try:
            with open(self.path, "rb") as f:
                header = f.read(16)
        except OSError:
            return False
        return header.startswith(b"SQLite format 3") or self.path.suffix in (".sqlite", ".sqlite3", ".db")

    def _create_table(self) -> None:
        # Switching a new database to WAL and creating the table can meet SQLITE_BUSY without the busy
        # handler when several processes open the same new file at once: retry briefly.
        for attempt in range(50):
            try:
                conn = self._conn()
                conn.execute("CREATE TABLE IF NOT EXISTS results (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
                conn.execute("SELECT key FROM results LIMIT 1").fetchall()  # reads a table page: catches garbage
                return
            except sqlite3.OperationalError as err:
                if "locked" not in str(err) or attempt == 49:
                    raise
                self._drop_connection()
                time.sleep(0.05 * (attempt + 1))

    def _drop_connection(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
        self._local.conn = None

    def _conn(self) -> sqlite3.Connection:
        # One connection per thread and per process: sqlite connections must not cross forks.
        conn = getattr(self._local, "conn", None)
        if (conn is None or getattr(self._local, "pid", None) != os.getpid()
                or getattr(self._local, "generation", None) != self._generation):
            conn = sqlite3.connect(self.path, timeout=60, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            self._local.conn, self._local.pid, self._local.generation = conn, os.getpid(), self._generation
            if self._inode is None:
                self._inode = os.stat(self.path).st_ino
        return conn

    def _replace_corrupt(self, err: BaseException) -> None:
        """Move the corrupt file (and its WAL) aside and start a fresh one, warning once."""
        self._drop_connection()
        try:
            same_file = self._inode is None or os.stat(self.path).st_ino == self._inode
        except FileNotFoundError:
            same_file = False
        if same_file:  # another process may already have replaced it: then just reconnect
            aside = self.path.with_name(f"{self.path.name}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}")
            for suffix in ("", *_SIDE_FILES):
                try:
                    os.replace(f"{self.path}{suffix}", f"{aside}{suffix}")
                except FileNotFoundError:
                    pass
            warn(f"result cache {self.path} is corrupt ({err}); moved it to {aside.name}, using a fresh cache")
        self._inode = None
        self._generation += 1

    def _guarded(self, run):
        """`run()`, and once more on a fresh file if the cache turns out corrupt mid-run."""
        try:
            return run()
        except sqlite3.DatabaseError as err:
            if not is_corruption(err):
                raise
            self._replace_corrupt(err)
            self._create_table()
            return run()

    def get(self, key: str) -> Any | None:
        return self.get_many([key]).get(key)

    def get_many(self, keys: list[str]) -> dict[str, Any]:
        def run() -> dict[str, Any]:
            found: dict[str, Any] = {}
            conn = self._conn()
            for start in range(0, len(keys), 500):
                chunk = keys[start : start + 500]
                marks = ",".join("?" * len(chunk))
                for k, v in conn.execute(f"SELECT key, value FROM results WHERE key IN ({marks})", chunk):
                    found[k] = json.loads(v)
            return found

        found = self._guarded(run)
        self.hits += len(found)
        self.misses += len(set(keys)) - len(found)
        return found

    def put(self, key: str, value: Any) -> None:
        self.put_many({key: value})

    def put_many(self, items: dict[str, Any]) -> None:
        if not items:
            return
        rows = [(k, json.dumps(v, separators=(",", ":"))) for k, v in items.items()]

        def run() -> None:
            conn = self._conn()
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.executemany("INSERT OR REPLACE INTO results (key, value) VALUES (?, ?)", rows)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

        self._guarded(run)

    def __bool__(self) -> bool:
        # An open cache is a cache even when empty: without this, `__len__` makes a new or cleared one
        # falsy and `open_cache(path) or scratch_cache()` silently swaps it for a private one that is thrown
        # away, so the file never fills (the poly timing cache stayed empty that way for days).
        return True

    def __len__(self) -> int:
        return self._guarded(lambda: self._conn().execute("SELECT COUNT(*) FROM results").fetchone()[0])

    def kinds(self) -> dict[str, int]:
        """Entries per kind of measurement, told apart by the shape of the stored value (keys are hashes)."""
        query = """SELECT CASE
                     WHEN value LIKE '{"error"%' THEN 'failed'
                     WHEN value LIKE '{"instcount"%' THEN 'pass list' ||
                          CASE WHEN instr(value, '"ir":') THEN ' + IR' ELSE '' END ||
                          CASE WHEN instr(value, '"objsize":') THEN ' + objsize' ELSE '' END
                     WHEN instr(value, '"gflops"') OR instr(value, '"ok"') THEN 'loop kernel'
                     ELSE 'other' END AS kind, COUNT(*) FROM results GROUP BY kind ORDER BY kind"""
        return dict(self._guarded(lambda: self._conn().execute(query).fetchall()))

    def clear(self) -> int:
        """Delete every entry (safe while other processes use the file); returns how many there were."""
        def run() -> int:
            conn = self._conn()
            n = conn.execute("DELETE FROM results").rowcount
            conn.execute("VACUUM")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            return n

        return self._guarded(run)

    def close(self) -> None:
        self._drop_connection()


def scratch_cache() -> ResultCache:
    """A private cache that lives as long as the process (for callers that need one but must not
    read or write the user's: --no-cache, or an unusable --cache)."""
    import atexit
    import shutil
    import tempfile

    folder = tempfile.mkdtemp(prefix="llmopt-scratch-cache-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return ResultCache(Path(folder) / "results.sqlite")


def open_cache(path: str | os.PathLike | None = None) -> ResultCache | None:
    """The cache at `path` (default `default_cache_path()`), or None with a warning when it cannot be
    used: the run goes on uncached rather than failing on an accelerator."""
    try:
        return ResultCache(path)
    except CacheUnusableError as err:
        warn(f"{err}; running without the result cache")
    except sqlite3.DatabaseError as err:
        warn(f"cannot use the result cache {path or default_cache_path()}: {err}; running without it")
    return None
