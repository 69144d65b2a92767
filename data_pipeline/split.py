"""Train/validation/test assignment: by package (the default for new datasets) or by content hash.

`split_by_group` keeps every package in one split, so the test measures generalization to projects
never trained on (near-identical functions of one project would otherwise leak across splits).
`split_of` depends only on the normalized-IR hash (the v1 datasets' rule, still an option).  Dedupe
on that hash means a test function never appears in train either way.
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


def split_by_group(rows: list[dict], test_share: float = 0.06, validation_share: float = 0.06,
                   seed: int = 0, key: str = "package") -> dict[str, str]:
    """{ir_hash: split} with whole groups (packages; a generated program is its own) in one split.

    Groups are visited in a seeded hash order and fill test, then validation, until each holds its
    share of all functions; the rest is train.  So test and validation functions come from projects
    the model never saw in training, and the assignment depends only on the rows' groups and sizes.
    """
    import hashlib
    from collections import Counter

    sizes = Counter(r[key] for r in rows)
    order = sorted(sizes, key=lambda g: hashlib.sha256(f"{seed}:{g}".encode()).hexdigest())
    total = sum(sizes.values())
    targets = (("test", test_share * total), ("validation", validation_share * total))
    group_split, filled, stage = {}, Counter(), 0
    for group in order:
        while stage < len(targets) and filled[targets[stage][0]] >= targets[stage][1]:
            stage += 1
        split = targets[stage][0] if stage < len(targets) else "train"
        group_split[group] = split
        filled[split] += sizes[group]
    return {r["ir_hash"]: group_split[r[key]] for r in rows}
