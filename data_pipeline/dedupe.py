"""Deduplication on the normalized-IR hash across the whole dataset (first occurrence wins)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator


class Seen:
    """Hashes already in the dataset; `add` is False for a duplicate."""

    def __init__(self, hashes: Iterable[str] = ()):
        self._hashes = set(hashes)

    def add(self, ir_hash: str) -> bool:
        if ir_hash in self._hashes:
            return False
        self._hashes.add(ir_hash)
        return True

    def update(self, hashes: Iterable[str]) -> None:
        self._hashes.update(hashes)

    def __contains__(self, ir_hash: str) -> bool:
        return ir_hash in self._hashes

    def __len__(self) -> int:
        return len(self._hashes)


def unique_rows(rows: Iterable[dict], seen: Seen | None = None) -> Iterator[dict]:
    """Rows whose `ir_hash` was not seen before, in order."""
    seen = seen if seen is not None else Seen()
    for row in rows:
        if seen.add(row["ir_hash"]):
            yield row
