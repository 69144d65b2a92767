"""Shard files (atomic, so a killed job never leaves half a shard) and the job's rows shaped into dataset rows.

The columns, schema and parquet writing are the dataset contract's (`llmopt.dataset`); what is datagen's
own is here: the work shards and how a search result becomes a row (`good_lists`, `n_best_lists`).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from llmopt.dataset import COLUMNS, OBJSIZE_COLUMNS, arrow_schema, write_splits
from llmopt.outputs import write_atomic


def good_lists(row: dict) -> list[dict]:
    """The row's good lists, best first: every kept list that ties for the best, then the top distinct ones.

    Tuned for bytes, the counts the search kept are bytes: they go to `objsize` (instcount unknown)."""
    sized = row.get("metric") == "objsize"
    seen, out = set(), []
    best = row["objsize_best" if sized else "instcount_best"]
    for passes, n in [(ls, best) for ls in row.get("ties", [])] + [tuple(t) for t in row.get("top", [])]:
        if tuple(passes) not in seen:
            seen.add(tuple(passes))
            out.append({"passes": list(passes), "instcount": None, "objsize": int(n)} if sized
                       else {"passes": list(passes), "instcount": int(n)})
    return out


def item_path(out: Path, index: int) -> Path:
    """Phase 0's file of work item `index` under the job's output folder (layout: `data_pipeline.job`)."""
    return out / "work" / "p0" / f"item-{index:04d}.json.gz"


def shard_path(out: Path, phase: str, index: int) -> Path:
    """Phase 1 or 2's file of shard `index`."""
    return out / "work" / phase / f"shard-{index:05d}.json.gz"


def write_shard(path: Path, payload: dict) -> None:
    write_atomic(path, gzip.compress(json.dumps(payload, separators=(",", ":")).encode(), mtime=0))


def read_shard(path: Path) -> dict:
    return json.loads(gzip.decompress(path.read_bytes()))


def write_dataset(rows_by_split: dict[str, list[dict]], out: Path) -> dict[str, Path]:
    """`out/{split}.parquet` for every split (rows sorted by hash: the same rows give the same file)."""
    sized = any(r.get("metric") == "objsize" for rows in rows_by_split.values() for r in rows)
    shaped = {split: [_columns(r, sized) for r in sorted(rows, key=lambda r: r["ir_hash"])]
              for split, rows in rows_by_split.items()}
    return write_splits(shaped, out, arrow_schema(sized))


def _columns(row: dict, sized: bool = False) -> dict:
    full = {"package": row.get("package") or row["source"], "good_lists": good_lists(row),
            "n_best_lists": row.get("n_ties", 1), **{k: v for k, v in row.items() if k not in ("package",)}}
    return {c: full[c] for c in COLUMNS + (OBJSIZE_COLUMNS if sized else ())}

