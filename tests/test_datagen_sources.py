"""Sources: bad files are skipped and counted; duplicates across files are dropped."""

from __future__ import annotations

from pathlib import Path

import pytest

from data_pipeline.job import JobConfig, run_job
from data_pipeline.sources import SourceError, parse_source
from data_pipeline.sources.directory import DirectorySource
from data_pipeline.writer import read_shard
from llmopt.dataset import load_dataset_dict

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
    stats, records = {}, 0
    for item in sorted((out / "work" / "p0").glob("item-*.json.gz")):  # phase 0: compile and select
        payload = read_shard(item)
        records += len(payload["rows"])
        for k, v in payload["stats"].items():
            stats[k] = stats.get(k, 0) + v
    assert stats["compile_failed"] == 1
    assert records == 3  # add3 twice (in two work items), mix once
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


# SPDX ids of the permissive licenses a catalog package may use (an entry may combine them with AND/OR,
# and may offer a non-permissive alternative only after OR).
PERMISSIVE = {"MIT", "BSD-2-Clause", "BSD-3-Clause", "Apache-2.0", "Zlib", "PSF-2.0", "CNRI-Python", "Unlicense",
              "CC0-1.0", "ISC", "BSL-1.0", "ZPL-2.1", "HPND", "MIT-CMU", "OLDAP-2.8", "X11", "0BSD", "blessing",
              "LicenseRef-PublicDomain", "Python-2.0", "TCL", "Unicode-DFS-2016", "bzip2-1.0.6", "curl", "NCSA", "Libpng", "libpng-2.0", "IJG"}


def test_catalog_packages_are_pinned_unique_and_permissive(tmp_path: Path):
    import re

    from data_pipeline.sources.catalog import BY_KEY, CATALOG, CURATED_PYPI, DEFAULT_PYPI

    assert len(BY_KEY) == len(CATALOG), "each package once"
    for pkg in CATALOG:
        assert pkg.manager in ("pypi", "npm")
        assert re.fullmatch(r"\d+(\.\d+)*(\.post\d+)?", pkg.version), pkg  # pinned: no ranges
        for alternatives in re.sub(r"[()]", "", pkg.license).split(" AND "):
            assert any(lic.strip() in PERMISSIVE for lic in alternatives.split(" OR ")), pkg
    assert DEFAULT_PYPI == ("pycryptodome", "brotli", "lz4")  # the committed csmith-pypi dataset's `pypi:default`
    assert parse_source("packages:all", tmp_path).packages == CATALOG  # no download until units() runs
    assert parse_source("pypi:all", tmp_path).packages == CURATED_PYPI and len(CURATED_PYPI) == 21
    assert [p.name for p in parse_source("pypi:default", tmp_path).packages] == list(DEFAULT_PYPI)
    assert [p.name for p in parse_source("pypi:zstandard,lupa", tmp_path).packages] == ["zstandard", "lupa"]
    with pytest.raises(SourceError, match="not in the checked catalog"):
        parse_source("pypi:numpy", tmp_path)


def _archive(tmp_path: Path, top_name: str, files: dict[str, str], archive: Path) -> None:
    import tarfile

    top = tmp_path / "build" / top_name
    for rel, text in files.items():
        (top / rel).parent.mkdir(parents=True, exist_ok=True)
        (top / rel).write_text(text)
    archive.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(top, arcname=top.name)


def test_package_source_reads_a_downloaded_sdist_offline(tmp_path: Path, monkeypatch):
    """An sdist already in the download folder is used as is (no pip), even when its top folder is not
    NAME-VERSION; `paths` and `exclude` choose the files."""
    from data_pipeline.sources import packages

    downloads = tmp_path / "downloads"
    _archive(tmp_path, "dotted.pkg-1.0", {r: GOOD for r in ("lib/a.c", "lib/test_a.c", "ext/b.c", "other.c")},
             downloads / "dotted_pkg-1.0.tar.gz")
    pkg = packages.Package("pypi", "dotted.pkg", "1.0", "MIT", ("lib",), ("X=1",), ("test_",),
                           paths=("lib", "ext/b.c"))
    monkeypatch.setattr(packages.subprocess, "run", lambda *a, **k: pytest.fail("pip must not run"))
    units = list(packages.PackageSource((pkg,), downloads).units())
    assert [u.uid for u in units] == ["pypi:dotted.pkg-1.0/lib/a.c", "pypi:dotted.pkg-1.0/ext/b.c"]
    assert all(u.license == "MIT" and "-DX=1" in u.flags and u.source == "pypi:dotted.pkg" for u in units)
    assert all(u.package == "pypi:dotted.pkg" == u.group for u in units)


def test_npm_tarball_defaults_find_c_and_cxx_and_skip_tests_and_cython(tmp_path: Path, monkeypatch):
    """With no paths or includes: every C/C++ file outside test/bench/example folders, every header folder on
    the include path, C++ as C++17, Cython output left out."""
    from data_pipeline.sources import packages

    downloads = tmp_path / "downloads"
    files = {"deps/lib/src/a.c": '#include "a.h"\n' + GOOD, "deps/lib/include/a.h": "int add3(int, int, int);\n",
             "deps/lib/src/b.cc": "int twice(int x) { return 2 * x; }\n", "deps/lib/test/t.c": GOOD,
             "src/gen.c": "/* Generated by Cython 3.0 */\n" + OTHER, "package.json": '{"license": "MIT"}'}
    _archive(tmp_path, "package", files, downloads / "scope-pkg-2.0.0.tgz")
    pkg = packages.Package("npm", "@scope/pkg", "2.0.0", "MIT")
    monkeypatch.setattr(packages.subprocess, "run", lambda *a, **k: pytest.fail("npm must not run"))
    source = packages.PackageSource((pkg,), downloads)
    units = list(source.units())
    assert [u.uid.split("/", 2)[-1] for u in units] == ["deps/lib/src/a.c", "deps/lib/src/b.cc"]
    assert [u.language for u in units] == ["c", "c++"] and "-std=c++17" in units[1].flags
    root = source.root(pkg)
    assert str(root / "deps/lib/include") in units[0].flags
    assert "MIT" in packages.metadata_license(root)
