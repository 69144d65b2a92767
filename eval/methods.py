"""The methods an evaluation compares, each a `llmopt.sampling` strategy: `sample(ir, n) -> list[Sample]`.

Names (`--methods`):
  greedy, nucleus, nucleus_t{T}, priority, priority_{noregex,geomean,branch3,branch5,geomean_branch3,...},
  feedback, feedback_{fast,short,long}                          the model (`--model`)
  random, coreset                                              llmopt.sampling baselines
  coreset_cover   set-cover ranking of the training set's best lists (each next list adds most savings)
  greedy_search   append the best pass while it helps (budget-limited; optional)
  M_polishK       K samples of method M, then greedy polish of the best (sample k = k-th compilation),
                  e.g. priority_polish10: model-seeded search
  autotuner       the dataset's label (compilations: the autotuner's own search budget)
  oz              -Oz itself (improvement 0 by definition: a sanity row)
Groups: `model` = greedy,nucleus,priority; `baselines` = random,coreset,coreset_cover,autotuner,oz;
`ablations` = the Table 6.1 Priority Sampling variants.

Every name but eval's own (`EVAL_METHODS`) comes from `llmopt.sampling.registry`, the one that
`llmopt predict` reads too; `NAME_polishK` works for both kinds.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eval.inputs import Function
from llmopt.errors import LlmoptError
from llmopt.llvm.ir import ir_hash
from llmopt.llvm.passes import META_PASSES, OZ
from llmopt.metrics import metric_value
from llmopt.sampling.base import Sample, Strategy
from llmopt.sampling.config import DEFAULTS, SamplingConfig
from llmopt.sampling.registry import is_known as registry_is_known
from llmopt.sampling.registry import needs_model, split_polish, strategy_from_name

GROUPS = {
    "model": ("greedy", "nucleus", "priority"),
    "baselines": ("random", "coreset", "coreset_cover", "autotuner", "oz"),
    "ablations": ("priority_noregex", "priority_geomean", "priority_branch3", "priority_branch5",
                  "priority_geomean_branch3", "priority_geomean_branch5"),
    "feedback_all": ("feedback_fast", "feedback_short", "feedback_long"),
}
DEFAULT_METHODS = ("greedy", "nucleus", "priority", "random", "coreset", "coreset_cover", "autotuner", "oz")
EVAL_METHODS = ("coreset_cover", "greedy_search", "autotuner", "oz")  # the methods only eval has
_UNPOLISHABLE = ("autotuner", "oz", "greedy_search")  # one fixed answer, or a search already


class MethodError(ValueError, LlmoptError):
    """A method name that is unknown or cannot run with the given inputs."""


def expand_methods(names: Sequence[str]) -> list[str]:
    """Group names expanded, duplicates dropped, order kept; unknown names raise MethodError."""
    out: list[str] = []
    for name in names:
        for item in GROUPS.get(name, (name,)):
            if not is_known(item):
                raise MethodError(f"unknown method {item!r}: choose from greedy, nucleus[_tT], priority[_ablation], "
                                  "feedback[_fast|_short|_long], random, coreset, coreset_cover, greedy_search, METHOD_polishK, "
                                  "autotuner, oz, or the groups " + ", ".join(GROUPS))
            if item not in out:
                out.append(item)
    return out


def is_known(name: str) -> bool:
    """A `llmopt.sampling.registry` name or an eval method (`EVAL_METHODS`), polished forms included."""
    if polish := split_polish(name):
        return polish[1] >= 1 and polish[0] not in _UNPOLISHABLE and is_known(polish[0])
    return registry_is_known(name, EVAL_METHODS)


# ---------------------------------------------------------------- model-free methods owned by eval


class OzOnly:
    """-Oz as a method: one sample, `default<Oz>`."""

    name = "oz"

    def sample(self, ir: str, n: int) -> list[Sample]:
        return [Sample([OZ], None)] if n > 0 else []


class AutotunerLabels:
    """The dataset's best-found pass list for each input (one sample); unknown inputs get none."""

    name = "autotuner"

    def __init__(self, functions: Sequence[Function]):
        self.labels = {fn.ir: fn.passes for fn in functions if fn.passes is not None}
        self.evaluations = {fn.fid: fn.evaluations for fn in functions}

    def sample(self, ir: str, n: int) -> list[Sample]:
        passes = self.labels.get(ir)
        return [Sample(list(passes), None)] if passes is not None and n > 0 else []

    def compilations(self, fn: Function) -> int | None:
        """The autotuner's search budget for this function (dataset column `evaluations`)."""
        return self.evaluations.get(fn.fid)


Measure = Callable[[list[tuple[str, list[str]]]], list[Any]]  # Harness.evaluate_tasks


def coreset_candidates(labels: Sequence[Sequence[str]], n: int) -> list[list[str]]:
    """The `n` most frequent training labels, and -Oz: what `coreset_cover` ranks (and `priority_lists` orders)."""
    from llmopt.sampling.baselines import Coreset

    candidates = Coreset(labels).lists[:n]
    return candidates if [OZ] in candidates else candidates + [[OZ]]


@dataclass
class SetCoverCoreset:
    """A coreset ranked by set cover on the training set (Coreset-NVP's core set, without the NVP).

    Candidates are the `n_candidates` most frequent best lists of the training set (plus -Oz); each
    is compiled on up to `n_train` training functions.  The ranking starts from "nothing chosen"
    (every function at its unoptimized count) and repeatedly takes the list that lowers the summed
    best-so-far count the most; a failed list counts as the unoptimized input.  The ranking is the
    same for every input.  `cache_file` keeps it across runs.
    """

    train_rows: Sequence[dict]
    measure: Measure
    n_candidates: int = 100
    n_train: int = 300
    seed: int = 0
    cache_file: Path | None = None
    metric: str = "instcount"  # "objsize": ranked by bytes (measure must then report objsize)
    name: str = "coreset_cover"
    lists: list[list[str]] = field(default_factory=list)
    gains: list[int] = field(default_factory=list)

    def build(self) -> list[list[str]]:

        key = {"n_candidates": self.n_candidates, "n_train": self.n_train, "seed": self.seed,
               "train": sorted(r.get("ir_hash") or ir_hash(r["ir"]) for r in self.train_rows)[:50]}
        if self.metric != "instcount":  # (absent for instcount: rankings saved before stay valid)
            key["metric"] = self.metric
        if self.cache_file is not None and self.cache_file.exists():
            saved = json.loads(self.cache_file.read_text())
            if saved.get("key") == key:
                self.lists, self.gains = saved["lists"], saved["gains"]
                return self.lists
        rows = [r for r in self.train_rows if r.get("passes") is not None]
        if not rows:
            raise MethodError("coreset_cover needs a training split with pass lists (--train-dataset)")
        candidates = coreset_candidates([r["passes"] for r in rows], self.n_candidates)
        rows = sorted(rows, key=lambda r: r.get("ir_hash") or ir_hash(r["ir"]))
        if len(rows) > self.n_train:
            rows = random.Random(self.seed).sample(rows, self.n_train)
        tasks = [(r["ir"], []) for r in rows] + [(r["ir"], c) for c in candidates for r in rows]
        results = self.measure(tasks)
        base = [metric_value(res, self.metric) if res.ok else int(r["instcount_input"])
                for r, res in zip(rows, results, strict=False)]
        counts = []
        for ci in range(len(candidates)):
            part = results[len(rows) * (ci + 1): len(rows) * (ci + 2)]
            counts.append([metric_value(res, self.metric) if res.ok else b for res, b in zip(part, base, strict=True)])
        current = list(base)
        remaining = list(range(len(candidates)))
        order, gains = [], []
        while remaining:
            best_ci, best_gain = remaining[0], -1
            for ci in remaining:  # ties: the earlier (more frequent) list
                gain = sum(max(0, cur - c) for cur, c in zip(current, counts[ci], strict=True))
                if gain > best_gain:
                    best_ci, best_gain = ci, gain
            order.append(best_ci)
            gains.append(best_gain)
            remaining.remove(best_ci)
            current = [min(cur, c) for cur, c in zip(current, counts[best_ci], strict=True)]
        self.lists = [candidates[i] for i in order]
        self.gains = gains
        if self.cache_file is not None:
            self.cache_file.write_text(json.dumps({"key": key, "lists": self.lists, "gains": self.gains}))
        return self.lists

    def sample(self, ir: str, n: int) -> list[Sample]:
        if not self.lists:
            self.build()
        return [Sample(list(p), None) for p in self.lists[:n]]


class GreedySearch:
    """Greedy search: start from the empty list, append the pass that lowers the count most; stop when
    nothing helps or the budget of compilations is spent.  Samples are the lists in compile order."""

    name = "greedy_search"
    compiles_while_sampling = True

    def __init__(self, measure: Callable[[str, list[list[str]]], list[Any]], passes: Sequence[str] | None = None,
                 budget: int = 300, max_len: int = 12, metric: str = "instcount"):
        if passes is None:
            from llmopt.llvm.passes import vocabulary

            passes = vocabulary()
        self.steps = [p for p in passes if p not in META_PASSES]
        # A meta-pass may only start a list; -Oz first so that the first sample is the baseline.
        self.first = [OZ] + [p for p in META_PASSES if p != OZ] + self.steps
        self.measure = measure
        self.budget = budget
        self.max_len = max_len
        self.metric = metric

    def sample(self, ir: str, n: int) -> list[Sample]:
        n = min(n, self.budget)
        out: list[Sample] = []
        current: list[str] = []
        best = None
        while len(out) < n and len(current) < self.max_len:
            options = self.first if not current else self.steps
            lists = [current + [p] for p in options][: n - len(out)]
            results = self.measure(ir, lists)
            out += [Sample(p, None) for p in lists]
            scored = [(metric_value(r, self.metric), i) for i, r in enumerate(results) if r.ok]
            if not scored:
                break
            count, i = min(scored)
            if best is not None and count >= best:
                break
            best, current = count, lists[i]
        return out


@dataclass
class MethodOptions:
    seed: int = 0
    model: str | None = None
    temperature: float = DEFAULTS.temperature
    top_p: float = DEFAULTS.top_p
    greedy_search_budget: int = 300
    coreset_candidates: int = 100
    coreset_train: int = 300
    feedback_rounds: int = 2
    threads: int | None = None
    max_passes: int = DEFAULTS.max_passes  # longest pass list the model may generate
    metric: str = "instcount"  # what the searching baselines (greedy_search, coreset_cover) minimize
    list_vocabulary: str | None = None  # priority_lists: a lists file (default: coreset_cover's candidates)
    prefill_dtype: str = "float32"  # how prompts are encoded (llmopt.sampling.lm._prefill_copy)


class MethodFactory:
    """Builds methods by name; loads the model once, on first need."""

    def __init__(self, functions: Sequence[Function], train_rows: Sequence[dict], harness: Any,
                 options: MethodOptions, out_dir: Path | None = None):
        self.functions = functions
        self.train_rows = train_rows
        self.harness = harness
        self.options = options
        self.out_dir = out_dir
        self._lm: Any = None

    @property
    def lm(self) -> Any:
        if self._lm is None:
            from llmopt.sampling import PassListLM

            self._lm = PassListLM.load(self.options.model, threads=self.options.threads,
                                      max_passes=self.options.max_passes, prefill_dtype=self.options.prefill_dtype)
        return self._lm

    def build(self, name: str) -> Strategy:
        """The method `name`: eval's own here, every other name (and any `NAME_polishK`) from the registry."""
        o = self.options
        if name == "oz":
            return OzOnly()
        if name == "autotuner":
            if not any(fn.labelled for fn in self.functions):
                raise MethodError("autotuner: the inputs have no labels (a .ll directory): leave it out")
            return AutotunerLabels(self.functions)
        if name == "coreset_cover":
            cache = self.out_dir / "coreset_cover.json" if self.out_dir else None
            sized = o.metric == "objsize"
            method = SetCoverCoreset(self.train_rows, lambda tasks: self.harness.evaluate_tasks(tasks, objsize=sized),
                                     o.coreset_candidates, o.coreset_train, o.seed, cache, o.metric)
            if not self.train_rows:
                raise MethodError("coreset_cover needs a training split: pass --train-dataset PATH[:split]")
            method.build()
            return method
        if name == "greedy_search":
            sized = o.metric == "objsize"
            return GreedySearch(lambda ir, lists: self.harness.evaluate_many(ir, lists, objsize=sized),
                                budget=o.greedy_search_budget, metric=o.metric)
        return self._from_registry(name)

    def list_vocabulary(self) -> list[list[str]]:
        """The lists `priority_lists` ranks: `--list-vocabulary FILE`, else the same candidates as
        `coreset_cover` (the most frequent training labels, and -Oz), so the two differ only in the order."""
        from llmopt.sampling.baselines import read_list_vocabulary

        if self.options.list_vocabulary:
            try:
                return read_list_vocabulary(self.options.list_vocabulary)
            except ValueError as err:
                raise MethodError(str(err)) from None
        labels = [r["passes"] for r in self.train_rows if r.get("passes") is not None]
        if not labels:
            raise MethodError("priority_lists needs a training split with pass lists (--train-dataset) "
                              "or --list-vocabulary FILE")
        return coreset_candidates(labels, self.options.coreset_candidates)

    def _from_registry(self, name: str) -> Strategy:
        o = self.options
        lists = [r["passes"] for r in self.train_rows if r.get("passes") is not None]
        if name == "coreset" and not lists:
            raise MethodError("coreset needs a training split with pass lists: pass --train-dataset PATH[:split]")
        config = SamplingConfig(temperature=o.temperature, top_p=o.top_p, seed=o.seed, max_passes=o.max_passes)
        vocabulary = self.list_vocabulary() if "_lists" in name else None
        try:
            return strategy_from_name(name, lm=self.lm if needs_model(name) else None, config=config,
                                      harness=self.harness, metric=o.metric, train_pass_lists=lists,
                                      feedback_rounds=o.feedback_rounds, build=self.build,
                                      list_vocabulary=vocabulary)
        except ValueError as err:
            raise MethodError(str(err)) from None
