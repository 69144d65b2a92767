"""Phase 0 of a datagen job: compile a work item's units and select its functions.

A work item is one package (so its cap and its later split are decided in one place) or a chunk of
generated programs.  Every defined function is a candidate; candidates are visited in a seeded
random order (not file order, so a capped package is sampled across all its files), extracted,
normalized, and kept when they have at least `min_instructions` instructions and at most `max_tokens`
tokens of the model's tokenizer, until `package_cap` distinct functions of a package are kept.
"""

from __future__ import annotations

import hashlib
import logging
import re
import subprocess
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass

from data_pipeline.compile import (
    MAX_CHARS_PER_TOKEN,
    CompileError,
    Function,
    compile_unit,
    instruction_lines,
    split_unit,
)
from data_pipeline.sources import Unit
from llmopt.llvm.ir import IRError, extract_functions

log = logging.getLogger(__name__)

EXTRACT_CHUNK = 32
BIG_MODULE = 200_000  # characters of IR above which chunked extraction pays
_DEFINE = re.compile(r"^define [^@\n]*@(\"(?:[^\"\\]|\\.)*\"|[\w.$\-]+)\(", re.M)


@dataclass(frozen=True)
class SelectConfig:
    max_tokens: int = 4096
    min_instructions: int = 5
    package_cap: int | None = 1000  # functions kept per package at most (None: all)
    seed: int = 0
    jobs: int = 2  # clang processes at once


def definitions(module_ir: str) -> dict[str, str]:
    """{function name: its `define ... }` text} of a module (cheap: no parsing)."""
    out = {}
    for m in _DEFINE.finditer(module_ir):
        end = module_ir.find("\n}\n", m.start())
        out[m.group(1).strip('"')] = module_ir[m.start(): end + 2 if end >= 0 else len(module_ir)]
    return out


def _order_key(seed: int, uid: str, name: str) -> str:
    return hashlib.sha256(f"{seed}:{uid}:{name}".encode()).hexdigest()


def _compile_all(units: list[Unit], jobs: int, stats: Counter) -> list[tuple[Unit, str]]:
    def one(unit: Unit) -> tuple[Unit, str | None]:
        try:
            return unit, compile_unit(unit, timeout=300)
        except (CompileError, RuntimeError) as err:
            log.info("skip %s", err)
            return unit, None

    compiled = []
    with ThreadPoolExecutor(max(1, jobs)) as pool:
        for unit, module in pool.map(one, units):
            stats["units_compiled" if module is not None else "compile_failed"] += 1
            if module is not None:
                compiled.append((unit, module))
    return compiled


def select_functions(units: Iterable[Unit], cfg: SelectConfig, count_tokens: Callable[[str], int],
                     stats: Counter) -> list[Function]:
    """The item's kept functions, distinct, in the seeded order, at most `package_cap` per package."""
    compiled = _compile_all(list(units), cfg.jobs, stats)
    candidates = _candidates(compiled, cfg, stats)
    kept: list[Function] = []
    per_package: Counter = Counter()
    hashes: set[str] = set()
    groups = {unit.group for unit, _ in compiled}
    capped = lambda group: cfg.package_cap is not None and per_package[group] >= cfg.package_cap  # noqa: E731
    # Extraction is the expensive step: a batch at a time, so a package stops costing once it is full.
    batch = max(64, (cfg.package_cap or 256) // 2)
    for start in range(0, len(candidates), batch):
        if cfg.package_cap is not None and all(capped(g) for g in groups):
            stats["over_cap"] += len(candidates) - start
            break
        open_ = [c for c in candidates[start: start + batch] if not capped(compiled[c[1]][0].group)]
        extracted = _extract(compiled, open_, cfg, count_tokens, stats)
        for _, i, name in open_:
            fn = extracted.get((i, name))
            if fn is None:
                continue
            if fn.ir_hash in hashes:
                stats["duplicates"] += 1
            elif capped(fn.unit.group):
                stats["over_cap"] += 1
            else:
                hashes.add(fn.ir_hash)
                per_package[fn.unit.group] += 1
                kept.append(fn)
    stats["selected"] += len(kept)
    return kept


def _candidates(compiled: list[tuple[Unit, str]], cfg: SelectConfig, stats: Counter) -> list[tuple[str, int, str]]:
    """(order key, unit index, name) of every definition that may fit, in the seeded order."""
    candidates = []
    for i, (unit, module) in enumerate(compiled):
        for name, text in definitions(module).items():
            # Cheap filters before extraction: the raw body bounds the normalized one from above.
            if len(text) * 0.6 > cfg.max_tokens * MAX_CHARS_PER_TOKEN:
                stats["too_long"] += 1
            elif instruction_lines(text) < cfg.min_instructions:
                stats["too_short"] += 1
            else:
                candidates.append((_order_key(cfg.seed, unit.uid, name), i, name))
    candidates.sort()
    return candidates


def _extract(compiled: list[tuple[Unit, str]], wanted: list[tuple[str, int, str]], cfg: SelectConfig,
             count_tokens: Callable[[str], int], stats: Counter) -> dict[tuple[int, str], Function]:
    """{(unit index, name): function} of the `wanted` candidates that pass the filters.

    llvm-extract runs once a function, in `jobs` threads (the tokenizer is thread-safe), on chunks of
    EXTRACT_CHUNK functions first extracted together: it parses its whole input each time."""
    by_unit: dict[int, list[str]] = defaultdict(list)
    for _, i, name in wanted:
        by_unit[i].append(name)
    chunks = [(i, names[k: k + EXTRACT_CHUNK]) for i, names in by_unit.items()
              for k in range(0, len(names), EXTRACT_CHUNK)]

    def extract(chunk: tuple[int, list[str]]) -> tuple[int, list[Function], Counter]:
        i, names = chunk
        unit, module = compiled[i]
        own: Counter = Counter()  # one per thread: Counter updates are not atomic
        if len(module) > BIG_MODULE and len(names) > 1:
            try:
                module = extract_functions(module, names)
            except (IRError, subprocess.TimeoutExpired):
                pass  # each function is then tried (and counted) on its own
        return i, split_unit(unit, module, cfg.max_tokens, own, count_tokens, cfg.min_instructions, names), own

    extracted = {}
    with ThreadPoolExecutor(max(1, cfg.jobs)) as pool:
        for i, fns, own in pool.map(extract, chunks):
            stats.update(own)
            for fn in fns:
                extracted[(i, fn.name)] = fn
    return extracted


def function_record(fn: Function) -> dict:
    """What phase 0 stores per function (JSON): everything later phases and the dataset need."""
    return {"name": fn.name, "ir": fn.ir, "ir_hash": fn.ir_hash, "n_tokens": fn.n_tokens,
            "source": fn.unit.source, "package": fn.unit.group, "license": fn.unit.license,
            "unit": fn.unit.uid, "runnable": fn.unit.runnable,
            "unit_spec": asdict(fn.unit) if fn.unit.runnable else None}
