"""Real C code from PyPI: sdists of permissively licensed C-extension packages, compiled file by file.

Fetched with `pip download --no-binary :all: --no-deps` (the registry's ordinary client) into the
job's download folder; each package lists where its C files are and what they need to compile
standalone against the python3 headers.

Specs: `pypi:default` (pycryptodome, brotli, lz4: what the committed dataset used), `pypi:all` (every
package in PACKAGES; the table below has what each gives) or `pypi:PKG,PKG`.
"""

from __future__ import annotations

import logging
import re
import subprocess
import sysconfig
import tarfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from data_pipeline.sources import Source, SourceError, Unit

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Package:
    name: str
    version: str  # pinned: the same command downloads the same code
    license: str
    include: tuple[str, ...] = ()  # include dirs relative to the sdist root
    defines: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()  # path substrings to skip (tests, platform-specific code)
    paths: tuple[str, ...] = ()  # files or folders (relative to the sdist root) to compile; () = all


# Checked by hand: license (SPDX) from the sdist's LICENSE files, bundled libraries' included; every
# listed file compiles (or is skipped and counted) with clang and the python3 headers. Left out: Cython-
# and CFFI-generated C (httptools/parser, _ruamel_yaml.c, argon2's _ffi.c), tests, benchmarks, Windows and
# macOS files, and code needing CPU features beyond x86-64 baseline (x86 dispatchers, AVX/AES-NI, zstd's
# BMI2 clones: DYNAMIC_BMI2=0). lupa bundles seven Luas: only Lua 5.4 (LuaJIT needs generated headers).
# Not taken: msgpack (only Cython C), ujson (part TCL-licensed), zlib-ng (needs cmake-generated headers),
# cbor2 (no C in the sdist).
#
# Measured (clang 19, python 3.11 headers; "kept" = single-function modules within the default
# --max-tokens 1000, distinct within the package, i.e. the rows `pypi:PKG` gives):
#
# | package              | version    | license                                        | files  | defined | kept |
# |----------------------|------------|------------------------------------------------|--------|---------|------|
# | pycryptodome         | 4.4.0      | BSD-2-Clause AND Unlicense                     | 58/100 |    2392 |  854 |
# | brotli               | 1.2.1      | MIT                                            | 37/37  |     996 |  363 |
# | lz4                  | 4.4.5      | BSD-3-Clause                                   | 8/8    |     316 |  190 |
# | zstandard            | 0.25.0     | BSD-3-Clause                                   | 2/2    |    1400 |  663 |
# | xxhash               | 4.1.0      | BSD-2-Clause                                   | 2/2    |     227 |  119 |
# | bitarray             | 3.12.3     | PSF-2.0                                        | 2/2    |     365 |   99 |
# | regex                | 2026.11.15 | Apache-2.0 AND CNRI-Python                     | 2/2    |     689 |  237 |
# | crcmod               | 1.7        | MIT                                            | 1/1    |      13 |    2 |
# | markupsafe           | 3.0.4      | BSD-3-Clause                                   | 1/1    |      16 |    8 |
# | python-lzf           | 0.2.6      | BSD-3-Clause AND (BSD-2-Clause OR GPL-2.0+)    | 3/3    |       9 |    5 |
# | mmh3                 | 5.3.1      | MIT                                            | 2/2    |      91 |   33 |
# | pyahocorasick        | 2.3.1      | BSD-3-Clause                                   | 1/1    |     145 |   57 |
# | setproctitle         | 1.3.8      | BSD-3-Clause                                   | 5/5    |      25 |   11 |
# | zopfli               | 0.4.3      | Apache-2.0                                     | 13/13  |     122 |   39 |
# | httptools            | 0.9.0      | MIT (llhttp, http-parser)                      | 4/4    |     145 |   93 |
# | hiredis              | 3.5.0      | BSD-3-Clause AND MIT                           | 10/10  |     382 |  154 |
# | cmarkgfm             | 2025.10.22 | BSD-2-Clause AND MIT                           | 35/35  |     521 |  225 |
# | ruamel.yaml.clib     | 0.2.15     | MIT (libyaml)                                  | 8/8    |     191 |    9 |
# | argon2-cffi-bindings | 26.2.0     | MIT AND (CC0-1.0 OR Apache-2.0)                | 6/6    |      79 |   45 |
# | lupa                 | 2.8        | MIT (Lua 5.4.8)                                | 33/33  |    1081 |  403 |
# | simplejson           | 4.3.0      | MIT OR AFL-2.1                                 | 1/1    |      96 |   38 |
#
# pypi:default = the first three (1,407 kept); pypi:all = all 21 (3,647 kept before cross-package dedupe).
PACKAGES = {
    "pycryptodome": Package("pycryptodome", "4.4.0", "BSD-2-Clause AND Unlicense", ("src",),
                            ("HAVE_STDINT_H", "HAVE_UINT128", "HAVE_POSIX_MEMALIGN", "HAVE_CPUID_H"),
                            ("/test", "armv8", "_arm", "AESNI", "clmul")),
    "brotli": Package("brotli", "1.2.1", "MIT", ("c/include",)),
    "lz4": Package("lz4", "4.4.5", "BSD-3-Clause", ("lz4libs",)),
    "zstandard": Package("zstandard", "0.25.0", "BSD-3-Clause", ("c-ext", "zstd"),
                         ("ZSTDLIB_VISIBLE=", "ZDICTLIB_VISIBLE=", "ZSTDERRORLIB_VISIBLE=", "DYNAMIC_BMI2=0"),
                         paths=("c-ext/backend_c.c", "zstd/zstd.c")),
    "xxhash": Package("xxhash", "4.1.0", "BSD-2-Clause", ("deps/xxhash",), exclude=("x86dispatch",),
                      paths=("src", "deps/xxhash")),
    "bitarray": Package("bitarray", "3.12.3", "PSF-2.0", ("bitarray",)),
    "regex": Package("regex", "2026.11.15", "Apache-2.0 AND CNRI-Python", ("src",)),
    "crcmod": Package("crcmod", "1.7", "MIT", paths=("python3/src",)),
    "markupsafe": Package("markupsafe", "3.0.4", "BSD-3-Clause"),
    "python-lzf": Package("python-lzf", "0.2.6", "BSD-3-Clause AND (BSD-2-Clause OR GPL-2.0-or-later)"),
    "mmh3": Package("mmh3", "5.3.1", "MIT"),
    "pyahocorasick": Package("pyahocorasick", "2.3.1", "BSD-3-Clause", ("src",), ("AHOCORASICK_UNICODE",),
                             paths=("src/pyahocorasick.c",)),
    "setproctitle": Package("setproctitle", "1.3.8", "BSD-3-Clause", ("src",),
                            ("HAVE_SYS_PRCTL_H", 'SPT_VERSION="1.3.8"'), ("darwin",), paths=("src",)),
    "zopfli": Package("zopfli", "0.4.3", "Apache-2.0", ("zopfli/src",)),
    "httptools": Package("httptools", "0.9.0", "MIT", ("vendor/llhttp/include", "vendor/http-parser"),
                         paths=("vendor/llhttp/src", "vendor/http-parser/http_parser.c")),
    "hiredis": Package("hiredis", "3.5.0", "BSD-3-Clause AND MIT", ("vendor", "vendor/hiredis"),
                       exclude=("ssl.c", "test.c", "sockcompat.c")),
    "cmarkgfm": Package("cmarkgfm", "2025.10.22", "BSD-2-Clause AND MIT",
                        ("third_party/cmark/src", "third_party/cmark/extensions", "generated/unix"),
                        paths=("third_party/cmark",)),
    "ruamel.yaml.clib": Package("ruamel.yaml.clib", "0.2.15", "MIT", (".",), exclude=("_ruamel_yaml.c",)),
    "argon2-cffi-bindings": Package("argon2-cffi-bindings", "26.2.0", "MIT AND (CC0-1.0 OR Apache-2.0)",
                                    ("extras/libargon2/include", "extras/libargon2/src"),
                                    exclude=("opt.c", "bench.c", "genkat.c", "run.c", "test.c"),
                                    paths=("extras/libargon2/src",)),
    "lupa": Package("lupa", "2.8", "MIT", ("third-party/lua54",), ("LUA_USE_LINUX",),
                    ("onelua.c", "ltests.c", "testes"), paths=("third-party/lua54",)),
    "simplejson": Package("simplejson", "4.3.0", "MIT OR AFL-2.1"),
}
# `pypi:default` is what the committed dataset was built from: keep it as is so its command means the same.
DEFAULT_PACKAGES = ("pycryptodome", "brotli", "lz4")
# `pypi:all`: every checked package, in PACKAGES order (units and shards follow it; add new ones at the end).
ALL_PACKAGES = tuple(PACKAGES)


def python_include() -> str:
    return sysconfig.get_paths()["include"]


class PypiSource(Source):
    name = "pypi"

    def __init__(self, packages: tuple[str, ...], download_dir: Path):
        unknown = [p for p in packages if p not in PACKAGES]
        if unknown:
            raise SourceError(f"pypi packages {unknown} are not in the checked list: choose from {sorted(PACKAGES)}")
        self.packages = tuple(PACKAGES[p] for p in packages)
        self.download_dir = download_dir

    @classmethod
    def from_spec(cls, arg: str, download_dir: Path) -> PypiSource:
        """`default` (or empty): DEFAULT_PACKAGES; `all`: every checked package; else `PKG,PKG,...`."""
        if arg in ("", "default"):
            names = DEFAULT_PACKAGES
        elif arg == "all":
            names = ALL_PACKAGES
        else:
            names = tuple(a for a in arg.split(",") if a)
        return cls(names, download_dir)

    def _archive(self, pkg: Package) -> Path | None:
        # sdist names: as published, or normalized (PEP 625: runs of -_. become _).
        stems = dict.fromkeys((pkg.name, pkg.name.replace("-", "_"), re.sub(r"[-_.]+", "_", pkg.name).lower()))
        for stem in stems:
            for archive in sorted(self.download_dir.glob(f"{stem}-{pkg.version}.*")):
                if archive.is_file() and archive.name.endswith((".tar.gz", ".tgz", ".tar.bz2", ".zip")):
                    return archive
        return None

    def _fetch(self, pkg: Package) -> Path:
        root = self.download_dir / f"{pkg.name}-{pkg.version}"
        if (root / ".extracted").exists():
            return root
        self.download_dir.mkdir(parents=True, exist_ok=True)
        archive = self._archive(pkg)
        if archive is None:
            proc = subprocess.run(["pip", "download", "--no-binary", ":all:", "--no-deps",
                                   "-q", f"{pkg.name}=={pkg.version}", "-d", str(self.download_dir)],
                                  capture_output=True, text=True, timeout=600)
            archive = self._archive(pkg)
            if archive is None:
                raise SourceError(f"pip download of {pkg.name}=={pkg.version} failed: {proc.stderr.strip()[-300:]}")
        # The sdist's top folder is not always NAME-VERSION (e.g. ruamel_yaml_clib-X holds ruamel.yaml.clib-X/).
        if archive.suffix == ".zip":
            with zipfile.ZipFile(archive) as z:
                top = PurePosixPath(z.namelist()[0]).parts[0]
                if not (self.download_dir / top / ".extracted").exists():
                    z.extractall(self.download_dir)
        else:
            with tarfile.open(archive) as tar:
                top = PurePosixPath(tar.getnames()[0]).parts[0]
                if not (self.download_dir / top / ".extracted").exists():
                    tar.extractall(self.download_dir, filter="data")
        root = self.download_dir / top
        (root / ".extracted").touch()
        return root

    @staticmethod
    def _c_files(root: Path, pkg: Package) -> list[Path]:
        if not pkg.paths:
            return sorted(root.rglob("*.c"))
        files = []
        for sub in pkg.paths:
            path = root / sub
            files += [path] if path.is_file() else sorted(path.rglob("*.c"))
        return files

    def units(self) -> Iterator[Unit]:
        pyinc = python_include()
        for pkg in self.packages:
            root = self._fetch(pkg)
            flags = ["-I", pyinc]
            for inc in pkg.include:
                flags += ["-I", str(root / inc)]
            flags += [f"-D{d}" for d in pkg.defines]
            for path in self._c_files(root, pkg):
                rel = str(path.relative_to(root))
                if any(x in "/" + rel for x in pkg.exclude):
                    continue
                yield Unit(uid=f"pypi:{pkg.name}-{pkg.version}/{rel}", source=f"pypi:{pkg.name}",
                           license=pkg.license, language="c", path=str(path),
                           flags=("-I", str(path.parent), *flags))
