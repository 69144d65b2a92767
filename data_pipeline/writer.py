"""Shard files (atomic, so a killed job never leaves half a shard) and the final parquet DatasetDict."""

from __future__ import annotations

import gzip
import json
import os
import tempfile
from pathlib import Path

from data_pipeline.split import SPLITS

# Columns of docs/interfaces.md, in that order.
COLUMNS = ("source", "package", "license", "llvm_version", "name", "ir", "ir_hash", "n_tokens", "instcount_input",
           "instcount_oz", "passes", "instcount_best", "good_lists", "n_best_lists", "optimized_ir", "evaluations",
           "search_method")
# Added when labels were tuned for object size (`--metric objsize`): good_lists then hold bytes too.
OBJSIZE_COLUMNS = ("metric", "objsize_oz", "objsize_best")


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


def write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes files private; shards and cards are ordinary files
        os.replace(tmp, path)  # atomic on POSIX: the shard is either absent or complete
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_shard(path: Path, payload: dict) -> None:
    write_atomic(path, gzip.compress(json.dumps(payload, separators=(",", ":")).encode(), mtime=0))


def read_shard(path: Path) -> dict:
    return json.loads(gzip.decompress(path.read_bytes()))


def write_dataset(rows_by_split: dict[str, list[dict]], out: Path) -> dict[str, Path]:
    """`out/{split}.parquet` for every split (rows sorted by hash: the same rows give the same file)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    sized = any(r.get("metric") == "objsize" for rows in rows_by_split.values() for r in rows)
    good = [("passes", pa.list_(pa.string())), ("instcount", pa.int64())] + ([("objsize", pa.int64())] if sized else [])
    schema = pa.schema([
        ("source", pa.string()), ("package", pa.string()), ("license", pa.string()), ("llvm_version", pa.int64()), ("name", pa.string()),
        ("ir", pa.string()), ("ir_hash", pa.string()), ("n_tokens", pa.int64()),
        ("instcount_input", pa.int64()), ("instcount_oz", pa.int64()), ("passes", pa.list_(pa.string())),
        ("instcount_best", pa.int64()),
        ("good_lists", pa.list_(pa.struct(good))),
        ("n_best_lists", pa.int64()), ("optimized_ir", pa.string()), ("evaluations", pa.int64()),
        ("search_method", pa.string()),
    ] + ([("metric", pa.string()), ("objsize_oz", pa.int64()), ("objsize_best", pa.int64())] if sized else []))
    out.mkdir(parents=True, exist_ok=True)
    paths = {}
    for split in SPLITS:
        rows = sorted(rows_by_split.get(split, []), key=lambda r: r["ir_hash"])
        table = pa.Table.from_pylist([_columns(r, sized) for r in rows], schema=schema)
        path = out / f"{split}.parquet"
        tmp = path.with_suffix(".parquet.tmp")
        pq.write_table(table, tmp, compression="zstd")
        os.replace(tmp, path)
        paths[split] = path
    return paths


def _columns(row: dict, sized: bool = False) -> dict:
    full = {"package": row.get("package") or row["source"], "good_lists": good_lists(row),
            "n_best_lists": row.get("n_ties", 1), **{k: v for k, v in row.items() if k not in ("package",)}}
    return {c: full[c] for c in COLUMNS + (OBJSIZE_COLUMNS if sized else ())}


def load_dataset_dict(out: Path):
    """The DatasetDict at `out` (what training and eval call)."""
    import pyarrow.parquet as pq
    from datasets import Dataset, DatasetDict, load_dataset

    files = {s: str(out / f"{s}.parquet") for s in SPLITS if (out / f"{s}.parquet").exists()}
    # `datasets` cannot read a parquet file with no rows: build those (tiny-test) splits in memory.
    empty = {s for s, f in files.items() if pq.ParquetFile(f).metadata.num_rows == 0}
    full = {s: f for s, f in files.items() if s not in empty}
    ds = load_dataset("parquet", data_files=full) if full else DatasetDict()
    for s in empty:
        ds[s] = Dataset(pq.read_table(files[s]))
    return ds
