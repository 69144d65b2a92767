"""Model-free baselines: random search over the vocabulary, and the training-set coreset."""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from llmopt.sampling.base import Sample

META_PREFIX = "default<"


class RandomSearch:
    """Unique random pass lists: length uniform in [min_len, max_len], passes uniform, at most one meta-pass.

    Seeded by (seed, ir): the same command gives the same lists.
    """

    name = "random"

    def __init__(self, passes: Sequence[str] | None = None, *, min_len: int = 1, max_len: int = 20, seed: int = 0):
        if passes is None:
            from llmopt.llvm.passes import vocabulary

            passes = vocabulary()
        self.passes = [p for p in passes if not p.startswith(META_PREFIX)]
        self.metas = [p for p in passes if p.startswith(META_PREFIX)]
        self.min_len, self.max_len, self.seed = min_len, max_len, seed

    def sample(self, ir: str, n: int) -> list[Sample]:
        digest = hashlib.sha256(ir.encode()).hexdigest()[:16]
        rng = random.Random(f"{self.seed}:{digest}")
        out: list[Sample] = []
        seen: set[tuple[str, ...]] = set()
        for _ in range(100 * n):  # bounded: tiny vocabularies may have fewer than n lists
            if len(out) >= n:
                break
            length = rng.randint(self.min_len, self.max_len)
            passes = [rng.choice(self.passes) for _ in range(length)]
            if self.metas and rng.random() < 0.1:  # sometimes start from a standard pipeline
                passes[0] = rng.choice(self.metas)
            if tuple(passes) not in seen:
                seen.add(tuple(passes))
                out.append(Sample(passes, None))
        return out


class Coreset:
    """The `k` most frequent best pass lists of the training set, most frequent first (the same for every input)."""

    name = "coreset"

    def __init__(self, train_pass_lists: Sequence[Sequence[str]]):
        counts = Counter(tuple(p) for p in train_pass_lists if p)
        # Most frequent first; ties in first-seen order (Counter keeps insertion order).
        self.lists = [list(p) for p, _ in sorted(counts.items(), key=lambda kv: -kv[1])]

    @classmethod
    def from_dataset(cls, data_dir: str | Path, split: str = "train") -> Coreset:
        """From the `passes` column of a dataset split (`llmopt.dataset.read_rows`: DatasetError if unreadable)."""
        from llmopt.dataset import read_rows

        rows = read_rows(data_dir, split, columns=["passes"])
        if not rows:
            raise FileNotFoundError(f"{data_dir}: no {split} split (or it is empty): the coreset needs a dataset's "
                                    "training split")
        return cls([r["passes"] for r in rows])

    def sample(self, ir: str, n: int) -> list[Sample]:
        return [Sample(list(p), None) for p in self.lists[:n]]


def read_list_vocabulary(path: str | Path) -> list[list[str]]:
    """Pass lists from a JSON file (`.json` or `.json.gz`): a list of lists, or an object whose `lists` holds
    them (a model's `lists.json`, eval's `coreset_cover.json`, a dataset's `lists-train.json.gz`)."""
    import gzip
    import json

    path = Path(path)
    try:
        with (gzip.open(path, "rt") if path.suffix == ".gz" else open(path)) as f:
            data = json.load(f)
    except (OSError, ValueError) as err:
        raise ValueError(f"{path}: not a readable JSON list vocabulary ({err})") from None
    lists = data.get("lists") if isinstance(data, dict) else data
    if not isinstance(lists, list) or not all(isinstance(p, list) and all(isinstance(x, str) for x in p)
                                              for p in lists):
        raise ValueError(f"{path}: expected a JSON list of pass lists, or an object with one under 'lists'")
    return lists
