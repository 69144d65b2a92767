"""Where input programs come from. Each source yields `Unit`s: one compilable file with provenance.

A source spec on the command line is `kind:arg`: `csmith:N`, `dir:PATH`, `pypi:PKG[,PKG...]`
(or `pypi:default`, `pypi:all`), `npm:PKG[,PKG...]`, `packages:all` (the whole catalog), `gcc-tests:N`.  Units come in a deterministic order so that shard numbers
are stable across runs (resume relies on it).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from llmopt.errors import LlmoptError


@dataclass(frozen=True)
class Unit:
    """One translation unit to compile: a file on disk, or text a generator makes on demand."""

    uid: str  # stable id, unique within a job (e.g. "csmith-17", "pypi:brotli-1.2.1/c/enc/bit_cost.c")
    source: str  # dataset `source` column, e.g. "csmith", "pypi:brotli"
    license: str
    language: str  # "c", "c++", "ll", "bc"
    path: str | None = None
    flags: tuple[str, ...] = ()
    seed: int | None = None  # generators: how to remake the text
    generator: str | None = None  # "csmith": text is made from `seed` on demand
    runnable: bool = False  # prints a checksum from main(): label safety can run it
    boilerplate: tuple[str, ...] = field(default=())  # regexes of generated helper names to drop
    package: str | None = None  # the project it belongs to (split and cap group); None: the unit is its own

    @property
    def group(self) -> str:
        """Functions of one group never straddle splits (near-copies within a project would leak)."""
        return self.package or self.uid


class Source:
    """A small class per source kind; `units()` is deterministic."""

    name = "source"

    def units(self) -> Iterator[Unit]:  # pragma: no cover - interface
        raise NotImplementedError



class SourceError(ValueError, LlmoptError):
    """A source spec that cannot be used (message says what to do)."""


def parse_source(spec: str, workdir: Path, seed: int = 0) -> Source:
    """`csmith:N` / `dir:PATH` / `pypi:PKGS` / `gcc-tests:N` -> a Source."""
    kind, _, arg = spec.partition(":")
    if kind == "csmith":
        from data_pipeline.sources.csmith import CsmithSource

        return CsmithSource(count=_int(spec, arg), seed=seed)
    if kind == "dir":
        from data_pipeline.sources.directory import DirectorySource

        return DirectorySource.from_spec(arg)
    if kind in ("pypi", "npm", "packages"):
        from data_pipeline.sources.catalog import select
        from data_pipeline.sources.packages import PackageSource

        return PackageSource(select(kind, arg), workdir / "downloads")
    if kind == "gcc-tests":
        from data_pipeline.sources.gcc_tests import GccTestsSource

        return GccTestsSource(limit=_int(spec, arg) if arg else None, workdir=workdir / "gcc-tests")
    raise SourceError(f"unknown source {spec!r}: use csmith:N, dir:PATH, pypi:PKG[,PKG], npm:PKG[,PKG], "
                      "packages:all or gcc-tests[:N]")


def _int(spec: str, arg: str) -> int:
    try:
        return int(arg)
    except ValueError:
        raise SourceError(f"source {spec!r} needs a number after the colon, e.g. csmith:100") from None
