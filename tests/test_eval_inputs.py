"""What an evaluation reads: PATH[:split] specs, parquet and save_to_disk datasets, seeded limits."""

import datasets
import pytest

from eval.inputs import InputError, load_functions


def _row(i: int) -> dict:
    ir = f"define i32 @f{i}(i32 %x) {{\n%y = add i32 %x, {i}\nret i32 %y\n}}\n"
    return {"source": "csmith" if i % 2 else "pypi:zlib", "name": f"f{i}", "ir": ir, "ir_hash": f"h{i:03d}",
            "n_tokens": 10, "instcount_input": 2, "instcount_oz": 1, "passes": ["default<Oz>"], "instcount_best": 1,
            "optimized_ir": ir, "evaluations": 7}


def test_parquet_and_save_to_disk_read_the_same(tmp_path):
    rows = [_row(i) for i in range(6)]
    pq_dir = tmp_path / "pq"
    pq_dir.mkdir()
    datasets.Dataset.from_list(rows).to_parquet(str(pq_dir / "test.parquet"))
    disk = tmp_path / "disk"
    datasets.DatasetDict({"test": datasets.Dataset.from_list(rows)}).save_to_disk(str(disk))
    a, _ = load_functions(f"{pq_dir}:test")
    b, _ = load_functions(str(disk))  # split defaults to test
    assert [f.fid for f in a] == [f.fid for f in b] == sorted(r["ir_hash"] for r in rows)
    assert a[0].passes == ["default<Oz>"] and a[0].evaluations == 7 and a[0].labelled
    sub1, what = load_functions(f"{pq_dir}:test", limit=3, seed=1)
    sub2, _ = load_functions(f"{pq_dir}:test", limit=3, seed=1)
    assert [f.fid for f in sub1] == [f.fid for f in sub2] and len(sub1) == 3 and "3 of 6" in what
    with pytest.raises(InputError):
        load_functions(f"{pq_dir}:train")


def test_dataset_mix_reads_each_function_once(tmp_path):
    from eval.inputs import training_rows

    for name, ids in (("a", range(0, 4)), ("b", range(2, 7))):
        (tmp_path / name).mkdir()
        for split in ("test", "train"):
            datasets.Dataset.from_list([_row(i) for i in ids]).to_parquet(str(tmp_path / name / f"{split}.parquet"))
    mix = f"{tmp_path / 'a'},{tmp_path / 'b'}"
    functions, what = load_functions(f"{mix}:test")
    assert [f.fid for f in functions] == [f"h{i:03d}" for i in range(7)] and what.endswith(":test")
    assert [r["ir_hash"] for r in training_rows(None, mix)] == [f"h{i:03d}" for i in range(7)]
    with pytest.raises(InputError):
        load_functions(f"{tmp_path / 'a'},{tmp_path / 'missing'}:validation")
