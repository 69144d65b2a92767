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


# SPDX ids of the permissive licenses the pypi source may use (an entry may combine them with AND/OR,
# and may offer a non-permissive alternative only after OR).
PERMISSIVE = {"MIT", "BSD-2-Clause", "BSD-3-Clause", "Apache-2.0", "Zlib", "PSF-2.0", "CNRI-Python", "Unlicense",
              "CC0-1.0"}


def test_pypi_packages_are_pinned_and_permissive(tmp_path: Path):
    import re

    from data_pipeline.sources.pypi import DEFAULT_PACKAGES, PACKAGES, PypiSource

    for key, pkg in PACKAGES.items():
        assert key == pkg.name
        assert re.fullmatch(r"\d+(\.\d+)*", pkg.version), pkg
        for alternatives in re.sub(r"[()]", "", pkg.license).split(" AND "):
            assert any(lic in PERMISSIVE for lic in alternatives.split(" OR ")), pkg
    assert DEFAULT_PACKAGES == ("pycryptodome", "brotli", "lz4")  # the committed dataset's `pypi:default`
    source = parse_source("pypi:all", tmp_path)  # no download until units() runs
    assert [p.name for p in source.packages] == list(PACKAGES) and len(PACKAGES) >= 9
    assert [p.name for p in parse_source("pypi:default", tmp_path).packages] == list(DEFAULT_PACKAGES)
    assert [p.name for p in PypiSource.from_spec("zstandard,lupa", tmp_path).packages] == ["zstandard", "lupa"]
    with pytest.raises(SourceError, match="not in the checked list"):
        parse_source("pypi:numpy", tmp_path)


def test_pypi_source_reads_a_downloaded_sdist_offline(tmp_path: Path, monkeypatch):
    """An sdist already in the download folder is used as is (no pip), even when its top folder is not
    NAME-VERSION; `paths` and `exclude` choose the files."""
    import tarfile

    from data_pipeline.sources import pypi

    top = tmp_path / "build" / "dotted.pkg-1.0"
    for rel in ("lib/a.c", "lib/test_a.c", "ext/b.c", "other.c"):
        (top / rel).parent.mkdir(parents=True, exist_ok=True)
        (top / rel).write_text(GOOD)
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    with tarfile.open(downloads / "dotted_pkg-1.0.tar.gz", "w:gz") as tar:
        tar.add(top, arcname=top.name)
    pkg = pypi.Package("dotted.pkg", "1.0", "MIT", ("lib",), ("X=1",), ("test_",), paths=("lib", "ext/b.c"))
    monkeypatch.setitem(pypi.PACKAGES, pkg.name, pkg)
    monkeypatch.setattr(pypi.subprocess, "run", lambda *a, **k: pytest.fail("pip must not run"))
    units = list(pypi.PypiSource((pkg.name,), downloads).units())
    assert [u.uid for u in units] == ["pypi:dotted.pkg-1.0/lib/a.c", "pypi:dotted.pkg-1.0/ext/b.c"]
    assert all(u.license == "MIT" and "-DX=1" in u.flags and u.source == "pypi:dotted.pkg" for u in units)
    assert (downloads / "dotted.pkg-1.0" / ".extracted").exists()
