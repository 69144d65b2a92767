"""The compile-and-measure harness for pass lists: cached, crash-isolated, with timeouts.

    harness = Harness()
    result = harness.evaluate(ir, ["default<Oz>"])          # EvalResult(ok=True, instcount=14, ...)
    results = harness.evaluate_many(ir, [["sroa"], ["licm", "gvn"]])

Every caller (datagen's autotuner, predict, eval, training's validation) measures through this.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from llmopt.harness.cache import ResultCache, make_key, open_cache
from llmopt.harness.pool import TaskOutcome, WorkerPool
from llmopt.llvm.ir import ir_hash
from llmopt.llvm.passes import META_PASSES, OZ, UnknownPassError, build_pipeline
from llmopt.llvm.toolchain import find_toolchain

_WORKER = "llmopt.harness.llvm_worker:evaluate"


def _metric(want_ir: bool, objsize: bool) -> str:
    """What a cached value holds: part of its key (a value without IR cannot answer a want_ir call)."""
    return ("instcount+ir" if want_ir else "instcount") + ("+objsize" if objsize else "")


@dataclass
class EvalResult:
    """One measured pass list. `ok` False means the list is unusable; `error` says why."""

    passes: list[str]
    ok: bool
    instcount: int | None = None
    objsize: int | None = None
    error: str | None = None
    ir: str | None = None
    cached: bool = False
    crashed: bool = False


@dataclass
class HarnessStats:
    evaluations: int = 0  # compilations actually run
    cache_hits: int = 0
    failures: int = 0
    crashes: int = field(default=0)


class Harness:
    """Measure pass lists on IR with the in-process libLLVM path inside a worker pool."""

    def __init__(self, workers: int | None = None, timeout: float = 20.0,
                 cache: ResultCache | bool | str | Path | None = True,
                 version: int | None = None, batch_size: int = 8):
        self.version = find_toolchain(version).version
        self.pool = WorkerPool(_WORKER, workers=workers, timeout=timeout, batch_size=batch_size)
        if cache is True or isinstance(cache, str | Path):
            cache = open_cache(None if cache is True else cache)  # unusable: None, with a warning
        self.cache: ResultCache | None = cache if isinstance(cache, ResultCache) else None
        self.stats = HarnessStats()

    def _key(self, digest: str, pipeline: str, metric: str) -> str:
        return make_key("passes", self.version, digest, pipeline, metric)

    def evaluate(self, ir: str, passes: list[str], want_ir: bool = False, objsize: bool = False) -> EvalResult:
        return self.evaluate_many(ir, [passes], want_ir=want_ir, objsize=objsize)[0]

    def oz(self, ir: str, want_ir: bool = False) -> EvalResult:
        """The -Oz baseline: `default<Oz>` by the same LLVM."""
        return self.evaluate(ir, [OZ], want_ir=want_ir)

    def evaluate_many(self, ir: str, pass_lists: list[list[str]], want_ir: bool = False,
                      objsize: bool = False) -> list[EvalResult]:
        """Measure every pass list on `ir`; results in the same order. Duplicates compile once."""
        return self.evaluate_tasks([(ir, p) for p in pass_lists], want_ir=want_ir, objsize=objsize)

    def evaluate_pipeline(self, ir: str, pipeline: str, want_ir: bool = False, objsize: bool = False) -> EvalResult:
        """Measure any `opt -passes=` string (a user's pipeline need not come from the vocabulary).

        Cached under the same key as a pass list whose `build_pipeline` is this string. The result's
        `passes` is empty: the pipeline is the one given."""
        key = self._key(ir_hash(ir), pipeline, _metric(want_ir, objsize))
        payload = {"ir": ir, "pipeline": pipeline, "version": self.version, "want_ir": want_ir, "objsize": objsize}
        value, cached, crashed = self._measure([key], lambda _: payload)[key]
        self.stats.cache_hits += cached
        result = self._from_value([], value, cached=cached, crashed=crashed)
        self.stats.failures += not result.ok
        return result

    def evaluate_tasks(self, tasks: list[tuple[str, list[str]]], want_ir: bool = False,
                       objsize: bool = False) -> list[EvalResult]:
        """Measure (ir, passes) pairs that may belong to different inputs (batch evaluation)."""
        metric = _metric(want_ir, objsize)
        results: list[EvalResult | None] = [None] * len(tasks)
        keys: list[str | None] = [None] * len(tasks)
        digests: dict[int, str] = {}
        pipelines: list[str | None] = [None] * len(tasks)
        for i, (ir, passes) in enumerate(tasks):
            try:
                pipelines[i] = build_pipeline(passes, self.version)
            except UnknownPassError as err:
                results[i] = EvalResult(list(passes), False, error=str(err))
                continue
            digest = digests.setdefault(id(ir), ir_hash(ir))
            keys[i] = self._key(digest, pipelines[i], metric)
        first: dict[str, int] = {}  # each distinct key is measured once, for its first task
        for i, key in enumerate(keys):
            if key:
                first.setdefault(key, i)
        measured = self._measure(list(first), lambda k: self._payload(tasks[first[k]], pipelines[first[k]],
                                                                      want_ir, objsize))
        for i, key in enumerate(keys):
            if key:
                value, cached, crashed = measured[key]
                results[i] = self._from_value(tasks[i][1], value, cached=cached, crashed=crashed)
                self.stats.cache_hits += cached
        for r in results:
            if r is not None and not r.ok:
                self.stats.failures += 1
        return results  # type: ignore[return-value]

    def evaluate_per_function(self, ir: str, lists: list[tuple[str, list[str]]], want_ir: bool = False
                              ) -> EvalResult:
        """Optimize each named function of `ir` with its own pass list, in one module (cached).

        `lists` is [(function name, passes)], applied in that order; see `llmopt.llvm.per_function`.
        The result's `passes` is empty: the lists are the ones given.
        """
        metric = "instcount+ir" if want_ir else "instcount"
        try:
            steps = [(name, build_pipeline(passes, self.version) if passes else "") for name, passes in lists]
        except UnknownPassError as err:
            return EvalResult([], False, error=str(err))
        key = make_key("per-function", self.version, ir_hash(ir), steps, metric)
        payload = {"ir": ir, "pipeline": "", "version": self.version, "want_ir": want_ir, "objsize": False,
                   "per_function": steps}
        value, cached, crashed = self._measure([key], lambda _: payload)[key]
        self.stats.cache_hits += cached
        result = self._from_value([], value, cached=cached, crashed=crashed)
        if not result.ok:
            self.stats.failures += 1
        return result

    def _measure(self, keys: list[str], payload_of: Callable[[str], dict]) -> dict[str, tuple[dict, bool, bool]]:
        """{key: (value, cached, crashed)} for distinct `keys`: from the cache, else compiled once on the pool.

        Crashes and timeouts may be the machine's fault, so they are not memoized.
        """
        out: dict[str, tuple[dict, bool, bool]] = {}
        if self.cache is not None:
            out = {key: (value, True, False) for key, value in self.cache.get_many(keys).items()}
        todo = [k for k in keys if k not in out]
        outcomes = self.pool.run([payload_of(k) for k in todo]) if todo else []
        fresh: dict[str, dict] = {}
        for key, outcome in zip(todo, outcomes, strict=True):
            value = self._value_of(outcome)
            self.stats.evaluations += 1
            if outcome.crashed:
                self.stats.crashes += 1
            else:
                fresh[key] = value
            out[key] = (value, False, outcome.crashed)
        if self.cache is not None and fresh:
            self.cache.put_many(fresh)
        return out

    def _payload(self, task: tuple[str, list[str]], pipeline: str, want_ir: bool, objsize: bool) -> dict:
        ir, passes = task
        payload = {"ir": ir, "pipeline": pipeline, "version": self.version, "want_ir": want_ir, "objsize": objsize}
        if passes and passes[0] in META_PASSES:
            # Workers memoize the module after the meta-pass: the rest runs on a clone of it.
            payload["prefix"] = build_pipeline(passes[:1], self.version)
            payload["rest"] = build_pipeline(passes[1:], self.version) if len(passes) > 1 else ""
        return payload

    @staticmethod
    def _value_of(outcome: TaskOutcome) -> dict:
        if not outcome.ok:
            return {"error": outcome.error}
        return outcome.value

    @staticmethod
    def _from_value(passes: list[str], value: dict, cached: bool = False, crashed: bool = False) -> EvalResult:
        if "error" in value:
            return EvalResult(list(passes), False, error=value["error"], cached=cached, crashed=crashed)
        return EvalResult(list(passes), True, instcount=value["instcount"], objsize=value.get("objsize"),
                          ir=value.get("ir"), cached=cached)

    def close(self) -> None:
        self.pool.close()

    def __enter__(self) -> Harness:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
