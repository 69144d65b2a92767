"""Candidates -> verification by the real compiler -> the answer (never worse than -Oz with the backup).

    with Harness() as h:
        fp = predict_function(ir, PrioritySampling(lm), 10, h)          # one function
        mp = predict_module(module_ir, PrioritySampling(lm), 10, h)     # every function + a module answer

Every distinct candidate pass list is compiled once by the harness (cached); the answer is the
list with the fewest instructions.  `-Oz` (`default<Oz>`) is always evaluated too, so the answer
is never worse than -Oz unless `oz_backup=False` (then it is the best model candidate, or the
unchanged input if none compiles).

Module-level answer (`predict_module`): each defined function is extracted (`split_functions`)
and predicted on its own, as the model was trained.  The written module is the better (fewer
instructions, measured by the harness on the whole module) of two ways to apply the answers:

* "single-list": the whole input optimized by ONE pass list, the best of the per-function winners
  and -Oz.  Inter-procedural passes (inlining of static callees, globals) see the whole module;
* "per-function": every function optimized with its own winner in the same module, the others
  frozen meanwhile (`llmopt.llvm.per_function`), so a win found for one function is not lost to
  the list chosen for another.  No inlining across functions happens in this mode.

Both are plain `opt` passes (plus temporary attributes) on the input, so any `opt` accepts the output
and the module keeps its symbols and ABI.

The model reads each function normalized (`normalize_ir`, as it was trained) but candidates are
measured on the function as `llvm-extract` gives it, with its target attributes, so every printed
`pipeline` reproduces its count with `llvm-extract --func=F in.ll | opt -passes='PIPELINE'`.

`metric="objsize"` chooses by .text+.data bytes (instructions break ties) instead of instructions;
the -Oz backup then makes the answer never larger than -Oz in bytes.  The module's bytes are
measured for -Oz and the answer under either metric, so a caller can say when fewer instructions
cost bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from llmopt.llvm.passes import OZ, build_pipeline
from llmopt.metrics import METRICS
from llmopt.sampling.base import PromptTooLongError, Sample, Strategy, distinct


@dataclass
class Candidate:
    """One distinct pass list compiled for a function; `rank` is its place in the strategy's order
    (1 = most likely), None for the -Oz backup the model did not propose."""

    passes: list[str]
    rank: int | None
    instcount: int | None
    objsize: int | None = None
    error: str | None = None

    @classmethod
    def of(cls, passes: list[str], rank: int | None, result: Any) -> Candidate:
        if result is None or not result.ok:
            return cls(list(passes), rank, None, None, result.error if result is not None else "not compiled")
        return cls(list(passes), rank, result.instcount, result.objsize)

    def to_json(self) -> dict[str, Any]:
        return {"passes": self.passes, "rank": self.rank, "instcount": self.instcount, "objsize": self.objsize,
                "error": self.error}


@dataclass
class FunctionPrediction:
    """The verified answer for one function (a single-function module)."""

    name: str
    instcount_input: int | None
    instcount_oz: int | None
    instcount_result: int | None
    passes: list[str]
    compilations: int                      # distinct pass lists compiled for it (-Oz included)
    samples: list[Sample] = field(default_factory=list)
    source: str = "model"                  # "model", "oz-backup", "input" (nothing compiled / no backup)
    note: str | None = None
    ir: str | None = None                  # optimized IR (when asked for)
    pipeline: str = ""                     # the `opt -passes=` string of `passes`
    objsize_input: int | None = None       # .text+.data bytes, measured with metric="objsize" only
    objsize_oz: int | None = None
    objsize_result: int | None = None
    candidates: list[Candidate] = field(default_factory=list)

    def to_json(self, candidates: bool = False) -> dict[str, Any]:
        out = {"name": self.name, "instcount_input": self.instcount_input, "instcount_oz": self.instcount_oz,
               "instcount_result": self.instcount_result, "objsize_input": self.objsize_input,
               "objsize_oz": self.objsize_oz, "objsize_result": self.objsize_result, "passes": self.passes,
               "pipeline": self.pipeline, "compilations": self.compilations, "source": self.source,
               "note": self.note}
        if candidates:
            out["candidates"] = [c.to_json() for c in self.candidates]
        return out


@dataclass
class ModulePrediction:
    """Per-function answers plus the module written with one pass list (see module docstring)."""

    functions: list[FunctionPrediction]
    instcount_input: int | None
    instcount_oz: int | None
    instcount_result: int | None
    passes: list[str]                      # the list applied to the whole module ("single-list" mode)
    compilations: int
    ir: str | None = None
    notes: list[str] = field(default_factory=list)
    mode: str = "single-list"              # or "per-function": each function its own `functions[i].passes`
    pipeline: str | None = None            # `opt -passes=` string of `passes`; None in per-function mode
    metric: str = "instcount"
    objsize_input: int | None = None       # .text+.data bytes of the whole module (None if codegen failed)
    objsize_oz: int | None = None
    objsize_result: int | None = None


def _score(result: Any, metric: str) -> tuple[int, ...] | None:
    """What the answer minimizes (None: unusable): instructions, or bytes then instructions."""
    if result is None or not result.ok:
        return None
    if metric == "objsize":
        return None if result.objsize is None else (result.objsize, result.instcount)
    return (result.instcount,)


def _draw(strategy: Strategy, ir: str, n: int) -> tuple[list[Sample], str | None]:
    """(samples, note); a prompt longer than the model's context gives no samples and a note."""
    try:
        return strategy.sample(ir, n), None
    except PromptTooLongError as err:
        return [], f"too long for the model ({err}): -Oz used"


def _choose(name: str, samples: list[Sample], note: str | None, results: dict[tuple[str, ...], Any],
            oz_backup: bool, metric: str, version: int | None) -> FunctionPrediction:
    """The best verified candidate by `metric` (model order breaks ties; -Oz last)."""
    lists = distinct(samples)
    noop, oz = results[()], results.get((OZ,))
    candidates = [Candidate.of(p, rank, results[tuple(p)]) for rank, p in enumerate(lists, 1)]
    if [OZ] not in lists:
        candidates.append(Candidate.of([OZ], None, oz))
    best, best_score, source = None, None, "model"
    for passes in lists:
        score = _score(results[tuple(passes)], metric)
        if score is not None and (best_score is None or score < best_score):
            best, best_score = passes, score
    oz_score = _score(oz, metric)
    if oz_backup and oz_score is not None and (best_score is None or oz_score < best_score):
        best, source = [OZ], "oz-backup"
    if best is None:  # nothing compiled and no backup: the input stays as it is (the no-op result)
        best, source = [], "input"
    chosen = results[tuple(best)]

    def value(r: Any, attr: str) -> int | None:
        return getattr(r, attr) if r is not None and r.ok else None

    return FunctionPrediction(
        name, value(noop, "instcount"), value(oz, "instcount"), value(chosen, "instcount"), list(best),
        len({tuple(p) for p in lists} | {(OZ,)}), samples, source, note, chosen.ir if chosen.ok else None,
        build_pipeline(best, version), value(noop, "objsize"), value(oz, "objsize"), value(chosen, "objsize"),
        candidates)


def predict_many(irs: Sequence[str], strategy: Strategy, n: int, harness: Any, *, oz_backup: bool = True,
                 names: Sequence[str] | None = None, want_ir: bool = False, prompts: Sequence[str] | None = None,
                 metric: str = "instcount", on_sampled: Callable[[str], None] | None = None,
                 polish: int = 0) -> list[FunctionPrediction]:
    """Predict every IR (single-function modules): sample each, then verify all candidates in one batch.

    `prompts` (default: `irs`) is what the strategy reads for each IR, e.g. its normalized text;
    candidates are always measured on `irs`.  `on_sampled(name)` is called after each function is
    sampled (progress).  One `evaluate_tasks` call spreads the compilations over the worker pool.
    `polish` > 0 refines the best verified candidates with greedy steps (llmopt.sampling.polish),
    spending at most that many more compilations per function.
    """
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; expected one of {', '.join(METRICS)}")
    names = list(names) if names is not None else [f"f{i}" for i in range(len(irs))]
    prompts = list(prompts) if prompts is not None else list(irs)
    drawn, orders = [], []
    for name, prompt in zip(names, prompts, strict=True):
        drawn.append(_draw(strategy, prompt, n))
        orders.append(_model_order(strategy) if polish else None)
        if on_sampled is not None:
            on_sampled(name)
    tasks: list[tuple[str, list[str]]] = []
    owners: list[tuple[int, tuple[str, ...]]] = []
    for i, (ir, (samples, _)) in enumerate(zip(irs, drawn, strict=True)):
        # [] = the no-op pipeline: the input count, measured like every other count.
        for passes in {tuple(p): p for p in [[], *distinct(samples), [OZ]]}.values():
            tasks.append((ir, passes))
            owners.append((i, tuple(passes)))
    measured = harness.evaluate_tasks(tasks, want_ir=want_ir, objsize=metric == "objsize")
    per: list[dict[tuple[str, ...], Any]] = [{} for _ in irs]
    for (i, key), result in zip(owners, measured, strict=True):
        per[i][key] = result
    polished = [_polish(ir, results, polish, harness, metric, want_ir, order) if polish else None
                for ir, results, order in zip(irs, per, orders, strict=True)]
    out = []
    for i, (samples, note) in enumerate(drawn):
        found = polished[i]
        if found is not None and tuple(found.passes) not in {tuple(s.passes) for s in samples}:
            samples = [*samples, Sample(list(found.passes), None, "polish")]
        fp = _choose(names[i], samples, note, per[i], oz_backup, metric, harness.version)
        if found is not None:
            fp.compilations += found.compilations
            if fp.passes == found.passes and found.compilations and found.improved:
                fp.source = "polish"
        out.append(fp)
    return out


def _model_order(strategy: Strategy) -> Any:
    """The polish's model-guided pass order for the IR `strategy` just sampled (None: not a tree decoder)."""
    from llmopt.sampling.polish import model_order

    decoder = getattr(strategy, "last_decoder", None)
    if decoder is None:
        return None
    decoder.release_cache()  # kept until the whole batch is verified: its memo, not megabytes of cache
    return model_order(decoder)


def _polish(ir: str, results: dict[tuple[str, ...], Any], budget: int, harness: Any, metric: str,
            want_ir: bool, order: Any = None) -> Any:
    """Greedy refinement of the verified lists (model-guided when `order` is given); its best list is
    measured into `results`.  Walks start from every verified list, best first, while the budget lasts
    (as `llmopt eval`'s METHOD_polishK does): once the best walks converge, the budget goes on."""
    from llmopt.llvm.passes import vocabulary
    from llmopt.sampling.polish import Polisher

    polisher = Polisher(lambda text, lists: harness.evaluate_many(text, lists, objsize=metric == "objsize"),
                        vocabulary(harness.version), budget=budget, score=lambda r: _score(r, metric), order=order)
    found = polisher.polish_best(ir, results, n_seeds=len(results))
    if found is not None and tuple(found.passes) not in results:
        (results[tuple(found.passes)],) = harness.evaluate_many(ir, [found.passes], want_ir=want_ir,
                                                                objsize=metric == "objsize")
    return found


def predict_function(ir: str, strategy: Strategy, n: int, harness: Any, *, oz_backup: bool = True,
                     name: str = "", want_ir: bool = False, metric: str = "instcount",
                     polish: int = 0) -> FunctionPrediction:
    """Verify the first `n` samples of `strategy` on `ir` and keep the best by `metric` (docs/interfaces.md)."""
    return predict_many([ir], strategy, n, harness, oz_backup=oz_backup, names=[name], want_ir=want_ir,
                        metric=metric, polish=polish)[0]


def _best_single_list(ir: str, functions: list[FunctionPrediction], harness: Any, oz_backup: bool,
                      metric: str) -> tuple[list[list[str]], Any, Any, list[str], Any]:
    """(lists tried, no-op result, -Oz result, best list, its result) for one list on the whole module.

    The lists are the distinct per-function winners (and -Oz with the backup).  With none that
    compiles, the best list is [] and its result the unchanged module.
    """
    winners = distinct([Sample(f.passes, None) for f in functions if f.passes])
    if oz_backup and [OZ] not in winners:
        winners.append([OZ])
    measured = harness.evaluate_many(ir, [[], *winners], want_ir=True, objsize=metric == "objsize")
    noop, rest = measured[0], measured[1:]
    best, best_result, best_score = [], noop, None
    for passes, result in zip(winners, rest, strict=True):
        score = _score(result, metric)
        if score is not None and (best_score is None or score < best_score):
            best, best_result, best_score = passes, result, score
    # -Oz of the module is always reported; without the backup it just may not be chosen.
    oz = rest[winners.index([OZ])] if [OZ] in winners else harness.evaluate(ir, [OZ], objsize=metric == "objsize")
    return winners, noop, oz, best, best_result


def _module_bytes(ir: str, out_ir: str | None, harness: Any) -> tuple[int | None, int | None, int | None]:
    """.text+.data bytes of the input, its -Oz and the written module (None where codegen fails)."""
    tasks = [(ir, []), (ir, [OZ]), (out_ir if out_ir is not None else ir, [])]
    return tuple(r.objsize if r.ok else None for r in harness.evaluate_tasks(tasks, objsize=True))  # type: ignore


def _bytes_note(p: ModulePrediction) -> str | None:
    """Say so when fewer instructions than -Oz cost bytes (the instcount metric does not look at size)."""
    if None in (p.instcount_result, p.instcount_oz, p.objsize_result, p.objsize_oz):
        return None
    if p.instcount_result < p.instcount_oz and p.objsize_result > p.objsize_oz:
        return (f"{p.instcount_oz - p.instcount_result} fewer instructions than -Oz cost "
                f"{p.objsize_result - p.objsize_oz} bytes (.text+.data {p.objsize_result} vs {p.objsize_oz} "
                "with -Oz); --metric objsize chooses by bytes")
    return None


def predict_module(ir: str, strategy: Strategy, n: int, harness: Any, *, oz_backup: bool = True,
                   version: int | None = None, metric: str = "instcount",
                   on_function: Callable[[str], None] | None = None, polish: int = 0) -> ModulePrediction:
    """Predict each defined function of `ir`, then write the module the better way (module docstring).

    Single-list mode: the list is chosen among the distinct per-function winners (and -Oz when
    `oz_backup`) by `metric` on the whole optimized module.  Per-function mode is tried when the
    functions' winners differ and kept only if it is better by `metric`.  `on_function(name)` is
    called as each function has been sampled (progress); `polish` as in `predict_many`.
    """
    from llmopt.llvm.ir import defined_functions, normalize_ir, split_functions

    names = defined_functions(ir)
    pieces = [(names[0], ir)] if len(names) == 1 else list(split_functions(ir, version))
    functions = predict_many([m for _, m in pieces], strategy, n, harness, oz_backup=oz_backup,
                             names=[name for name, _ in pieces], prompts=[normalize_ir(m) for _, m in pieces],
                             metric=metric, on_sampled=on_function, polish=polish)
    notes = [f"@{f.name}: {f.note}" for f in functions if f.note]
    winners, noop, oz, best, chosen = _best_single_list(ir, functions, harness, oz_backup, metric)
    compilations = sum(f.compilations for f in functions) + len(winners)
    mode, out_ir = "single-list", chosen.ir if chosen.ok and chosen.ir is not None else ir
    own = [(f.name, f.passes) for f in functions if f.passes]
    if len(pieces) > 1 and len({tuple(p) for _, p in own}) > 1:  # the functions disagree: try each its own
        spliced = harness.evaluate_per_function(ir, own, want_ir=True)
        compilations += 1
        if spliced.ok and metric == "objsize":  # the per-function module is measured in bytes as a whole
            spliced.objsize = harness.evaluate(spliced.ir, [], objsize=True).objsize
        new_score, old_score = _score(spliced, metric), _score(chosen, metric) if best else None
        if new_score is not None and (old_score is None or new_score < old_score):
            best, chosen, out_ir, mode = [], spliced, spliced.ir, "per-function"
        elif not spliced.ok:
            notes.append(f"per-function module failed ({spliced.error}): single list used")
    result = ModulePrediction(
        functions, noop.instcount, oz.instcount if oz.ok else None, chosen.instcount if chosen.ok else None, best,
        compilations, out_ir, notes, mode, build_pipeline(best, harness.version) if mode == "single-list" else None,
        metric)
    result.objsize_input, result.objsize_oz, result.objsize_result = _module_bytes(ir, out_ir, harness)
    if metric == "instcount" and (note := _bytes_note(result)):
        result.notes.append(note)
    return result
