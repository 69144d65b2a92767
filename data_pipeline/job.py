"""The dataset generation job: shards of units -> autotuned rows -> broadcast + safety -> DatasetDict.

Layout under OUT:
    work/config.json            the job's settings (a resumed job must use the same ones)
    work/p1/shard-NNNNN.json.gz phase 1: compiled, split, deduped, autotuned rows of one shard of units
    work/broadcast.json         the distinct best lists broadcast to every function
    work/p2/shard-NNNNN.json.gz phase 2: after broadcast, optimized IR and label safety
    {train,validation,test}.parquet, README.md
Every shard file is written atomically, so a killed job resumes at the first missing shard with
no lost or duplicated rows.  Shards run in order locally (dedupe sees every earlier shard) or in
parallel on Ray (dedupe then happens when the dataset is assembled, in shard order: same result).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from data_pipeline.autotune import TuneConfig, autotune_many, rank
from data_pipeline.compile import CompileError, compile_unit, split_unit
from data_pipeline.dedupe import Seen
from data_pipeline.sources import Unit, parse_source
from data_pipeline.split import split_of
from data_pipeline.writer import read_shard, write_atomic, write_dataset, write_shard
from llmopt.harness import Harness, ResultCache
from llmopt.llvm.ir import normalize_ir
from llmopt.llvm.passes import OZ
from llmopt.run_settings import settings_diff, store_settings

log = logging.getLogger(__name__)


class JobError(RuntimeError):
    """A job that cannot run as asked (message says what to do)."""


@dataclass
class JobConfig:
    sources: list[str]
    out: str
    budget: int = 1000
    greedy_steps: int = 4
    max_len: int = 12
    minimize: bool = True
    seconds: float | None = None
    seed: int = 0
    max_tokens: int = 1000
    shard_units: int = 32
    broadcast_top: int = 100  # distinct best lists broadcast to every function (most frequent first)
    safety: bool = True
    run_timeout: float = 10.0
    eval_timeout: float = 20.0
    workers: int | None = None  # harness workers (default: all cores)
    executor: str = "local"
    address: str | None = None
    cache: str | None = None  # result cache path (default: ~/.cache/llmopt/results.sqlite)
    progress: bool = True
    limit_shards: int | None = None  # stop after this many shards (tests, benchmarks)

    # Settings that change the rows: a resumed job must match them.
    ROW_KEYS = ("sources", "budget", "greedy_steps", "max_len", "minimize", "seed", "max_tokens", "shard_units",
                "broadcast_top", "safety")

    def tune(self) -> TuneConfig:
        return TuneConfig(budget=self.budget, max_len=self.max_len, greedy_steps=self.greedy_steps,
                          minimize=self.minimize, seconds=self.seconds, seed=self.seed)

    @classmethod
    def from_file(cls, path: str | Path, **overrides) -> JobConfig:
        data = json.loads(Path(path).read_text())
        data.update({k: v for k, v in overrides.items() if v is not None})
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise JobError(f"unknown keys in {path}: {sorted(unknown)} (known: {sorted(known)})")
        return cls(**data)


@dataclass
class JobStats:
    functions: int = 0
    evaluations: int = 0
    seconds: float = 0.0
    counts: Counter = field(default_factory=Counter)


# ---------------------------------------------------------------------------------------------- planning

def plan_units(cfg: JobConfig) -> list[Unit]:
    """All units of all sources, interleaved round-robin so every prefix of shards mixes sources."""
    work = Path(cfg.out) / "work"
    streams = [iter(parse_source(spec, work, seed=cfg.seed).units()) for spec in cfg.sources]
    units: list[Unit] = []
    while streams:
        for stream in list(streams):
            try:
                units.append(next(stream))
            except StopIteration:
                streams.remove(stream)
    return units


def plan_shards(cfg: JobConfig) -> list[list[Unit]]:
    units = plan_units(cfg)
    shards = [units[i : i + cfg.shard_units] for i in range(0, len(units), cfg.shard_units)]
    return shards[: cfg.limit_shards] if cfg.limit_shards is not None else shards


def _shard_path(out: Path, phase: str, index: int) -> Path:
    return out / "work" / phase / f"shard-{index:05d}.json.gz"


def _check_config(cfg: JobConfig) -> None:
    path = Path(cfg.out) / "work" / "config.json"
    mine = {k: getattr(cfg, k) for k in JobConfig.ROW_KEYS}
    if not path.exists():
        store_settings(path, mine)
    elif diff := settings_diff(path, mine):
        raise JobError(f"{cfg.out} holds a job with other settings {diff} (old, new): use another --out "
                       "or the old settings to resume")


# ---------------------------------------------------------------------------------------------- phase 1

def compile_shard(cfg: JobConfig, units: list[Unit]) -> tuple[list, Counter]:
    """Compile and split one shard of units (subprocess-bound: runs in a thread beside the tuner)."""
    stats: Counter = Counter()
    functions = []
    for unit in units:
        try:
            module = compile_unit(unit)
        except (CompileError, RuntimeError) as err:
            stats["compile_failed"] += 1
            log.info("skip %s", err)
            continue
        stats["units_compiled"] += 1
        functions += split_unit(unit, module, cfg.max_tokens, stats)
    return functions, stats


def run_phase1_shard(cfg: JobConfig, index: int, units: list[Unit], harness: Harness,
                     seen: Seen | None = None, compiled: tuple[list, Counter] | None = None) -> dict:
    """Compile, split, dedupe and autotune one shard of units; returns the shard payload."""
    functions, stats = compiled if compiled is not None else compile_shard(cfg, units)
    if seen is not None:
        fresh = [fn for fn in functions if seen.add(fn.ir_hash)]
        stats["duplicates"] += len(functions) - len(fresh)
        functions = fresh
    local = {}
    for fn in functions:  # duplicates within the shard (Ray mode has no global `seen`)
        if fn.ir_hash in local:
            stats["duplicates"] += 1
        else:
            local[fn.ir_hash] = fn
    functions = list(local.values())
    inputs = harness.evaluate_tasks([(fn.ir, []) for fn in functions])
    tuned = autotune_many({fn.ir_hash: fn.ir for fn in functions}, harness, cfg.tune())
    rows = []
    for fn, unopt in zip(functions, inputs, strict=True):
        res = tuned[fn.ir_hash]
        if not unopt.ok or res.best is None:
            stats["unusable"] += 1  # the IR does not parse or -Oz fails on it
            continue
        rows.append({
            "source": fn.unit.source, "license": fn.unit.license, "llvm_version": harness.version,
            "name": fn.name, "ir": fn.ir, "ir_hash": fn.ir_hash, "n_tokens": fn.n_tokens,
            "instcount_input": unopt.instcount, "instcount_oz": res.instcount_oz,
            "passes": res.best.passes, "instcount_best": res.best.instcount, "evaluations": res.evaluations,
            "search_method": res.best.method, "unit": fn.unit.uid, "runnable": fn.unit.runnable,
            "unit_spec": dataclasses.asdict(fn.unit),
        })
    stats["functions"] = len(rows)
    return {"shard": index, "stats": dict(stats), "rows": rows}


# ---------------------------------------------------------------------------------------------- phase 2

def choose_broadcast(rows: list[dict], top: int) -> list[list[str]]:
    """The distinct best lists, most often best first (ties: shorter, then alphabetical)."""
    freq = Counter(tuple(r["passes"]) for r in rows if r["passes"] != [OZ])
    ordered = sorted(freq, key=lambda ls: (-freq[ls], len(ls), ls))
    return [list(ls) for ls in ordered[:top]]


def run_phase2_shard(cfg: JobConfig, index: int, rows: list[dict], lists: list[list[str]],
                     harness: Harness) -> dict:
    """Broadcast `lists` to every row, measure the final optimized IR, check labels by running."""
    stats: Counter = Counter()
    tasks = [(r["ir"], ls) for r in rows for ls in lists]
    results = harness.evaluate_tasks(tasks) if tasks else []
    for i, row in enumerate(rows):
        row_results = results[i * len(lists) : (i + 1) * len(lists)]
        row["evaluations"] += len({tuple(ls) for ls in lists})
        best = rank(row["instcount_best"], row["passes"])
        for ls, res in zip(lists, row_results, strict=True):
            if res.ok and rank(res.instcount, ls) < best:
                row["passes"], row["instcount_best"], row["search_method"] = list(ls), res.instcount, "broadcast"
                best = rank(res.instcount, ls)
        stats["broadcast_improved"] += row["search_method"] == "broadcast"
    _final_ir(rows, harness, stats)
    if cfg.safety:
        from data_pipeline.safety import check_rows

        check_rows(rows, harness, stats, timeout=cfg.run_timeout)
        stats["safety_checked"] += 0
    return {"shard": index, "stats": dict(stats), "rows": rows}


def _final_ir(rows: list[dict], harness: Harness, stats: Counter) -> None:
    finals = harness.evaluate_tasks([(r["ir"], r["passes"]) for r in rows], want_ir=True)
    for row, res in zip(rows, finals, strict=True):
        if not res.ok or res.ir is None:  # should not happen: the same list measured fine before
            oz = harness.evaluate(row["ir"], [OZ], want_ir=True)
            row["passes"], row["instcount_best"], row["search_method"] = [OZ], oz.instcount, "oz"
            res = oz
            stats["final_ir_failed"] += 1
        row["optimized_ir"] = normalize_ir(res.ir)


# ---------------------------------------------------------------------------------------------- executors

def _progress(cfg: JobConfig, total: int, desc: str):
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="shard", disable=not cfg.progress, dynamic_ncols=True)


def _open_cache(cfg: JobConfig) -> ResultCache:
    import sqlite3

    # Parallel tasks opening a fresh SQLite file race to switch it to WAL ("database is locked").
    for attempt in range(20):
        try:
            return ResultCache(cfg.cache)
        except sqlite3.OperationalError:
            if attempt == 19:
                raise
            time.sleep(0.2 * (attempt + 1))
    raise AssertionError("unreachable")


def _make_harness(cfg: JobConfig, workers: int | None = None) -> Harness:
    cache = _open_cache(cfg) if cfg.cache else True
    return Harness(workers=workers or cfg.workers, timeout=cfg.eval_timeout, cache=cache)


def _run_local(cfg: JobConfig, todo: list[int], work: Callable[[int, Harness], dict], phase: str,
               stats: JobStats, total: int) -> None:
    out = Path(cfg.out)
    harness = _make_harness(cfg)
    start = time.monotonic()
    bar = _progress(cfg, total, phase)
    bar.update(total - len(todo))
    fn0, ev0 = stats.functions, stats.evaluations  # rates of this phase only
    try:
        for index in todo:
            before = harness.stats.evaluations
            payload = work(index, harness)
            _record_shard(out, phase, index, payload, harness.stats.evaluations - before, stats, bar,
                          start, fn0, ev0)
    finally:
        bar.close()
        harness.close()


def _record_shard(out: Path, phase: str, index: int, payload: dict, evaluations: int, stats: JobStats, bar,
                  start: float, fn0: int, ev0: int) -> None:
    """Write one finished shard atomically, add it to the job's counts, and advance the progress bar
    (rates since `start` of this phase, from the counts `fn0` / `ev0` it began with)."""
    write_shard(_shard_path(out, phase, index), payload)
    stats.functions += len(payload["rows"])
    stats.evaluations += evaluations
    stats.counts.update(payload["stats"])
    elapsed = max(time.monotonic() - start, 1e-9)
    bar.set_postfix(fn_s=f"{(stats.functions - fn0) / elapsed:.2f}", evals_s=f"{(stats.evaluations - ev0) / elapsed:.0f}")
    bar.update(1)


def _run_ray(cfg: JobConfig, todo: list[int], phase: str, stats: JobStats, total: int,
             args_of: Callable[[int], tuple]) -> None:
    try:
        import ray
    except ImportError:
        raise JobError('--executor ray needs Ray: pip install "ray[default]"') from None
    if not ray.is_initialized():
        ray.init(address=cfg.address, ignore_reinit_error=True, log_to_driver=False)
    remote = ray.remote(num_cpus=1)(_ray_task)
    if cfg.cache:
        _open_cache(cfg)  # create the file and switch it to WAL once, before the tasks open it
    out = Path(cfg.out)
    pending = {remote.remote(cfg, phase, index, *args_of(index)): index for index in todo}
    bar = _progress(cfg, total, phase)
    bar.update(total - len(todo))
    start = time.monotonic()
    fn0, ev0 = stats.functions, stats.evaluations  # rates of this phase only
    try:
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            index = pending.pop(done[0])
            payload, evaluations = ray.get(done[0])
            # The driver owns the files: tasks only return their rows.
            _record_shard(out, phase, index, payload, evaluations, stats, bar, start, fn0, ev0)
    finally:
        bar.close()


def _ray_task(cfg: JobConfig, phase: str, index: int, *args) -> tuple[dict, int]:
    # One Ray task = one shard on one core: a single-worker harness, its own cache connection.
    harness = _make_harness(cfg, workers=1)
    try:
        if phase == "p1":
            payload = run_phase1_shard(cfg, index, args[0], harness, seen=None)
        else:
            payload = run_phase2_shard(cfg, index, args[0], args[1], harness)
        return payload, harness.stats.evaluations
    finally:
        harness.close()


# ---------------------------------------------------------------------------------------------- the job

def _finished(out: Path, phase: str, n: int) -> list[int]:
    return [i for i in range(n) if _shard_path(out, phase, i).exists()]


def _dedupe_p1(out: Path, indices: Iterator[int]) -> dict[int, list[dict]]:
    """Phase 1 rows per shard with duplicates across shards removed (earliest shard wins)."""
    seen, kept = Seen(), {}
    for i in indices:
        kept[i] = [r for r in read_shard(_shard_path(out, "p1", i))["rows"] if seen.add(r["ir_hash"])]
    return kept


def run_job(cfg: JobConfig, phases: tuple[str, ...] = ("p1", "p2", "write")) -> JobStats:
    out = Path(cfg.out)
    _check_config(cfg)
    stats = JobStats()
    start = time.monotonic()
    shards = plan_shards(cfg)
    n = len(shards)
    log.info("%d units in %d shards", sum(map(len, shards)), n)
    if "p1" in phases:
        done = set(_finished(out, "p1", n))
        todo = [i for i in range(n) if i not in done]
        if cfg.executor == "ray":
            _run_ray(cfg, todo, "p1", stats, n, lambda i: (shards[i],))
        else:
            seen = Seen(h for i in sorted(done) for h in
                        (r["ir_hash"] for r in read_shard(_shard_path(out, "p1", i))["rows"]))

            from concurrent.futures import ThreadPoolExecutor

            # Compile shard i+1 while shard i is tuned: clang/llvm-extract would otherwise idle the pool.
            prefetch = ThreadPoolExecutor(max_workers=1)
            futures = {i: prefetch.submit(compile_shard, cfg, shards[i]) for i in todo[:1]}

            def phase1(i: int, harness: Harness) -> dict:
                nxt = todo.index(i) + 1
                if nxt < len(todo):
                    futures[todo[nxt]] = prefetch.submit(compile_shard, cfg, shards[todo[nxt]])
                return run_phase1_shard(cfg, i, shards[i], harness, seen, compiled=futures.pop(i).result())

            try:
                _run_local(cfg, todo, phase1, "p1", stats, n)
            finally:
                prefetch.shutdown(wait=False, cancel_futures=True)
    if "p2" in phases:
        if len(_finished(out, "p1", n)) < n:
            raise JobError("phase 1 is not finished: run the job again to resume it")
        kept = _dedupe_p1(out, iter(range(n)))
        bpath = out / "work" / "broadcast.json"
        if not bpath.exists():
            lists = choose_broadcast([r for rows in kept.values() for r in rows], cfg.broadcast_top)
            write_atomic(bpath, json.dumps(lists).encode())
        lists = json.loads(bpath.read_text())
        done = set(_finished(out, "p2", n))
        todo = [i for i in range(n) if i not in done]
        if cfg.executor == "ray":
            _run_ray(cfg, todo, "p2", stats, n, lambda i: (kept[i], lists))
        else:
            _run_local(cfg, todo, lambda i, h: run_phase2_shard(cfg, i, kept[i], lists, h), "p2", stats, n)
    if "write" in phases:
        stats.functions = sum(write_output(cfg, n).values())  # rows in the dataset (phases re-count them)
    stats.seconds = time.monotonic() - start
    return stats


def write_output(cfg: JobConfig, n_shards: int) -> dict[str, int]:
    """Assemble phase-2 shards into the parquet DatasetDict and its card."""
    from data_pipeline.card import write_card

    out = Path(cfg.out)
    seen, by_split = Seen(), {"train": [], "validation": [], "test": []}
    p1_stats, p2_stats = Counter(), Counter()
    for i in range(n_shards):
        p1_stats.update(read_shard(_shard_path(out, "p1", i))["stats"])
        payload = read_shard(_shard_path(out, "p2", i))
        p2_stats.update(payload["stats"])
        for row in payload["rows"]:
            if seen.add(row["ir_hash"]):
                by_split[split_of(row["ir_hash"])].append(row)
    write_dataset(by_split, out)
    lists = json.loads((out / "work" / "broadcast.json").read_text())
    write_card(out, cfg, by_split, p1_stats, p2_stats, len(lists))
    return {k: len(v) for k, v in by_split.items()}


def default_workers() -> int:
    return os.cpu_count() or 1
