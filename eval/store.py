"""An evaluation's files: append-only JSON lines (resumable) and the records they hold.

`DIR/baseline.jsonl` holds each function's input and -Oz measurements, `DIR/records.jsonl` the first K
candidates of each (method, function) with their measurements, `DIR/objsize.jsonl` object sizes of the
chosen lists.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

from eval import metrics

RECORDS = "records.jsonl"
OBJSIZE = "objsize.jsonl"
BASELINE = "baseline.jsonl"


class JsonlStore:
    """Append-only JSON lines; a torn last line (interrupted run) is ignored on reading."""

    def __init__(self, path: Path):
        self.path = path

    def read(self) -> list[dict]:
        if not self.path.exists():
            return []
        out = []
        for line in self.path.read_text().splitlines():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue
        return out

    def append(self, items: Iterable[dict]) -> None:
        lines = "".join(json.dumps(item, sort_keys=True) + "\n" for item in items)
        if not lines:
            return
        with self.path.open("a") as f:
            f.write(lines)
            f.flush()
            os.fsync(f.fileno())


def candidates_of(record: dict, metric: str = "instcount") -> list[metrics.Candidate]:
    """The measured candidates of a record, valued in `metric` (a list without that value failed)."""
    return [metrics.Candidate(c["passes"], c.get(metric), c.get("error"), c.get("score")) for c in record["samples"]]


def rows_of_earlier_run(path: Path, settings: dict, key: str = "benchmark") -> dict[str, dict]:
    """{row[key]: row} of the results file at `path` when it was written with the same `settings`, else {}:
    a bench rerun with the same settings reuses its finished rows, a changed one starts over."""
    try:
        old = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return {}
    return {r[key]: r for r in old.get("rows", [])} if old.get("config") == settings else {}
