"""Per-function autotuner (thesis §4.3.2) on the harness: random search, greedy search until no gain,
minimization; later (`refine`) the dataset-wide broadcast and a greedy polish of the best list.

Every distinct list measured on a function is kept with its count (`GoodLists`), so rows can store
all lists that tie for the best and the top distinct lists, not just one label.  Each function's search is a generator that yields a batch of pass lists and receives their
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
    greedy_steps: int = 40  # greedy runs until a step no longer improves, at most this many steps; 0: off
    minimize: bool = True
    seconds: float | None = None  # optional wall-clock cap per function for the random search
    seed: int = 0
    batch: int = 250  # random lists per yielded batch (lets many functions share one pool call)
    metric: str = "instcount"  # what the search minimizes: "instcount" or "objsize" (.text+.data bytes)


def rank(instcount: int, passes: list[str]) -> tuple:
    # Fewer instructions first; ties go to the shorter list, then to `default<Oz>`, then alphabetically.
    return (instcount, len(passes), 0 if passes == [OZ] else 1, passes)


@dataclass
class Best:
    """The best list so far under the dataset's tie rules (`instcount`: its value in the tuning metric)."""

    passes: list[str]
    instcount: int
    method: str

    def key(self) -> tuple:
        return rank(self.instcount, self.passes)


TOP_LISTS = 16  # distinct lists kept per function with their counts
MAX_TIES = 64  # lists reaching the best count kept per function (shortest first); `n_ties` counts them all


@dataclass
class GoodLists:
    """Every distinct list measured on one function and its count; `top`/`ties` are what rows keep."""

    counts: dict[tuple[str, ...], int] = field(default_factory=dict)

    def add(self, passes: list[str], instcount: int) -> None:
        self.counts[tuple(passes)] = instcount

    def ranked(self) -> list[tuple[list[str], int]]:
        return [(list(ls), n) for ls, n in sorted(self.counts.items(), key=lambda kv: rank(kv[1], list(kv[0])))]

    def summary(self) -> dict:
        ranked = self.ranked()
        if not ranked:
            return {"top": [], "ties": [], "n_ties": 0}
        best = ranked[0][1]
        ties = [ls for ls, n in ranked if n == best]
        return {"top": [[ls, n] for ls, n in ranked[:TOP_LISTS]], "ties": ties[:MAX_TIES], "n_ties": len(ties)}

    @classmethod
    def from_summary(cls, summary: dict) -> GoodLists:
        good = cls()
        for ls, n in summary.get("top", []):
            good.add(ls, n)
        best = min((n for _, n in summary.get("top", [])), default=None)
        for ls in summary.get("ties", []):
            good.add(ls, best)
        return good


@dataclass
class TuneResult:
    ir_hash: str
    instcount_oz: int | None
    best: Best | None
    evaluations: int = 0
    error: str | None = None
    methods_tried: list[str] = field(default_factory=list)
    good: GoodLists = field(default_factory=GoodLists)
    evaluated: set[tuple[str, ...]] = field(default_factory=set)


def _rng(ir_hash: str, seed: int) -> random.Random:
    # Per-function stream: results do not depend on which functions share a batch or a shard.
    return random.Random(int(hashlib.sha256(f"{seed}:{ir_hash}".encode()).hexdigest()[:16], 16))


def random_list(rng: random.Random, passes: list[str], max_len: int) -> list[str]:
    length = rng.randint(1, max_len)
    if rng.random() < 0.5:
        return [OZ] + [rng.choice(passes) for _ in range(length - 1)]
    return [rng.choice(passes) for _ in range(length)]


class _Asker:
    """Yields only lists not measured before on this function; records every count in `result`."""

    def __init__(self, result: TuneResult):
        self.result = result

    def ask(self, lists: list[list[str]]) -> Generator[list[list[str]], Counts, Counts]:
        res = self.result
        fresh = list({tuple(ls): ls for ls in lists if tuple(ls) not in res.evaluated}.values())
        res.evaluated.update(tuple(ls) for ls in fresh)
        res.evaluations += len(fresh)
        counts = (yield fresh) if fresh else []
        for ls, n in zip(fresh, counts, strict=True):
            if n is not None:
                res.good.add(ls, n)
        return [res.good.counts.get(tuple(ls)) for ls in lists]

    def offer(self, lists: list[list[str]], counts: Counts, method: str) -> None:
        res = self.result
        for ls, n in zip(lists, counts, strict=True):
            if n is not None and (res.best is None or rank(n, ls) < res.best.key()):
                res.best = Best(list(ls), n, method)


def greedy(asker: _Asker, start: list[str], start_n: int | None, plain: list[str], max_steps: int,
           method: str) -> Generator[list[list[str]], Counts, None]:
    """Append the pass that helps most, step after step, until a step no longer lowers the count."""
    current, current_n = start, start_n
    for _ in range(max_steps):
        has_meta = any(p in META_PASSES for p in current)
        options = plain + ([] if has_meta else list(META_PASSES))
        lists = [current + [p] for p in options]
        counts = yield from asker.ask(lists)
        asker.offer(lists, counts, method)
        scored = [(rank(n, ls), ls, n) for ls, n in zip(lists, counts, strict=True) if n is not None]
        if not scored:
            return
        _, top, top_n = min(scored)
        if current_n is not None and top_n >= current_n:
            return
        current, current_n = top, top_n


def minimize(asker: _Asker) -> Generator[list[list[str]], Counts, None]:
    """Drop passes that do not contribute (one removal per round, all tried at once)."""
    res = asker.result
    while res.best is not None and len(res.best.passes) > 1:
        base = res.best.passes
        lists = [base[:i] + base[i + 1:] for i in range(len(base))]
        counts = yield from asker.ask(lists)
        before = res.best.key()
        for ls, n in zip(lists, counts, strict=True):
            if n is not None and rank(n, ls) < before:
                res.best = Best(ls, n, res.best.method)  # keeps the method that found it
                break
        if res.best.key() == before:
            return


def search(ir_hash: str, cfg: TuneConfig, result: TuneResult, vocab: list[str] | None = None) -> Search:
    """-Oz, random search, greedy search until no gain, then minimization; fills `result` in place."""
    vocab = vocab or vocabulary()
    plain = [p for p in vocab if p not in META_PASSES]
    rng = _rng(ir_hash, cfg.seed)
    asker = _Asker(result)

    (oz,) = yield from asker.ask([[OZ]])
    if oz is None:
        result.error = "default<Oz> failed on this function"
        return
    result.instcount_oz = oz
    result.best = Best([OZ], oz, "oz")
    if oz <= 1 and cfg.metric == "instcount":
        return  # a defined function keeps at least its terminator: -Oz is already optimal
    result.methods_tried.append("random")
    start = time.monotonic()
    remaining = cfg.budget - 1
    while remaining > 0:
        if cfg.seconds is not None and time.monotonic() - start > cfg.seconds:
            break
        lists = [random_list(rng, plain, cfg.max_len) for _ in range(min(cfg.batch, remaining))]
        remaining -= len(lists)
        asker.offer(lists, (yield from asker.ask(lists)), "random")
    if cfg.greedy_steps:
        result.methods_tried.append("greedy")
        yield from greedy(asker, [], None, plain, cfg.greedy_steps, "greedy")
    if cfg.minimize:
        yield from minimize(asker)


def refine(ir_hash: str, cfg: TuneConfig, result: TuneResult, broadcast: list[list[str]],
           vocab: list[str] | None = None) -> Search:
    """After the dataset-wide search: try the broadcast lists, then polish the best list greedily.

    `result` comes in holding phase 1's best list and good lists; its `evaluated` set should hold
    every list known measured, so nothing is compiled twice."""
    vocab = vocab or vocabulary()
    plain = [p for p in vocab if p not in META_PASSES]
    asker = _Asker(result)
    if result.best is None or (result.best.instcount <= 1 and cfg.metric == "instcount"):
        return
    lists = [list(ls) for ls in broadcast]
    asker.offer(lists, (yield from asker.ask(lists)), "broadcast")
    if cfg.greedy_steps:
        best = result.best
        yield from greedy(asker, list(best.passes), best.instcount, plain, cfg.greedy_steps, "polish")
    if cfg.minimize:
        yield from minimize(asker)


def drive(searches: Iterable[tuple[object, Search]], harness: Harness, irs: dict[object, str],
          window: int = 32, on_done: Callable[[object], None] | None = None, metric: str = "instcount") -> None:
    """Run many searches at once: collect every active search's batch, evaluate all in one call.
    The searches receive each list's value in `metric` (None: the list failed)."""
    sized = metric == "objsize"
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
        results = harness.evaluate_tasks(tasks, objsize=sized)
        counts: dict[object, Counts] = {k: [] for k in active}
        for key, res in zip(owners, results, strict=True):
            counts[key].append(None if not res.ok else res.objsize if sized else res.instcount)
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
    drive(gens, harness, functions, window, on_done=(lambda h: on_done(results[h])) if on_done else None,
          metric=cfg.metric)
    return results
