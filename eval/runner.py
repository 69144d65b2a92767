"""Run an evaluation: every method on every function, measured by the harness, resumable.

Per (method, function) the first K candidates (K = the largest sample budget) and their measured
instruction counts are appended to `DIR/records.jsonl` as soon as a chunk of functions is done;
a rerun skips what is there.  Model generation (main thread) overlaps with compilation (a
background thread driving the harness's worker pool).  Object sizes of the chosen lists go to
`DIR/objsize.jsonl` the same way.  `run_eval` then aggregates everything into `results.json`,
the tables, the plots and `REPORT.md`.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from eval import metrics
from eval.aggregate import aggregate
from eval.inputs import Function, InputError, load_functions, training_rows
from eval.methods import (
    DEFAULT_METHODS,
    MethodError,
    MethodFactory,
    MethodOptions,
    expand_methods,
    needs_model,
)
from eval.store import BASELINE, OBJSIZE, RECORDS, JsonlStore, candidates_of
from llmopt.llvm.passes import OZ
from llmopt.metrics import METRICS
from llmopt.run_settings import settings_diff, store_settings
from llmopt.sampling.base import PromptTooLongError, Sample, Strategy

DEFAULT_SAMPLES = (1, 3, 5, 10, 30, 100)
_ERROR_CHARS = 300


@dataclass
class EvalConfig:
    """Everything that decides an evaluation's numbers (and a few things that only decide its speed)."""

    dataset: str
    out: Path
    methods: Sequence[str] = DEFAULT_METHODS
    samples: Sequence[int] = DEFAULT_SAMPLES
    limit: int | None = None
    seed: int = 0
    train_dataset: str | None = None
    options: MethodOptions = field(default_factory=MethodOptions)
    quality_limit: int = 0
    quality_max_new_tokens: int = 2048
    objsize: bool = True
    workers: int | None = None
    cache: str | bool = True  # True: the shared cache; False: none; a path: that SQLite file
    chunk: int = 16
    progress: bool = True
    metric: str = "instcount"  # what methods minimize and results report: "instcount" or "objsize" (bytes)


def _chunks(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


def _log(msg: str) -> None:
    print(f"[eval] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- measuring


def measure_baseline(functions: Sequence[Function], harness: Any, store: JsonlStore,
                     metric: str = "instcount") -> dict[str, dict]:
    """{fid: {instcount_input, instcount_oz, error}} measured with the harness (the no-op list and -Oz);
    with metric "objsize" also objsize_input and objsize_oz (bytes)."""
    sized = metric == "objsize"
    known = {r["fid"]: r for r in store.read() if not sized or "objsize_oz" in r}
    todo = [fn for fn in functions if fn.fid not in known]
    if todo:
        tasks = [(fn.ir, []) for fn in todo] + [(fn.ir, [OZ]) for fn in todo]
        results = harness.evaluate_tasks(tasks, objsize=sized)
        rows = []
        for i, fn in enumerate(todo):
            raw, oz = results[i], results[len(todo) + i]
            error = None if raw.ok and oz.ok else (raw.error or oz.error or "failed")[:_ERROR_CHARS]
            row = {"fid": fn.fid, "instcount_input": raw.instcount, "instcount_oz": oz.instcount, "error": error}
            if sized:
                row.update(objsize_input=raw.objsize, objsize_oz=oz.objsize)
                if error is None and None in (raw.objsize, oz.objsize):
                    row["error"] = "no object size (llc failed)"
            rows.append(row)
        store.append(rows)
        known.update({r["fid"]: r for r in rows})
    return {fn.fid: known[fn.fid] for fn in functions}


def _measure_chunk(harness: Any, method: str, k_max: int,
                   generated: list[tuple[Function, list[Sample], str | None]], metric: str = "instcount") -> list[dict]:
    tasks: list[tuple[str, list[str]]] = []
    index: dict[tuple[str, tuple[str, ...]], int] = {}
    for fn, samples, _ in generated:
        for s in samples:
            key = (fn.fid, tuple(s.passes))
            if key not in index:
                index[key] = len(tasks)
                tasks.append((fn.ir, list(s.passes)))
    results = harness.evaluate_tasks(tasks, objsize=metric == "objsize") if tasks else []
    records = []
    for fn, samples, note in generated:
        cands = []
        for s in samples:
            res = results[index[(fn.fid, tuple(s.passes))]]
            cand = {"passes": list(s.passes), "instcount": res.instcount if res.ok else None,
                    "error": None if res.ok else (res.error or "failed")[:_ERROR_CHARS], "score": s.score}
            if s.logprob is not None:  # the model's log p(list): lets a study reorder candidates offline
                cand["logprob"] = s.logprob
            if metric == "objsize":
                cand["objsize"] = res.objsize if res.ok else None
            cands.append(cand)
        records.append({"method": method, "fid": fn.fid, "n": k_max, "samples": cands, "note": note})
    return records


def run_method(name: str, strategy: Strategy, functions: Sequence[Function], k_max: int, harness: Any,
               store: JsonlStore, done: set[tuple[str, str]], chunk: int = 16, progress: bool = True,
               overlap: bool = True, metric: str = "instcount") -> float:
    """Sample and measure `strategy` on every function not yet in `done`; returns seconds spent sampling."""
    todo = [fn for fn in functions if (name, fn.fid) not in done]
    if not todo:
        return 0.0
    bar = tqdm(total=len(todo), desc=f"{name:>16}", unit="fn", disable=not progress, file=sys.stderr)
    sampling = 0.0
    pending: Future | None = None

    def finish(fut: Future | None) -> None:
        if fut is None:
            return
        records = fut.result()
        store.append(records)
        done.update((name, r["fid"]) for r in records)
        bar.update(len(records))

    with ThreadPoolExecutor(max_workers=1) as pool:
        for part in _chunks(todo, chunk):
            generated = []
            start = time.perf_counter()
            for fn in part:
                note = None
                try:
                    samples = strategy.sample(fn.ir, k_max)[:k_max]
                except PromptTooLongError as err:
                    samples, note = [], f"prompt too long: {err}"
                generated.append((fn, samples, note))
            sampling += time.perf_counter() - start
            if overlap:
                finish(pending)
                pending = pool.submit(_measure_chunk, harness, name, k_max, generated, metric)
            else:
                finish(pool.submit(_measure_chunk, harness, name, k_max, generated, metric))
        finish(pending)
    bar.close()
    return sampling


def chosen_lists(records: dict[tuple[str, str], dict], base: dict[str, dict], ks: Sequence[int]
                 ) -> dict[tuple[str, str, int], list[str] | None]:
    """(method, fid, k) -> the list chosen by instcount without backup (None when no candidate was usable)."""
    out = {}
    for (method, fid), rec in records.items():
        b = base[fid]
        cands = candidates_of(rec)
        for k in ks:
            out[(method, fid, k)] = metrics.outcome_at(cands, k, b["instcount_input"], b["instcount_oz"]).passes
    return out


def measure_objsize(chosen: dict[tuple[str, str, int], list[str] | None], functions: Sequence[Function],
                    harness: Any, store: JsonlStore, progress: bool = True) -> dict[tuple[str, str], int | None]:
    """(fid, json(passes)) -> .text+.data bytes for every chosen list and for -Oz; stored in `store`."""
    known = {(r["fid"], r["passes"]): r["objsize"] for r in store.read()}
    by_fid = {fn.fid: fn for fn in functions}
    wanted = {(fid, json.dumps(p)) for (_, fid, _), p in chosen.items() if p is not None}
    wanted |= {(fn.fid, json.dumps([OZ])) for fn in functions}
    todo = sorted(w for w in wanted if w not in known)
    bar = tqdm(total=len(todo), desc="          objsize", unit="list", disable=not progress or not todo,
               file=sys.stderr)
    for part in _chunks(todo, 64):
        results = harness.evaluate_tasks([(by_fid[fid].ir, json.loads(p)) for fid, p in part], objsize=True)
        rows = [{"fid": fid, "passes": p, "objsize": r.objsize if r.ok else None}
                for (fid, p), r in zip(part, results, strict=True)]
        store.append(rows)
        known.update({(r["fid"], r["passes"]): r["objsize"] for r in rows})
        bar.update(len(part))
    bar.close()
    return known


# ---------------------------------------------------------------- the whole run


def _harness(cfg: EvalConfig) -> Any:
    from llmopt.harness import Harness

    # A path is opened by the harness: a corrupt cache is replaced, an unusable one means no cache.
    return Harness(workers=cfg.workers, cache=cfg.cache)


def _check_request(cfg: EvalConfig) -> None:
    """Bad settings fail in one line before any work (library callers get what the CLI checks)."""
    from llmopt.cli_options import MAX_SAMPLES
    from llmopt.outputs import check_output_dir

    ks = list(cfg.samples)
    if not ks or min(ks) < 1 or max(ks) > MAX_SAMPLES:
        raise MethodError(f"--samples must be integers in [1, {MAX_SAMPLES}], e.g. 1,3,5,10,30,100")
    if cfg.chunk < 1 or (cfg.limit is not None and cfg.limit < 1):
        raise MethodError("--chunk and --limit must be positive numbers of functions")
    if cfg.metric not in METRICS:
        raise MethodError(f"unknown metric {cfg.metric!r}: choose from {', '.join(METRICS)}")
    check_output_dir(str(cfg.out))


def _check_config(cfg: EvalConfig) -> None:
    """Refuse to mix records of a different evaluation into DIR (seed, dataset, limit, model)."""
    path = cfg.out / "config.json"
    ident = {"dataset": cfg.dataset, "limit": cfg.limit, "seed": cfg.seed, "model": cfg.options.model,
             "temperature": cfg.options.temperature, "top_p": cfg.options.top_p,
             "greedy_search_budget": cfg.options.greedy_search_budget, "metric": cfg.metric}
    if not (path.exists() and (cfg.out / RECORDS).exists()):
        store_settings(path, ident)
    elif diff := settings_diff(path, ident, defaults={"metric": "instcount"}):
        raise MethodError(f"{cfg.out} holds an evaluation with other settings {diff}: use another --out "
                          "or delete it")


def _measured_functions(cfg: EvalConfig, functions: list[Function], harness: Any, notes: list[str]
                        ) -> tuple[list[Function], dict[str, dict]]:
    """(functions whose input and -Oz compile, every function's baseline row)."""
    base = measure_baseline(functions, harness, JsonlStore(cfg.out / BASELINE), cfg.metric)
    bad = [fn for fn in functions if base[fn.fid]["error"]]
    if bad:
        notes.append(f"{len(bad)} function(s) dropped: the input or -Oz failed to compile "
                     f"(first: {base[bad[0].fid]['error'].splitlines()[0]})")
        functions = [fn for fn in functions if not base[fn.fid]["error"]]
    if not functions:
        raise InputError(f"nothing to evaluate: {notes[-1] if notes else 'no functions'}")
    return functions, base


def _run_methods(cfg: EvalConfig, methods: Sequence[str], functions: list[Function], factory: MethodFactory,
                 harness: Any, store: JsonlStore, k_max: int, notes: list[str], timings: dict[str, float]
                 ) -> list[str]:
    """Run every method not yet complete in `store`; returns the methods that have records."""
    done = {(r["method"], r["fid"]) for r in store.read() if r.get("n", 0) >= k_max}
    ran: list[str] = []
    for name in methods:
        if all((name, fn.fid) in done for fn in functions):
            ran.append(name)
            continue
        try:
            strategy = factory.build(name)
        except (MethodError, FileNotFoundError) as err:
            notes.append(f"{name}: skipped: {err}")
            if cfg.progress:
                _log(f"{name}: skipped: {err}")
            continue
        targets = functions
        if name == "autotuner":
            targets = [fn for fn in functions if fn.labelled]
        # A strategy that compiles while it samples must not share the harness with a background chunk.
        overlap = not getattr(strategy, "compiles_while_sampling", False)
        timings[name] = run_method(name, strategy, targets, k_max, harness, store, done, cfg.chunk,
                                   cfg.progress, overlap, cfg.metric)
        ran.append(name)
    return ran


def _quality(cfg: EvalConfig, ran: Sequence[str], functions: list[Function], factory: MethodFactory,
             harness: Any, notes: list[str]) -> dict | None:
    if cfg.quality_limit <= 0:
        return None
    if not any(needs_model(m) for m in ran):
        notes.append("code quality: skipped (no model method ran)")
        return None
    from eval import quality as quality_mod

    return quality_mod.run_quality(functions, factory, harness, cfg)


def run_eval(cfg: EvalConfig) -> dict:
    """Evaluate, write results.json + tables + plots + REPORT.md into `cfg.out`; returns the results dict."""
    from eval import report

    _check_request(cfg)
    ks = sorted(set(int(k) for k in cfg.samples))
    k_max = ks[-1]
    methods = expand_methods(cfg.methods)
    functions, described = load_functions(cfg.dataset, cfg.limit, cfg.seed)
    cfg.out.mkdir(parents=True, exist_ok=True)
    _check_config(cfg)
    if cfg.progress:  # --no-progress: only results and errors
        _log(f"{len(functions)} functions from {described}; methods: {', '.join(methods)}; samples: {ks}")
    train = training_rows(cfg.train_dataset, cfg.dataset)
    notes: list[str] = []
    timings: dict[str, float] = {}
    with _harness(cfg) as harness:
        functions, base = _measured_functions(cfg, functions, harness, notes)
        store = JsonlStore(cfg.out / RECORDS)
        options = dataclasses.replace(cfg.options, metric=cfg.metric)  # one metric for every part
        factory = MethodFactory(functions, train, harness, options, cfg.out)
        ran = _run_methods(cfg, methods, functions, factory, harness, store, k_max, notes, timings)
        fids = {fn.fid for fn in functions}
        records = {(r["method"], r["fid"]): r for r in store.read() if r["method"] in ran and r["fid"] in fids}
        if not records:
            raise MethodError("nothing was evaluated: " + (notes[-1] if notes else "no method produced candidates"))
        objsizes: dict[tuple[str, str], int | None] = {}
        if cfg.objsize and cfg.metric == "instcount":  # is instcount an honest proxy for size?
            chosen = chosen_lists(records, base, ks)
            objsizes = measure_objsize(chosen, functions, harness, JsonlStore(cfg.out / OBJSIZE), cfg.progress)
        quality = _quality(cfg, ran, functions, factory, harness, notes)
    if any(not fn.labelled for fn in functions):
        notes.append("inputs without labels: the autotuner row is absent; -Oz and input counts are measured")
    results = aggregate(functions, base, records, ran, ks, objsizes, train, described, cfg)
    results["notes"] = notes
    results["sampling_seconds"] = timings
    if quality is not None:
        results["quality"] = quality
    (cfg.out / "results.json").write_text(json.dumps(results, indent=1, sort_keys=False) + "\n")
    report.write_all(results, cfg.out)
    return results


def config_dict(cfg: EvalConfig) -> dict:
    d = asdict(cfg)
    d["out"] = str(cfg.out)
    return d
