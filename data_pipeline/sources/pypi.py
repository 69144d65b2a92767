"""Real C code from PyPI: sdists of permissively licensed C-extension packages, compiled file by file.

Fetched with `pip download --no-binary :all: --no-deps` (the registry's ordinary client) into the
job's download folder; each package lists where its C files are and what they need to compile
standalone against the python3 headers.
"""

from __future__ import annotations

import logging
import subprocess
import sysconfig
import tarfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

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


# Checked by hand: license from the sdist's LICENSE file; every listed file compiles (or is skipped
# and counted) with clang and the python3 headers.
PACKAGES = {
    "pycryptodome": Package("pycryptodome", "4.4.0", "BSD-2-Clause AND Unlicense", ("src",),
                            ("HAVE_STDINT_H", "HAVE_UINT128", "HAVE_POSIX_MEMALIGN", "HAVE_CPUID_H"),
                            ("/test", "armv8", "_arm", "AESNI", "clmul")),
    "brotli": Package("brotli", "1.2.1", "MIT", ("c/include",)),
    "lz4": Package("lz4", "4.4.5", "BSD-3-Clause", ("lz4libs",)),
}
DEFAULT_PACKAGES = ("pycryptodome", "brotli", "lz4")


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
        names = DEFAULT_PACKAGES if arg in ("", "default") else tuple(a for a in arg.split(",") if a)
        return cls(names, download_dir)

    def _fetch(self, pkg: Package) -> Path:
        root = self.download_dir / f"{pkg.name}-{pkg.version}"
        if (root / ".extracted").exists():
            return root
        self.download_dir.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run(["pip", "download", "--no-binary", ":all:", "--no-deps",
                               "-q", f"{pkg.name}=={pkg.version}", "-d", str(self.download_dir)],
                              capture_output=True, text=True, timeout=600)
        archives = sorted(self.download_dir.glob(f"{pkg.name}-{pkg.version}.*")) + sorted(
            self.download_dir.glob(f"{pkg.name.replace('-', '_')}-{pkg.version}.*"))
        archives = [a for a in archives if a.is_file()]
        if not archives:
            raise SourceError(f"pip download of {pkg.name}=={pkg.version} failed: {proc.stderr.strip()[-300:]}")
        archive = archives[0]
        if archive.suffix == ".zip":
            with zipfile.ZipFile(archive) as z:
                z.extractall(self.download_dir)
        else:
            with tarfile.open(archive) as tar:
                tar.extractall(self.download_dir, filter="data")
        (root / ".extracted").touch()
        return root

    def units(self) -> Iterator[Unit]:
        pyinc = python_include()
        for pkg in self.packages:
            root = self._fetch(pkg)
            flags = ["-I", pyinc]
            for inc in pkg.include:
                flags += ["-I", str(root / inc)]
            flags += [f"-D{d}" for d in pkg.defines]
            for path in sorted(root.rglob("*.c")):
                rel = str(path.relative_to(root))
                if any(x in "/" + rel for x in pkg.exclude):
                    continue
                yield Unit(uid=f"pypi:{pkg.name}-{pkg.version}/{rel}", source=f"pypi:{pkg.name}",
                           license=pkg.license, language="c", path=str(path),
                           flags=("-I", str(path.parent), *flags))
