"""The dataset contract (llmopt.dataset): splits, dedupe, split assignment, reading every layout, atomic writes."""

from __future__ import annotations

import hashlib
from collections import Counter

import pyarrow as pa
import pytest

from llmopt.dataset import (
    COLUMNS,
    DatasetError,
    Seen,
    arrow_schema,
    is_dataset,
    read_rows,
    split_by_group,
    split_of,
    split_spec,
    unique_rows,
    write_split,
    write_splits,
)
from llmopt.errors import LlmoptError


def _row(i: int) -> dict:
    ir = f"define i32 @f{i}(i32 %x) {{\n%y = add i32 %x, {i}\nret i32 %y\n}}\n"
    return {"source": "csmith", "name": f"f{i}", "ir": ir, "ir_hash": f"h{i:03d}", "passes": ["sroa"],
            "instcount_best": 1}


def test_dedupe_keeps_first_occurrence():
    rows = [{"ir_hash": "a", "i": 0}, {"ir_hash": "b", "i": 1}, {"ir_hash": "a", "i": 2}]
    assert [r["i"] for r in unique_rows(rows)] == [0, 1]
    seen = Seen(["b"])
    assert [r["i"] for r in unique_rows(rows, seen)] == [0]


def test_split_is_stable_and_disjoint():
    hashes = [hashlib.sha256(str(i).encode()).hexdigest() for i in range(5000)]
    first = [split_of(h) for h in hashes]
    assert first == [split_of(h) for h in hashes]  # a pure function of the hash
    shares = {s: first.count(s) / len(first) for s in ("train", "validation", "test")}
    assert 0.06 < shares["test"] < 0.10 and 0.06 < shares["validation"] < 0.10
    # Known values pin the rule: changing it would move functions between train and test.
    assert split_of("0" * 64) == "test"
    assert split_of("f" * 64) == "train"


def test_package_split_keeps_each_package_whole_and_fills_the_shares():
    rows = [{"ir_hash": f"{p}-{i}", "package": f"pkg{p}"} for p in range(40) for i in range(10 + p % 7)]
    split = split_by_group(rows, test_share=0.1, validation_share=0.1, seed=0)
    of_package: dict[str, set[str]] = {}
    for r in rows:
        of_package.setdefault(r["package"], set()).add(split[r["ir_hash"]])
    assert all(len(s) == 1 for s in of_package.values())
    sizes = Counter(split.values())
    assert sizes["test"] >= 0.1 * len(rows) and sizes["validation"] >= 0.1 * len(rows)
    assert sizes["train"] > 0.7 * len(rows)
    assert split == split_by_group(list(reversed(rows)), 0.1, 0.1, seed=0), "order of rows does not matter"
    assert split != split_by_group(rows, 0.1, 0.1, seed=1), "the seed picks the packages"


def test_split_spec():
    assert split_spec("data/x:test") == ("data/x", "test")
    assert split_spec("data/x") == ("data/x", None)
    assert split_spec("data/x:validation") == ("data/x", "validation")


def test_write_splits_then_read_rows_round_trip(tmp_path):
    rows = {"train": [_row(i) for i in range(5)], "test": [_row(9)]}
    paths = write_splits(rows, tmp_path / "ds")
    assert sorted(paths) == ["test", "train", "validation"] and is_dataset(tmp_path / "ds")
    assert sorted(p.name for p in (tmp_path / "ds").iterdir()) == ["test.parquet", "train.parquet",
                                                                   "validation.parquet"]  # no temporary left
    assert read_rows(tmp_path / "ds", "train") == rows["train"]
    assert read_rows(tmp_path / "ds", "validation") == []
    assert read_rows(tmp_path / "ds", "train", columns=["passes"], limit=2) == [{"passes": ["sroa"]}] * 2
    assert read_rows(tmp_path / "nowhere", "train") == []  # an absent split is empty, not an error


def test_write_split_with_the_schema_keeps_the_old_file_on_failure(tmp_path):
    path = tmp_path / "train.parquet"
    write_split(path, [_row(1)])
    with pytest.raises(pa.ArrowException):  # a count that is not a number does not fit the schema
        write_split(path, [dict(_row(2), instcount_best="many")], arrow_schema())
    assert read_rows(tmp_path, "train") == [_row(1)] and [p.name for p in tmp_path.iterdir()] == ["train.parquet"]
    assert tuple(arrow_schema().names) == COLUMNS
    assert arrow_schema(objsize=True).names[-3:] == ["metric", "objsize_oz", "objsize_best"]


def test_mix_reads_each_function_once_in_order(tmp_path):
    write_splits({"train": [_row(i) for i in range(4)]}, tmp_path / "a")
    write_splits({"train": [_row(i) for i in range(2, 7)], "validation": [_row(8)]}, tmp_path / "b")
    mix = f"{tmp_path / 'a'},{tmp_path / 'b'}"
    assert [r["ir_hash"] for r in read_rows(mix, "train")] == [f"h{i:03d}" for i in range(7)]
    assert read_rows(mix, "train", columns=["name"], limit=5) == [{"name": f"f{i}"} for i in range(5)]
    assert read_rows(f"{tmp_path / 'missing'},{tmp_path / 'b'}", "validation") == [_row(8)]


def test_shards_and_save_to_disk_read_like_one_file(tmp_path):
    import datasets

    rows = [_row(i) for i in range(6)]
    write_split(tmp_path / "sharded" / "test-00000.parquet", rows[:4])
    write_split(tmp_path / "sharded" / "test-00001.parquet", rows[4:])
    datasets.DatasetDict({"test": datasets.Dataset.from_list(rows)}).save_to_disk(str(tmp_path / "disk"))
    for where in ("sharded", "disk"):
        assert is_dataset(tmp_path / where)
        assert read_rows(tmp_path / where, "test") == rows
        assert read_rows(tmp_path / where, "test", columns=["ir_hash"], limit=5) == [{"ir_hash": r["ir_hash"]}
                                                                                    for r in rows[:5]]


@pytest.mark.parametrize(("layout", "expected"), [
    ("garbage", "not a readable parquet file"),
    ("empty", "not a readable parquet file"),
    ("no column", "no `passes` column"),
    ("save_to_disk without the split", "no split 'train'"),
    ("damaged save_to_disk", "cannot load the dataset"),
])
def test_unreadable_input_is_a_one_line_dataset_error(layout, expected, tmp_path):
    import datasets

    if layout == "garbage":
        (tmp_path / "train.parquet").write_bytes(b"PAR1" + bytes(range(200)))
    elif layout == "empty":
        (tmp_path / "train.parquet").write_bytes(b"")
    elif layout == "no column":
        write_split(tmp_path / "train.parquet", [{"ir": "x"}])
    else:
        datasets.DatasetDict({"test": datasets.Dataset.from_list([_row(0)])}).save_to_disk(str(tmp_path))
        if layout == "damaged save_to_disk":
            (tmp_path / "dataset_dict.json").write_text("{")
    with pytest.raises(DatasetError) as err:
        read_rows(tmp_path, "train", columns=["passes"] if layout == "no column" else None)
    assert expected in str(err.value) and "\n" not in str(err.value)
    assert isinstance(err.value, ValueError) and isinstance(err.value, LlmoptError)
