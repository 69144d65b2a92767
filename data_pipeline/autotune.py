"""Per-function autotuner (thesis §4.3.2) on the harness: random search, greedy, minimization.

Each function's search is a generator that yields a batch of pass lists and receives their
instruction counts, so `autotune_many` can evaluate the batches of many functions in one
`Harness.evaluate_tasks` call (the pool stays busy even during the sequential steps of greedy
search and minimization).  The all-to-all broadcast runs later, over the whole dataset (job.py).
"""

from __future__ import annotations

import hashlib
import random
import time
from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass, field

from llmopt.harness import Harness
from llmopt.llvm.passes import META_PASSES, OZ, vocabulary

Counts = list[int | None]  # None: the list failed (invalid pipeline, crash, timeout)
Search = Generator[list[list[str]], Counts, None]


@dataclass(frozen=True)
class TuneConfig:
    budget: int = 1000  # random-search evaluations per function (the -Oz baseline included)
    max_len: int = 12  # random lists have 1..max_len passes
    greedy_steps: int = 4  # 0 disables greedy search; each step tries every vocabulary pass
    minimize: bool = True
    seconds: float | None = None  # optional wall-clock cap per function for the random search
    seed: int = 0
    batch: int = 250  # random lists per yielded batch (lets many functions share one pool call)


@dataclass
class Best:
    """The best list so far under the dataset's tie rules."""

    passes: list[str]
    instcount: int
    method: str

    def key(self) -> tuple:
        return rank(self.instcount, self.passes)


def rank(instcount: int, passes: list[str]) -> tuple:
    # Fewer instructions first; ties go to `default<Oz>` alone, then to the shorter list.
    return (instcount, 0 if passes == [OZ] else 1, len(passes))


@dataclass
class TuneResult:
    ir_hash: str
    instcount_oz: int | None
    best: Best | None
    evaluations: int = 0
    error: str | None = None
    methods_tried: list[str] = field(default_factory=list)


def _rng(ir_hash: str, seed: int) -> random.Random:
    # Per-function stream: results do not depend on which functions share a batch or a shard.
    return random.Random(int(hashlib.sha256(f"{seed}:{ir_hash}".encode()).hexdigest()[:16], 16))


def random_list(rng: random.Random, passes: list[str], max_len: int) -> list[str]:
    length = rng.randint(1, max_len)
    if rng.random() < 0.5:
        return [OZ] + [rng.choice(passes) for _ in range(length - 1)]
    return [rng.choice(passes) for _ in range(length)]


def search(ir_hash: str, cfg: TuneConfig, result: TuneResult, vocab: list[str] | None = None) -> Search:
    """Random search, then greedy, then minimization; fills `result` in place."""
    vocab = vocab or vocabulary()
    plain = [p for p in vocab if p not in META_PASSES]
    rng = _rng(ir_hash, cfg.seed)
    seen: set[tuple[str, ...]] = set()

    def ask(lists: list[list[str]]) -> Generator[list[list[str]], Counts, Counts]:
        fresh = [ls for ls in lists if tuple(ls) not in seen]
        seen.update(tuple(ls) for ls in fresh)
        result.evaluations += len(fresh)
        counts = (yield fresh) if fresh else []
        by_list = dict(zip((tuple(ls) for ls in fresh), counts, strict=True))
        return [by_list.get(tuple(ls)) for ls in lists]

    def offer(lists: list[list[str]], counts: Counts, method: str) -> None:
        for ls, n in zip(lists, counts, strict=True):
            if n is not None and (result.best is None or rank(n, ls) < result.best.key()):
                result.best = Best(list(ls), n, method)

    (oz,) = yield from ask([[OZ]])
    if oz is None:
        result.error = "default<Oz> failed on this function"
        return
    result.instcount_oz = oz
    result.best = Best([OZ], oz, "oz")
    if oz <= 1:
        return  # a defined function keeps at least its terminator: -Oz is already optimal
    # Random search.
    result.methods_tried.append("random")
    start = time.monotonic()
    remaining = cfg.budget - 1
    while remaining > 0:
        if cfg.seconds is not None and time.monotonic() - start > cfg.seconds:
            break
        lists = [random_list(rng, plain, cfg.max_len) for _ in range(min(cfg.batch, remaining))]
        remaining -= len(lists)
        offer(lists, (yield from ask(lists)), "random")
    # Greedy: append the pass that helps most; stop when nothing helps.
    if cfg.greedy_steps:
        result.methods_tried.append("greedy")
        current: list[str] = []
        current_n: int | None = None
        for _ in range(cfg.greedy_steps):
            options = plain + ([p for p in META_PASSES] if not any(p in META_PASSES for p in current) else [])
            lists = [current + [p] for p in options]
            counts = yield from ask(lists)
            offer(lists, counts, "greedy")
            scored = [(rank(n, ls), ls, n) for ls, n in zip(lists, counts, strict=True) if n is not None]
            if not scored:
                break
            _, top, top_n = min(scored)
            if current_n is not None and top_n >= current_n:
                break
            current, current_n = top, top_n
    # Minimization: drop passes that do not contribute (one removal per round, all tried at once).
    if cfg.minimize and result.best.passes != [OZ]:
        while len(result.best.passes) > 1:
            base = result.best.passes
            lists = [base[:i] + base[i + 1:] for i in range(len(base))]
            counts = yield from ask(lists)
            before = result.best.key()
            for ls, n in zip(lists, counts, strict=True):
                if n is not None and rank(n, ls) < before:
                    result.best = Best(ls, n, result.best.method)  # keeps the method that found it
                    break
            if result.best.key() == before:
                break


def drive(searches: Iterable[tuple[object, Search]], harness: Harness, irs: dict[object, str],
          window: int = 32, on_done: Callable[[object], None] | None = None) -> None:
    """Run many searches at once: collect every active search's batch, evaluate all in one call."""
    pending = iter(searches)
    active: dict[object, tuple[Search, list[list[str]]]] = {}

    def start_more() -> None:
        while len(active) < window:
            try:
                key, gen = next(pending)
            except StopIteration:
                return
            try:
                active[key] = (gen, next(gen))
            except StopIteration:
                if on_done:
                    on_done(key)

    start_more()
    while active:
        tasks, owners = [], []
        for key, (_, lists) in active.items():
            for ls in lists:
                tasks.append((irs[key], ls))
                owners.append(key)
        results = harness.evaluate_tasks(tasks)
        counts: dict[object, Counts] = {k: [] for k in active}
        for key, res in zip(owners, results, strict=True):
            counts[key].append(res.instcount if res.ok else None)
        for key in list(active):
            gen = active[key][0]
            try:
                active[key] = (gen, gen.send(counts[key]))
            except StopIteration:
                del active[key]
                if on_done:
                    on_done(key)
        start_more()


def autotune_many(functions: dict[str, str], harness: Harness, cfg: TuneConfig, window: int = 32,
                  on_done: Callable[[TuneResult], None] | None = None) -> dict[str, TuneResult]:
    """{ir_hash: ir} -> {ir_hash: TuneResult}."""
    vocab = vocabulary(harness.version)
    results = {h: TuneResult(h, None, None) for h in functions}
    gens = ((h, search(h, cfg, results[h], vocab)) for h in functions)
    drive(gens, harness, functions, window, on_done=(lambda h: on_done(results[h])) if on_done else None)
    return results
