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
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from llmopt.llvm.passes import OZ
from llmopt.sampling.base import PromptTooLongError, Sample, Strategy, distinct


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

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "instcount_input": self.instcount_input, "instcount_oz": self.instcount_oz,
                "instcount_result": self.instcount_result, "passes": self.passes,
                "compilations": self.compilations, "source": self.source, "note": self.note}


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


def _draw(strategy: Strategy, ir: str, n: int) -> tuple[list[Sample], str | None]:
    """(samples, note); a prompt longer than the model's context gives no samples and a note."""
    try:
        return strategy.sample(ir, n), None
    except PromptTooLongError as err:
        return [], f"too long for the model ({err}): -Oz used"


def _choose(name: str, samples: list[Sample], note: str | None, results: dict[tuple[str, ...], Any],
            input_count: int | None, oz_backup: bool, compiled: int) -> FunctionPrediction:
    """The fewest-instruction verified candidate (model order breaks ties; -Oz last)."""
    lists = distinct(samples)
    oz = results.get((OZ,))
    best, best_count, source = None, None, "model"
    for passes in lists:
        r = results[tuple(passes)]
        if r.ok and (best_count is None or r.instcount < best_count):
            best, best_count = passes, r.instcount
    if oz_backup and oz is not None and oz.ok and (best_count is None or oz.instcount < best_count):
        best, best_count, source = [OZ], oz.instcount, "oz-backup"
    if best is None:  # nothing compiled and no backup: the input stays as it is
        best, best_count, source = [], input_count, "input"
    ir = results[tuple(best)].ir if tuple(best) in results else None
    return FunctionPrediction(name, input_count, oz.instcount if oz is not None and oz.ok else None, best_count,
                              list(best), compiled, samples, source, note, ir)


def predict_many(irs: Sequence[str], strategy: Strategy, n: int, harness: Any, *, oz_backup: bool = True,
                 names: Sequence[str] | None = None, want_ir: bool = False) -> list[FunctionPrediction]:
    """Predict every IR (single-function modules): sample each, then verify all candidates in one batch.

    One `evaluate_tasks` call spreads the compilations of all functions over the worker pool.
    """
    names = list(names) if names is not None else [f"f{i}" for i in range(len(irs))]
    drawn = [_draw(strategy, ir, n) for ir in irs]
    tasks: list[tuple[str, list[str]]] = []
    owners: list[tuple[int, tuple[str, ...]]] = []
    for i, (ir, (samples, _)) in enumerate(zip(irs, drawn, strict=True)):
        # [] = the no-op pipeline: the input count, measured like every other count.
        lists = [[], *distinct(samples), [OZ]]
        for passes in {tuple(p): p for p in lists}.values():
            tasks.append((ir, passes))
            owners.append((i, tuple(passes)))
    measured = harness.evaluate_tasks(tasks, want_ir=want_ir)
    per: list[dict[tuple[str, ...], Any]] = [{} for _ in irs]
    for (i, key), result in zip(owners, measured, strict=True):
        per[i][key] = result
    out = []
    for i, (samples, note) in enumerate(drawn):
        results = per[i]
        noop = results[()]
        lists = {tuple(p) for p in distinct(samples)} | {(OZ,)}
        compiled = len(lists)  # distinct candidates incl. -Oz (the input count is not a candidate)
        out.append(_choose(names[i], samples, note, results, noop.instcount if noop.ok else None, oz_backup,
                           compiled))
    return out


def predict_function(ir: str, strategy: Strategy, n: int, harness: Any, *, oz_backup: bool = True,
                     name: str = "", want_ir: bool = False) -> FunctionPrediction:
    """Verify the first `n` samples of `strategy` on `ir` and keep the fewest instructions (docs/interfaces.md)."""
    return predict_many([ir], strategy, n, harness, oz_backup=oz_backup, names=[name], want_ir=want_ir)[0]


def predict_module(ir: str, strategy: Strategy, n: int, harness: Any, *, oz_backup: bool = True,
                   version: int | None = None) -> ModulePrediction:
    """Predict each defined function of `ir`, then write the module the better way (module docstring).

    Single-list mode: the list is chosen among the distinct per-function winners (and -Oz when
    `oz_backup`) by the instruction count of the whole optimized module.  Per-function mode is
    tried when the functions' winners differ and kept only if it gives fewer instructions.
    """
    from llmopt.llvm.ir import defined_functions, normalize_ir, split_functions

    names = defined_functions(ir)
    if len(names) == 1:
        pieces = [(names[0], ir)]
    else:
        pieces = list(split_functions(ir, version))
    functions = predict_many([normalize_ir(m) for _, m in pieces], strategy, n, harness, oz_backup=oz_backup,
                             names=[name for name, _ in pieces])
    notes = [f"@{f.name}: {f.note}" for f in functions if f.note]
    winners = distinct([Sample(f.passes, None) for f in functions if f.passes])
    if oz_backup and [OZ] not in winners:
        winners.append([OZ])
    lists = [[], *winners]
    results = harness.evaluate_many(ir, lists, want_ir=True)
    noop, measured = results[0], results[1:]
    best, best_count, best_ir = [], None, ir
    for passes, r in zip(winners, measured, strict=True):
        if r.ok and (best_count is None or r.instcount < best_count):
            best, best_count, best_ir = passes, r.instcount, r.ir
    if best_count is None:  # no list compiled: the module stays as it is
        best_count = noop.instcount
    # -Oz of the module is always reported; without the backup it just may not be chosen.
    oz = measured[winners.index([OZ])] if [OZ] in winners else harness.oz(ir)
    compilations = sum(f.compilations for f in functions) + len(winners)
    mode = "single-list"
    own = [(f.name, f.passes) for f in functions if f.passes]
    if len(pieces) > 1 and len({tuple(p) for _, p in own}) > 1:  # the functions disagree: try each its own
        spliced = harness.evaluate_per_function(ir, own, want_ir=True)
        compilations += 1
        if spliced.ok and (best_count is None or spliced.instcount < best_count):
            best, best_count, best_ir, mode = [], spliced.instcount, spliced.ir, "per-function"
        elif not spliced.ok:
            notes.append(f"per-function module failed ({spliced.error}): single list used")
    return ModulePrediction(functions, noop.instcount, oz.instcount if oz.ok else None, best_count, best,
                            compilations, best_ir, notes, mode)
