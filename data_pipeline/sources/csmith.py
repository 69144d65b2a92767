"""Csmith: random, UB-free C programs that print a checksum (so labels can be checked by running)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

from data_pipeline.sources import Source, SourceError, Unit

# Small programs: shallow blocks and simple expressions keep most func_N under ~1k tokens of IR
# (measured: with csmith's defaults almost every function is several thousand tokens).
CSMITH_OPTIONS = (
    "--max-funcs", "8", "--max-block-depth", "2", "--max-block-size", "2", "--max-expr-complexity", "2",
    "--no-structs", "--no-unions", "--no-volatiles", "--max-array-dim", "1",
)
# Csmith's runtime helpers and driver: the same code in every program, never a training row.
BOILERPLATE = (r"main", r"platform_main_(begin|end)", r"crc32_\w+", r"transparent_crc\w*", r"safe_\w+")
SEED_BASE = 1_000_000  # csmith seeds are SEED_BASE * job seed + index: explicit and reproducible


INCLUDE_DIRS = ("/usr/include/csmith", "/usr/local/include/csmith", "/usr/include/csmith-2.3.0")


def csmith_include() -> str:
    """Where csmith.h is (the first candidate when none has it: generate() then says what to install)."""
    return next((c for c in INCLUDE_DIRS if (Path(c) / "csmith.h").exists()), INCLUDE_DIRS[0])


def check_installed() -> None:
    if not shutil.which("csmith"):
        raise SourceError("csmith not found: install it with `apt-get install csmith libcsmith-dev`")
    if not (Path(csmith_include()) / "csmith.h").exists():
        raise SourceError("csmith headers (csmith.h) not found: install them with `apt-get install libcsmith-dev`")


class CsmithSource(Source):
    name = "csmith"

    def __init__(self, count: int, seed: int = 0, options: tuple[str, ...] = CSMITH_OPTIONS):
        # csmith itself is needed only when a program is made (phase 0): a job past phase 0 resumes
        # on a machine without it.
        self.count, self.seed, self.options = count, seed, options
        self.include = csmith_include()

    def units(self) -> Iterator[Unit]:
        for i in range(self.count):
            seed = SEED_BASE * self.seed + i
            yield Unit(uid=f"csmith-{seed}", source="csmith", license="generated (csmith, BSD-2-Clause tool)",
                       language="c", flags=("-I", self.include), seed=seed, generator="csmith", runnable=True,
                       boilerplate=BOILERPLATE)


def generate(seed: int, options: tuple[str, ...] = CSMITH_OPTIONS) -> str:
    """The program csmith writes for `seed` (deterministic: the same seed gives the same text)."""
    check_installed()
    # csmith drops a platform.info file into its working directory: keep it out of the caller's.
    with tempfile.TemporaryDirectory() as scratch:
        proc = subprocess.run(["csmith", "--seed", str(seed), *options], capture_output=True, text=True,
                              timeout=60, cwd=scratch)
    if proc.returncode != 0:
        raise RuntimeError(f"csmith --seed {seed} failed: {proc.stderr.strip()[:200]}")
    return proc.stdout
