"""The dataset contract (docs/interfaces.md): columns, splits, dedupe, reading and writing.

Every reader and writer of llmopt datasets goes through this module: datagen (`data_pipeline`) writes
with `write_splits`, the sample and feedback datasets with `write_split`; training, eval, predict's
coreset and `llmopt feedback-data` read with `read_rows`.  A dataset is a directory of
`{split}.parquet` files (or `{split}-*.parquet` / `{split}/*.parquet` shards, or a `save_to_disk`
DatasetDict); `PATH,PATH` mixes several, each function (normalized-IR hash) kept once.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from pathlib import Path
from typing import Any

from llmopt.errors import LlmoptError, one_line

SPLITS = ("train", "validation", "test")
# Columns of docs/interfaces.md, in that order.
COLUMNS = ("source", "package", "license", "llvm_version", "name", "ir", "ir_hash", "n_tokens", "instcount_input",
           "instcount_oz", "passes", "instcount_best", "good_lists", "n_best_lists", "optimized_ir", "evaluations",
           "search_method")
# Added when labels were tuned for object size (`--metric objsize`): good_lists then hold bytes too.
OBJSIZE_COLUMNS = ("metric", "objsize_oz", "objsize_best")
# Per-mille shares of `split_of`: 8% test and 8% validation (so ~6,300 functions give 500 + 500 + 5,300).
TEST_PERMILLE = 80
VALIDATION_PERMILLE = 80


class DatasetError(ValueError, LlmoptError):
    """A dataset that cannot be read (not parquet, a damaged folder, a missing column): one line says which."""


def arrow_schema(objsize: bool = False):
    """The pyarrow schema of COLUMNS (+ OBJSIZE_COLUMNS, and `objsize` in each good list, when `objsize`)."""
    import pyarrow as pa

    good = [("passes", pa.list_(pa.string())), ("instcount", pa.int64())] + ([("objsize", pa.int64())] if objsize else [])
    return pa.schema([
        ("source", pa.string()), ("package", pa.string()), ("license", pa.string()), ("llvm_version", pa.int64()),
        ("name", pa.string()), ("ir", pa.string()), ("ir_hash", pa.string()), ("n_tokens", pa.int64()),
        ("instcount_input", pa.int64()), ("instcount_oz", pa.int64()), ("passes", pa.list_(pa.string())),
        ("instcount_best", pa.int64()), ("good_lists", pa.list_(pa.struct(good))), ("n_best_lists", pa.int64()),
        ("optimized_ir", pa.string()), ("evaluations", pa.int64()), ("search_method", pa.string()),
    ] + ([("metric", pa.string()), ("objsize_oz", pa.int64()), ("objsize_best", pa.int64())] if objsize else []))


# --- dedupe and split assignment --------------------------------------------------------------------

class Seen:
    """Hashes already in the dataset; `add` is False for a duplicate."""

    def __init__(self, hashes: Iterable[str] = ()):
        self._hashes = set(hashes)

    def add(self, ir_hash: str) -> bool:
        if ir_hash in self._hashes:
            return False
        self._hashes.add(ir_hash)
        return True

    def update(self, hashes: Iterable[str]) -> None:
        self._hashes.update(hashes)

    def __contains__(self, ir_hash: str) -> bool:
        return ir_hash in self._hashes

    def __len__(self) -> int:
        return len(self._hashes)


def unique_rows(rows: Iterable[dict], seen: Seen | None = None) -> Iterator[dict]:
    """Rows whose `ir_hash` was not seen before, in order (first occurrence wins)."""
    seen = seen if seen is not None else Seen()
    for row in rows:
        if seen.add(row["ir_hash"]):
            yield row


def split_of(ir_hash: str) -> str:
    """The v1 rule: the split depends only on the normalized-IR hash."""
    bucket = int(ir_hash[:12], 16) % 1000
    if bucket < TEST_PERMILLE:
        return "test"
    if bucket < TEST_PERMILLE + VALIDATION_PERMILLE:
        return "validation"
    return "train"


def split_by_group(rows: list[dict], test_share: float = 0.06, validation_share: float = 0.06,
                   seed: int = 0, key: str = "package") -> dict[str, str]:
    """{ir_hash: split} with whole groups (packages; a generated program is its own) in one split.

    Groups are visited in a seeded hash order and fill test, then validation, until each holds its
    share of all functions; the rest is train.  So test and validation functions come from projects
    the model never saw in training (near-identical functions of one project would otherwise leak),
    and the assignment depends only on the rows' groups and sizes.
    """
    sizes = Counter(r[key] for r in rows)
    order = sorted(sizes, key=lambda g: hashlib.sha256(f"{seed}:{g}".encode()).hexdigest())
    total = sum(sizes.values())
    targets = (("test", test_share * total), ("validation", validation_share * total))
    group_split, filled, stage = {}, Counter(), 0
    for group in order:
        while stage < len(targets) and filled[targets[stage][0]] >= targets[stage][1]:
            stage += 1
        split = targets[stage][0] if stage < len(targets) else "train"
        group_split[group] = split
        filled[split] += sizes[group]
    return {r["ir_hash"]: group_split[r[key]] for r in rows}


# --- reading ----------------------------------------------------------------------------------------

def split_spec(spec: str) -> tuple[str, str | None]:
    """`PATH[:split]` -> (path, split or None); a `:` that belongs to the path is kept."""
    if ":" in spec:
        path, split = spec.rsplit(":", 1)
        if split in SPLITS or (split and "/" not in split and not Path(spec).exists()):
            return path, split
    return spec, None


def is_dataset(path: str | Path) -> bool:
    """Whether `path` holds a dataset (parquet splits or shards, or a save_to_disk DatasetDict)."""
    path = Path(path)
    return any((path / f"{s}.parquet").exists() for s in SPLITS) or (path / "dataset_dict.json").exists() or any(
        path.glob("*-*.parquet"))


def split_files(path: str | Path, split: str) -> list[Path]:
    """The parquet files of one split: `{split}.parquet`, else its shards in name order ([] if none)."""
    path = Path(path)
    single = path / f"{split}.parquet"
    if single.exists():
        return [single]
    return sorted(path.glob(f"{split}-*.parquet")) + sorted((path / split).glob("*.parquet"))


def check_columns(path: str | Path, columns: Sequence[str] = ()) -> list[str]:
    """The column names of one parquet file (its footer only); DatasetError if it is not readable
    parquet or lacks one of `columns`."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        names = pq.read_schema(path).names
    except (pa.ArrowException, OSError, ValueError) as err:  # not parquet, truncated, empty
        raise DatasetError(f"{path}: not a readable parquet file ({one_line(err)})") from None
    missing = [c for c in columns if c not in names]
    if missing:
        raise DatasetError(f"{path}: no {', '.join(f'`{c}`' for c in missing)} column, not an llmopt dataset split "
                           f"(columns: {', '.join(names[:8])})")
    return names


def read_rows(path: str | Path, split: str, columns: Sequence[str] | None = None,
              limit: int | None = None) -> list[dict[str, Any]]:
    """Rows of one split of a dataset (all columns, or `columns`); [] when the split is absent.

    `path` may name several datasets separated by commas (a training mix): their rows in that order,
    each function (`ir_hash`) once.  Datagen assigns splits per function, so a mix cannot leak test
    functions into train.  `limit` keeps the first rows only.  Unreadable input is a DatasetError.
    """
    if "," not in str(path):
        return _read_dir(Path(path), split, columns, limit)
    wanted = None if columns is None else [*columns, *([] if "ir_hash" in columns else ["ir_hash"])]
    parts = [part for part in str(path).split(",") if part]
    rows = unique_rows(r for part in parts for r in _read_dir(Path(part), split, wanted, None))
    if wanted != columns:  # ir_hash was read only to dedupe
        rows = ({c: r[c] for c in columns} for r in rows)
    return list(islice(rows, limit))


def _read_dir(path: Path, split: str, columns: Sequence[str] | None, limit: int | None) -> list[dict[str, Any]]:
    files = split_files(path, split)
    if files:
        rows: list[dict[str, Any]] = []
        for file in files:
            if limit is not None and len(rows) >= limit:
                break
            rows += _read_parquet(file, columns, None if limit is None else limit - len(rows))
        return rows
    if (path / "dataset_dict.json").exists() or (path / split / "dataset_info.json").exists():
        return _read_saved(path, split, columns, limit)
    return []


def _read_parquet(path: Path, columns: Sequence[str] | None, limit: int | None) -> list[dict[str, Any]]:
    import pyarrow.parquet as pq

    if columns is not None:
        check_columns(path, columns)
    try:
        table = pq.read_table(path, columns=None if columns is None else list(columns))
    except (OSError, ValueError) as err:  # ArrowInvalid is a ValueError: not parquet, truncated
        raise DatasetError(f"{path}: not a readable parquet file ({one_line(err)})") from None
    return (table if limit is None else table.slice(0, limit)).to_pylist()


def _read_saved(path: Path, split: str, columns: Sequence[str] | None, limit: int | None) -> list[dict[str, Any]]:
    """One split of a `save_to_disk` DatasetDict."""
    import datasets

    try:
        dd = datasets.load_from_disk(str(path))
    except Exception as err:  # datasets raises many kinds for a damaged folder
        raise DatasetError(f"{path}: cannot load the dataset: {one_line(err)}") from None
    if split not in dd:
        raise DatasetError(f"{path}: no split {split!r} (has {', '.join(dd)})")
    ds = dd[split]
    if columns is not None:
        missing = [c for c in columns if c not in ds.column_names]
        if missing:
            raise DatasetError(f"{path}: split {split!r} has no {', '.join(f'`{c}`' for c in missing)} column")
        ds = ds.select_columns(list(columns))
    if limit is not None:
        ds = ds.select(range(min(limit, len(ds))))
    return ds.to_list()


def load_dataset_dict(out: Path):
    """The `datasets.DatasetDict` of the parquet splits at `out`."""
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


# --- writing ----------------------------------------------------------------------------------------

def write_split(path: str | Path, rows: list[dict[str, Any]], schema: Any = None) -> Path:
    """`rows` as one parquet file (zstd), atomically: a killed writer leaves the old file or none.

    `schema` (e.g. `arrow_schema()`) fixes the columns and types; None infers them from the rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from llmopt.outputs import atomic_target

    path = Path(path)
    table = pa.Table.from_pylist(rows, schema=schema)
    with atomic_target(path) as tmp:  # not *.parquet: readers never see it
        pq.write_table(table, tmp, compression="zstd")
    return path


def write_splits(rows_by_split: dict[str, list[dict[str, Any]]], out: str | Path, schema: Any = None
                 ) -> dict[str, Path]:
    """`out/{split}.parquet` for every split of SPLITS (an absent one is written empty)."""
    return {split: write_split(Path(out) / f"{split}.parquet", rows_by_split.get(split, []), schema)
            for split in SPLITS}
