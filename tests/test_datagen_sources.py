"""Sources: bad files are skipped and counted; duplicates across files are dropped."""

from __future__ import annotations

from pathlib import Path

import pytest

from data_pipeline.job import JobConfig, run_job
from data_pipeline.sources import SourceError, parse_source
from data_pipeline.sources.directory import DirectorySource
from data_pipeline.writer import load_dataset_dict, read_shard

pytestmark = pytest.mark.timeout(300)

GOOD = "int add3(int a, int b, int c) { int s = a; s += b; s += c; return s; }\n"
OTHER = "unsigned mix(unsigned x) { for (int i = 0; i < 4; ++i) x = x * 33u ^ (x >> 3); return x; }\n"


def test_dir_source_skips_bad_files_and_dedupes(tmp_path: Path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "good.c").write_text(GOOD)
    (src / "copy.c").write_text(GOOD)  # same function again: one row
    (src / "other.c").write_text(OTHER)
    (src / "bad.c").write_text("int broken( { return; }\n")
    (src / "notes.txt").write_text("not code")
    units = list(DirectorySource(src).units())
    assert [Path(u.path).name for u in units] == ["bad.c", "copy.c", "good.c", "other.c"]
    out = tmp_path / "ds"
    cfg = JobConfig(sources=[f"dir:{src}"], out=str(out), budget=8, greedy_steps=0, broadcast_top=2,
                    shard_units=2, workers=1, cache=str(tmp_path / "c.sqlite"), progress=False)
    run_job(cfg)
    stats = {}
    for shard in sorted((out / "work" / "p1").glob("*.json.gz")):
        for k, v in read_shard(shard)["stats"].items():
            stats[k] = stats.get(k, 0) + v
    assert stats["compile_failed"] == 1
    assert stats["duplicates"] == 1
    rows = [r for split in load_dataset_dict(out).values() for r in split]
    assert sorted(r["name"] for r in rows) == ["add3", "mix"]
    assert all(r["source"] == f"dir:{src.resolve()}" for r in rows)


def test_unknown_and_missing_sources_say_what_to_do(tmp_path: Path):
    with pytest.raises(SourceError, match="unknown source"):
        parse_source("ftp:x", tmp_path)
    with pytest.raises(SourceError, match="not a directory"):
        parse_source(f"dir:{tmp_path / 'missing'}", tmp_path)
    with pytest.raises(SourceError, match="needs a number"):
        parse_source("csmith:many", tmp_path)


def test_gcc_tests_source_is_optional(tmp_path: Path):
    source = parse_source("gcc-tests:3", tmp_path)
    units = list(source.units())  # empty (with a warning) when gcc-12-source is not installed
    assert all(u.license.startswith("GPL") for u in units)
