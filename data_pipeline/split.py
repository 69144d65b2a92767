"""Deterministic train/validation/test assignment by content hash.

The split depends only on the normalized-IR hash, so the same function lands in the same split
in every run and every dataset version; dedupe on that hash means a test function never appears
in train.
"""

from __future__ import annotations

SPLITS = ("train", "validation", "test")
# Per-mille shares: 8% test and 8% validation (so ~6,300 functions give 500 + 500 + 5,300).
TEST_PERMILLE = 80
VALIDATION_PERMILLE = 80


def split_of(ir_hash: str) -> str:
    bucket = int(ir_hash[:12], 16) % 1000
    if bucket < TEST_PERMILLE:
        return "test"
    if bucket < TEST_PERMILLE + VALIDATION_PERMILLE:
        return "validation"
    return "train"
