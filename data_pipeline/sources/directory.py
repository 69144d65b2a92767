"""`dir:PATH`: the user's own .c/.cpp/.ll/.bc files (include paths and -D options allowed)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from data_pipeline.sources import Source, SourceError, Unit

LANGUAGES = {".c": "c", ".cc": "c++", ".cpp": "c++", ".cxx": "c++", ".ll": "ll", ".bc": "bc"}


class DirectorySource(Source):
    name = "dir"

    def __init__(self, root: str | Path, flags: tuple[str, ...] = (), license: str = "unknown (user files)"):
        self.root = Path(root).expanduser().resolve()
        if not self.root.is_dir():
            raise SourceError(f"dir source {str(root)!r} is not a directory")
        self.flags, self.license = flags, license

    @classmethod
    def from_spec(cls, arg: str) -> DirectorySource:
        """`PATH[;-Iinc;-DX=1]`: a directory, then compiler options separated by ';'."""
        path, *flags = arg.split(";")
        return cls(path, tuple(f for f in flags if f))

    def units(self) -> Iterator[Unit]:
        for path in sorted(self.root.rglob("*")):
            language = LANGUAGES.get(path.suffix.lower())
            if language and path.is_file():
                rel = path.relative_to(self.root)
                yield Unit(uid=f"dir:{self.root}/{rel}", source=f"dir:{self.root}", license=self.license,
                           language=language, path=str(path), flags=("-I", str(path.parent), *self.flags))
