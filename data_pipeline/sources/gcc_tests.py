"""The GCC C torture tests from Debian's `gcc-12-source` (GPL: never commit data derived from them).

Optional and local: when the package is not installed the source yields nothing and says so.
"""

from __future__ import annotations

import logging
import subprocess
import tarfile
from collections.abc import Iterator
from pathlib import Path

from data_pipeline.sources import Source, Unit

log = logging.getLogger(__name__)
TARBALL_GLOB = "/usr/src/gcc-12/gcc-*.tar.*"
TORTURE_DIRS = ("gcc/testsuite/gcc.c-torture/execute/", "gcc/testsuite/gcc.c-torture/compile/")


class GccTestsSource(Source):
    name = "gcc-tests"

    def __init__(self, limit: int | None, workdir: Path):
        self.limit, self.workdir = limit, workdir

    def _tree(self) -> Path | None:
        if (self.workdir / "done").exists():
            return self.workdir
        tarballs = sorted(Path("/").glob(TARBALL_GLOB.lstrip("/")))
        if not tarballs:
            log.warning("gcc-tests: gcc-12-source is not installed (apt-get install gcc-12-source): skipping")
            return None
        self.workdir.mkdir(parents=True, exist_ok=True)
        with tarfile.open(tarballs[0]) as tar:
            members = [m for m in tar.getmembers() if m.isfile() and m.name.endswith(".c")
                       and any(d in m.name for d in TORTURE_DIRS)]
            tar.extractall(self.workdir, members=members, filter="data")
        subprocess.run(["touch", str(self.workdir / "done")], check=True)
        return self.workdir

    def units(self) -> Iterator[Unit]:
        tree = self._tree()
        if tree is None:
            return
        files = sorted(p for p in tree.rglob("*.c") if any(d in str(p) for d in TORTURE_DIRS))
        for path in files[: self.limit]:
            yield Unit(uid=f"gcc-tests:{path.relative_to(tree)}", source="gcc-tests",
                       license="GPL-3.0-or-later (do not redistribute derived data)", language="c",
                       path=str(path), flags=("-w",))
