"""The dataset generation job: work items -> selected functions -> autotuned -> refined -> DatasetDict.

Layout under OUT:
    work/config.json              the job's settings (a resumed job must use the same ones)
    work/p0/item-NNNN.json.gz     phase 0: the selected functions of one work item (a package, or a chunk
                                  of generated programs), with their IR: later phases need nothing else
    work/plan.json                the functions of every phase-1 shard (fixed once phase 0 is complete)
    work/p1/shard-NNNNN.json.gz   phase 1: random search, greedy until no gain, minimization
    work/broadcast.json           the distinct best lists broadcast to every function
    work/p2/shard-NNNNN.json.gz   phase 2: broadcast, greedy polish, optimized IR, label safety
    {train,validation,test}.parquet, README.md
Every file is written atomically, so a killed job resumes at the first missing file with no lost or
duplicated rows; committing work/ lets a job resume on another machine (phases 1-2 need no network
and no downloads, only the IR stored in phase 0).  Shards run in order locally or in parallel on Ray.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from data_pipeline.autotune import Best, GoodLists, TuneConfig, TuneResult, drive, refine, search
from data_pipeline.executors import progress, run_shards
from data_pipeline.ray_connect import connect_ray
from data_pipeline.select import SelectConfig, function_record, select_functions
from data_pipeline.sources import SourceError, Unit, parse_source
from data_pipeline.writer import item_path, read_shard, shard_path, write_atomic, write_dataset, write_shard
from llmopt.dataset import SPLITS, Seen, split_by_group, split_of
from llmopt.errors import LlmoptError, one_line
from llmopt.harness import Harness
from llmopt.llvm.ir import normalize_ir
from llmopt.llvm.passes import OZ, vocabulary
from llmopt.metrics import METRICS
from llmopt.run_settings import settings_diff, store_settings

log = logging.getLogger(__name__)


class JobError(RuntimeError, LlmoptError):
    """A job that cannot run as asked (message says what to do)."""


@dataclass
class JobConfig:
    sources: list[str]
    out: str
    budget: int = 1000
    greedy_steps: int = 40  # greedy (and the polish) run until a step no longer improves, at most this many
    max_len: int = 12
    minimize: bool = True
    seconds: float | None = None
    seed: int = 0
    max_tokens: int = 4096  # tokens of the model's tokenizer
    min_instructions: int = 5
    package_cap: int | None = 1000  # functions per package at most
    shard_units: int = 32  # units per phase-0 item of generated programs
    shard_functions: int = 64  # functions per phase-1/2 shard
    broadcast_top: int = 256  # distinct best lists broadcast to every function (most frequent first)
    split: str = "package"  # "package" (test/validation from unseen packages) or "hash"
    test_share: float = 0.06
    validation_share: float = 0.06
    tokenizer: str | None = None  # tokenizer folder for the budget (default: the shipped model's)
    safety: bool = True
    run_timeout: float = 10.0
    eval_timeout: float = 20.0
    workers: int | None = None  # harness workers (default: all cores)
    executor: str = "local"
    address: str | None = None
    cache: str | None = None  # result cache path (default: ~/.cache/llmopt/results.sqlite)
    progress: bool = True
    limit_shards: int | None = None  # stop after this many shards (tests, benchmarks)
    shard_range: str | None = None  # "START:END": phases 1-2 work only on these shards (machines share a job)
    phases: tuple[str, ...] = ("p0", "p1", "p2", "write")
    metric: str = "instcount"  # what labels minimize: "instcount" or "objsize" (.text+.data bytes)
    use_cache: bool = True  # False: --no-cache

    # Settings that change the rows: a resumed job must match them.
    ROW_KEYS = ("sources", "budget", "greedy_steps", "max_len", "minimize", "seed", "max_tokens", "min_instructions",
                "package_cap", "shard_units", "shard_functions", "broadcast_top", "split", "test_share",
                "validation_share", "tokenizer", "safety", "metric")
    # What a row setting was before it existed: a job whose config.json lacks it resumes as this.
    ROW_DEFAULTS = {"metric": "instcount"}

    def __post_init__(self) -> None:
        """Bad settings fail here, in one line, before any work (a negative shard size once wrote an empty
        dataset and exited 0)."""
        at_least = {"budget": 1, "greedy_steps": 0, "max_len": 1, "max_tokens": 1, "min_instructions": 0,
                    "package_cap": 1, "shard_units": 1, "shard_functions": 1, "broadcast_top": 0, "workers": 1,
                    "limit_shards": 0}
        for name, low in at_least.items():
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value < low):
                raise JobError(f"{name.replace('_', '-')} must be a whole number >= {low}, got {value!r}")
        for name in ("run_timeout", "eval_timeout", "seconds"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise JobError(f"{name.replace('_', '-')} must be > 0 seconds, got {value!r}")
        if not (0 <= self.test_share < 1 and 0 <= self.validation_share < 1
                and self.test_share + self.validation_share < 1):
            raise JobError("test-share and validation-share must be in [0, 1) and leave room for train")
        if self.split not in ("package", "hash"):
            raise JobError(f"split must be 'package' or 'hash', got {self.split!r}")
        if self.executor not in ("local", "ray"):
            raise JobError(f"executor must be 'local' or 'ray', got {self.executor!r}")
        if self.metric not in METRICS:
            raise JobError(f"metric must be 'instcount' or 'objsize', got {self.metric!r}")
        if not self.sources:
            raise JobError("datagen needs at least one --source")
        if unknown := set(self.phases) - {"p0", "p1", "p2", "write"}:
            raise JobError(f"unknown phases {sorted(unknown)}: choose from p0, p1, p2, write")
        if self.shard_range is not None:
            self.shard_bounds()

    def shard_bounds(self) -> tuple[int, int | None]:
        """(start, end) of --shard-range START:END (either side may be empty)."""
        if self.shard_range is None:
            return 0, None
        start, sep, end = self.shard_range.partition(":")
        try:
            bounds = (int(start) if start else 0, int(end) if end else None)
        except ValueError:
            bounds = (-1, None)
        if not sep or bounds[0] < 0 or (bounds[1] is not None and bounds[1] < bounds[0]):
            raise JobError(f"shard-range must be START:END with 0 <= START <= END, got {self.shard_range!r}")
        return bounds

    def tune(self) -> TuneConfig:
        return TuneConfig(budget=self.budget, max_len=self.max_len, greedy_steps=self.greedy_steps,
                          minimize=self.minimize, seconds=self.seconds, seed=self.seed, metric=self.metric)

    def select(self) -> SelectConfig:
        return SelectConfig(max_tokens=self.max_tokens, min_instructions=self.min_instructions,
                            package_cap=self.package_cap, seed=self.seed, jobs=self.workers or default_workers())

    @classmethod
    def from_file(cls, path: str | Path, **overrides) -> JobConfig:
        try:
            data = json.loads(Path(path).read_text())
        except (OSError, UnicodeDecodeError, ValueError) as err:
            raise JobError(f"--config {path}: cannot read a JSON settings file: {one_line(err)}") from None
        if not isinstance(data, dict):
            raise JobError(f"--config {path}: expected a JSON object of settings")
        data.update({k: v for k, v in overrides.items() if v is not None})
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise JobError(f"unknown keys in {path}: {sorted(unknown)} (known: {sorted(known)})")
        try:
            return cls(**data)
        except TypeError as err:  # a required key is missing
            raise JobError(f"--config {path}: {err}") from None


@dataclass
class JobStats:
    functions: int = 0
    evaluations: int = 0
    seconds: float = 0.0
    counts: Counter = field(default_factory=Counter)


# ---------------------------------------------------------------------------------------------- planning

@dataclass
class WorkItem:
    """Phase 0's unit of work: one package, or a chunk of units of another source."""

    key: str
    units: Callable[[], list[Unit]]  # listed when the item runs (a package is downloaded then)


def plan_items(cfg: JobConfig) -> list[WorkItem]:
    from data_pipeline.sources.packages import PackageSource

    work = Path(cfg.out) / "work"
    items: list[WorkItem] = []
    for spec in cfg.sources:
        source = parse_source(spec, work, seed=cfg.seed)
        if isinstance(source, PackageSource):
            for pkg in source.packages:
                one = PackageSource((pkg,), source.download_dir)
                items.append(WorkItem(pkg.key, lambda one=one: list(one.units())))
        else:
            units = list(source.units())
            for i in range(0, len(units), cfg.shard_units):
                chunk = units[i: i + cfg.shard_units]
                items.append(WorkItem(f"{spec}#{i // cfg.shard_units}", lambda chunk=chunk: chunk))
    return items


def _check_config(cfg: JobConfig) -> None:
    path = Path(cfg.out) / "work" / "config.json"
    mine = {k: getattr(cfg, k) for k in JobConfig.ROW_KEYS}
    if not path.exists():
        store_settings(path, mine)
    elif diff := settings_diff(path, mine, JobConfig.ROW_DEFAULTS):
        raise JobError(f"{cfg.out} holds a job with other settings {diff} (old, new): use another --out "
                       "or the old settings to resume")


# ---------------------------------------------------------------------------------------------- phase 0

def run_phase0_item(cfg: JobConfig, item: WorkItem, count_tokens: Callable[[str], int]) -> dict:
    stats: Counter = Counter()
    functions = select_functions(item.units(), cfg.select(), count_tokens, stats)
    return {"item": item.key, "stats": dict(stats), "rows": [function_record(fn) for fn in functions]}


def load_functions(out: Path, items: list[WorkItem]) -> dict[str, dict]:
    """{ir_hash: phase-0 record} over all items, the first occurrence of a function winning."""
    functions: dict[str, dict] = {}
    for i, item in enumerate(items):
        payload = read_shard(item_path(out, i))
        if payload["item"] != item.key:  # items are files by position: the sources must keep their order
            raise JobError(f"work item {i} of {out} holds {payload['item']!r}, the sources now give {item.key!r}: "
                           "packages may only be appended to the catalog (or use another --out)")
        for rec in payload["rows"]:
            functions.setdefault(rec["ir_hash"], rec)
    return functions


def interleave(streams: list[list[str]]) -> list[str]:
    """Round-robin over the lists (the first of each, then the second of each, ...): every prefix mixes them."""
    iterators = [iter(stream) for stream in streams]
    order: list[str] = []
    while iterators:
        for it in list(iterators):
            item = next(it, None)
            if item is None:
                iterators.remove(it)
            else:
                order.append(item)
    return order


def plan_shards(cfg: JobConfig, n_items: int) -> list[list[str]]:
    """Phase-1 shards as lists of ir_hash, stored in work/plan.json: items interleaved round-robin, so
    every prefix of shards mixes all packages (a job stopped half-way still covers every source).

    The plan only grows: when the catalog gained packages (new items at the end), their functions
    become new shards after the stored ones, so finished shards stay valid."""
    path = Path(cfg.out) / "work" / "plan.json"
    plan = json.loads(path.read_text()) if path.exists() else {"items": 0, "shards": []}
    if plan["items"] >= n_items:
        return plan["shards"]
    seen = Seen(h for shard in plan["shards"] for h in shard)
    for i in range(plan["items"]):  # a function of an old item that a new one repeats stays in the old one
        seen.update(r["ir_hash"] for r in read_shard(item_path(Path(cfg.out), i))["rows"])
    streams = []
    for i in range(plan["items"], n_items):
        rows = read_shard(item_path(Path(cfg.out), i))["rows"]
        streams.append([r["ir_hash"] for r in rows if seen.add(r["ir_hash"])])
    order = interleave(streams)
    plan["shards"] += [order[i: i + cfg.shard_functions] for i in range(0, len(order), cfg.shard_functions)]
    plan["items"] = n_items
    write_atomic(path, json.dumps(plan).encode())
    return plan["shards"]


# ---------------------------------------------------------------------------------------------- phase 1

def _value_keys(metric: str) -> tuple[str, str]:
    """The row keys of a search's -Oz and best values: `instcount_*`, or `objsize_*` when tuned for bytes."""
    return ("instcount_oz", "instcount_best") if metric == "instcount" else ("objsize_oz", "objsize_best")


def _result_record(res: TuneResult, metric: str = "instcount", **extra) -> dict:
    oz_key, best_key = _value_keys(metric)
    record = {"ir_hash": res.ir_hash, oz_key: res.instcount_oz, "passes": res.best.passes,
              best_key: res.best.instcount, "search_method": res.best.method,
              "evaluations": res.evaluations, **res.good.summary(), **extra}
    if metric != "instcount":  # (instcount rows stay as they always were)
        record["metric"] = metric
    return record


def _add_instcounts(rows: list[dict], irs: dict[str, str], harness: Harness) -> None:
    """Rows tuned for bytes still carry the dataset's instruction columns: -Oz's and the label's."""
    tasks = [(irs[r["ir_hash"]], ls) for r in rows for ls in ([OZ], r["passes"])]
    results = harness.evaluate_tasks(tasks)
    for i, row in enumerate(rows):
        row["instcount_oz"], row["instcount_best"] = results[2 * i].instcount, results[2 * i + 1].instcount


def run_phase1_shard(cfg: JobConfig, index: int, functions: list[dict], harness: Harness) -> dict:
    """Measure the inputs and search every function of one shard; returns the shard payload."""
    stats: Counter = Counter()
    inputs = harness.evaluate_tasks([(fn["ir"], []) for fn in functions])
    usable = {}
    for fn, unopt in zip(functions, inputs, strict=True):
        if not unopt.ok:
            stats["unusable"] += 1  # the IR does not parse or verify
        elif unopt.instcount < cfg.min_instructions:
            stats["too_short"] += 1
        else:
            usable[fn["ir_hash"]] = (fn, unopt.instcount)
    vocab = vocabulary(harness.version)
    results = {h: TuneResult(h, None, None) for h in usable}
    irs = {h: fn["ir"] for h, (fn, _) in usable.items()}
    drive(((h, search(h, cfg.tune(), results[h], vocab)) for h in usable), harness, irs, metric=cfg.metric)
    rows = []
    for h, (_, n_input) in usable.items():
        res = results[h]
        if res.best is None:
            stats["unusable"] += 1  # -Oz fails on it
            continue
        rows.append(_result_record(res, cfg.metric, instcount_input=n_input, llvm_version=harness.version))
    if cfg.metric != "instcount":
        _add_instcounts(rows, irs, harness)
    stats["functions"] = len(rows)
    return {"shard": index, "stats": dict(stats), "rows": rows}


# ---------------------------------------------------------------------------------------------- phase 2

def choose_broadcast(rows: list[dict], top: int) -> list[list[str]]:
    """The distinct best lists, most often best first (ties: shorter, then alphabetical)."""
    freq = Counter(tuple(r["passes"]) for r in rows if r["passes"] != [OZ])
    ordered = sorted(freq, key=lambda ls: (-freq[ls], len(ls), ls))
    return [list(ls) for ls in ordered[:top]]


def _resume_result(row: dict) -> TuneResult:
    good = GoodLists.from_summary(row)
    oz_key, best_key = _value_keys(row.get("metric", "instcount"))
    res = TuneResult(row["ir_hash"], row[oz_key], Best(row["passes"], row[best_key], row["search_method"]),
                     evaluations=row["evaluations"], good=good)
    res.evaluated = set(good.counts)
    return res


def run_phase2_shard(cfg: JobConfig, index: int, rows: list[dict], functions: dict[str, dict],
                     lists: list[list[str]], harness: Harness) -> dict:
    """Broadcast `lists` to every row, polish its best list greedily, measure the optimized IR, and
    check csmith labels by running the program."""
    stats: Counter = Counter()
    vocab = vocabulary(harness.version)
    results = {r["ir_hash"]: _resume_result(r) for r in rows}
    irs = {h: functions[h]["ir"] for h in results}
    drive(((h, refine(h, cfg.tune(), results[h], lists, vocab)) for h in results), harness, irs, metric=cfg.metric)
    out = []
    for row in rows:
        res = results[row["ir_hash"]]
        stats[f"refined_by_{res.best.method}"] += res.best.method in ("broadcast", "polish")
        extra = {} if cfg.metric == "instcount" else {"instcount_oz": row["instcount_oz"]}
        out.append({**functions[row["ir_hash"]], **_result_record(res, cfg.metric, instcount_input=row["instcount_input"],
                                                                 llvm_version=row["llvm_version"], **extra)})
    _final_ir(out, harness, stats)
    if cfg.safety:
        from data_pipeline.safety import check_rows

        check_rows(out, harness, stats, timeout=cfg.run_timeout)
    for row in out:  # phase 0 holds the input: keep the shard small
        del row["ir"]
    return {"shard": index, "stats": dict(stats), "rows": out}


def _final_ir(rows: list[dict], harness: Harness, stats: Counter) -> None:
    finals = harness.evaluate_tasks([(r["ir"], r["passes"]) for r in rows], want_ir=True)
    for row, res in zip(rows, finals, strict=True):
        if not res.ok or res.ir is None:  # should not happen: the same list measured fine before
            oz = harness.evaluate(row["ir"], [OZ], want_ir=True)
            row["passes"], row["instcount_best"], row["search_method"] = [OZ], oz.instcount, "oz"
            if "objsize_oz" in row:
                row["objsize_best"] = row["objsize_oz"]
            res = oz
            stats["final_ir_failed"] += 1
        elif "objsize_best" in row:  # tuned for bytes: the label's instruction count is measured here
            row["instcount_best"] = res.instcount
        row["optimized_ir"] = normalize_ir(res.ir)



# ---------------------------------------------------------------------------------------------- the job

def _finished(out: Path, phase: str, n: int) -> list[int]:
    return [i for i in range(n) if shard_path(out, phase, i).exists()]


def _run_phase0(cfg: JobConfig, items: list[WorkItem], stats: JobStats) -> None:
    from data_pipeline.compile import TokenCounter

    out = Path(cfg.out)
    todo = [i for i in range(len(items)) if not item_path(out, i).exists()]
    if not todo:
        return
    count_tokens = TokenCounter(cfg.tokenizer)
    bar = progress(cfg, len(items), "p0 select")
    bar.update(len(items) - len(todo))
    failed = []
    try:
        for i in todo:
            bar.set_postfix(item=items[i].key[:40])
            try:
                payload = run_phase0_item(cfg, items[i], count_tokens)
            except SourceError as err:  # e.g. a download that failed: retried when the job runs again
                log.warning("work item %s failed: %s", items[i].key, err)
                failed.append(items[i].key)
                continue
            write_shard(item_path(out, i), payload)
            stats.counts.update(payload["stats"])
            bar.update(1)
    finally:
        bar.close()
    if failed:
        raise JobError(f"{len(failed)} work items failed ({', '.join(failed[:5])}{' ...' if len(failed) > 5 else ''}): "
                       "run the job again to retry them, or drop them from the sources")


def run_job(cfg: JobConfig, phases: tuple[str, ...] | None = None) -> JobStats:
    from llmopt.outputs import check_output_dir

    phases = cfg.phases if phases is None else phases
    out = check_output_dir(cfg.out)
    if cfg.executor == "ray" and {"p1", "p2"} & set(phases):
        connect_ray(cfg)  # an unreachable cluster fails now, not after phase 0
    items = plan_items(cfg)  # a bad source spec fails here, before anything is written
    _check_config(cfg)
    stats = JobStats()
    start = time.monotonic()
    if "p0" in phases:
        _run_phase0(cfg, items, stats)
    if missing := [i for i in range(len(items)) if not item_path(out, i).exists()]:
        raise JobError(f"phase 0 is not finished ({len(missing)} work items left): run the job again to resume it")
    functions = load_functions(out, items)
    shards = plan_shards(cfg, len(items))
    if cfg.limit_shards is not None:
        shards = shards[: cfg.limit_shards]
    n = len(shards)
    log.info("%d functions in %d shards", sum(map(len, shards)), n)
    start_at, end_at = cfg.shard_bounds()
    mine = range(start_at, min(n, end_at) if end_at is not None else n)
    if "p1" in phases:
        todo = [i for i in mine if i not in set(_finished(out, "p1", n))]
        run_shards(cfg, "p1", todo, n, run_phase1_shard, lambda i: ([functions[h] for h in shards[i]],), stats)
    if "p2" in phases:
        if len(_finished(out, "p1", n)) < n:
            raise JobError("phase 1 is not finished: run the job again to resume it")
        p1 = {i: read_shard(shard_path(out, "p1", i))["rows"] for i in range(n)}
        bpath = out / "work" / "broadcast.json"
        if not bpath.exists():
            lists = choose_broadcast([r for rows in p1.values() for r in rows], cfg.broadcast_top)
            write_atomic(bpath, json.dumps(lists).encode())
        lists = json.loads(bpath.read_text())
        todo = [i for i in mine if i not in set(_finished(out, "p2", n))]
        args_of = lambda i: (p1[i], {r["ir_hash"]: functions[r["ir_hash"]] for r in p1[i]}, lists)  # noqa: E731
        run_shards(cfg, "p2", todo, n, run_phase2_shard, args_of, stats)
    if "write" in phases:
        stats.functions = sum(write_output(cfg, n, functions).values())  # rows in the dataset
    stats.seconds = time.monotonic() - start
    return stats


def write_output(cfg: JobConfig, n_shards: int, functions: dict[str, dict]) -> dict[str, int]:
    """Assemble phase-2 shards (joined with phase 0's input IR) into the parquet DatasetDict and its card."""
    from data_pipeline.card import write_card

    out = Path(cfg.out)
    p0_stats, p1_stats, p2_stats, rows = Counter(), Counter(), Counter(), []
    for i in range(len(list((out / "work" / "p0").glob("item-*.json.gz")))):
        payload = read_shard(item_path(out, i))
        p0_stats.update(payload["stats"])
        p0_stats["duplicates_across_items"] += len(payload["rows"])
    p0_stats["duplicates_across_items"] -= len(functions)
    for i in range(n_shards):
        p1_stats.update(read_shard(shard_path(out, "p1", i))["stats"])
        payload = read_shard(shard_path(out, "p2", i))
        p2_stats.update(payload["stats"])
        rows += [{**row, "ir": functions[row["ir_hash"]]["ir"]} for row in payload["rows"]]
    if cfg.split == "package":
        split_of_row = split_by_group(rows, cfg.test_share, cfg.validation_share, cfg.seed)
    else:
        split_of_row = {r["ir_hash"]: split_of(r["ir_hash"]) for r in rows}
    by_split: dict[str, list[dict]] = {split: [] for split in SPLITS}
    for row in rows:
        by_split[split_of_row[row["ir_hash"]]].append(row)
    write_dataset(by_split, out)
    lists = json.loads((out / "work" / "broadcast.json").read_text())
    write_card(out, cfg, by_split, p0_stats + p1_stats, p2_stats, len(lists))
    return {k: len(v) for k, v in by_split.items()}


def default_workers() -> int:
    return os.cpu_count() or 1
