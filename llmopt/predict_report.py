"""How `llmopt predict` shows a `ModulePrediction`: a text table or one JSON object per input.

Text: one line per function (counts, the verdict against -Oz, the `opt -passes=` pipeline that
reproduces the count), the module line, then `note:` lines that explain what may surprise: a module
count that is not the sum of the function rows, fewer instructions that cost bytes, a function
too long for the model.  `--verbose` adds each function's ranked candidates.
"""

from __future__ import annotations

from typing import Any

from llmopt.metrics import improvement
from llmopt.predict import FunctionPrediction, ModulePrediction

NAME_WIDTH = 32


def versus_oz(oz: int | None, result: int | None, unit: str = "") -> str:
    """"better than -Oz by 3 (5.2%)", "worse than ...", "same as -Oz", or "" when a count is missing."""
    if oz is None or result is None:
        return ""
    if result == oz:
        return "same as -Oz"
    pct = f" ({abs(improvement(oz, result)):.1f}%)" if oz else ""
    return f"{'better' if result < oz else 'worse'} than -Oz by {abs(oz - result)}{unit}{pct}"


def verdict(oz: int | None, result: int | None) -> str | None:
    """"better" / "same" / "worse" (JSON), None when a count is missing."""
    if oz is None or result is None:
        return None
    return "better" if result < oz else "worse" if result > oz else "same"


def _sum(values: list[int | None]) -> int | None:
    return None if any(v is None for v in values) else sum(values)  # type: ignore[arg-type]


def count_note(p: ModulePrediction, removed: list[str]) -> str | None:
    """Why the module line is not the sum of the function lines (None when it is)."""
    rows_oz = _sum([f.instcount_oz for f in p.functions])
    rows_result = _sum([f.instcount_result for f in p.functions])
    if (rows_oz, rows_result) == (p.instcount_oz, p.instcount_result) or len(p.functions) < 2:
        return None
    named = ", ".join("@" + n for n in removed[:3]) + (f" and {len(removed) - 3} more" if len(removed) > 3 else "")
    gone = f" ({named})" if removed else ""
    if p.mode == "single-list":
        how = f"where the pipeline inlines across functions and deletes internal functions left unused{gone}"
    else:
        how = ("where each function ran its own pipeline with the others frozen (no inlining across functions) "
               f"but -Oz inlines across functions{gone}")
    return (f"the rows count each function extracted alone, the module row the whole module, {how}: so the "
            f"module's -Oz ({p.instcount_oz}) and result ({p.instcount_result}) are not the sums of the rows "
            f"({rows_oz}, {rows_result})")


def _fmt(value: int | None) -> str:
    return "?" if value is None else str(value)


def _function_row(f: FunctionPrediction, metric: str) -> list[str]:
    row = [f.name, _fmt(f.instcount_input), _fmt(f.instcount_oz), _fmt(f.instcount_result)]
    if metric == "objsize":
        row += [_fmt(f.objsize_oz), _fmt(f.objsize_result), versus_oz(f.objsize_oz, f.objsize_result, " B")]
    else:
        row.append(versus_oz(f.instcount_oz, f.instcount_result))
    backup = {"oz-backup": "  (-Oz backup)", "input": "  (nothing compiled: input kept)",
              "polish": "  (found by --polish)"}.get(f.source, "")
    return [*row, f.pipeline + backup]


def _candidate_lines(f: FunctionPrediction, metric: str) -> list[str]:
    lines = []
    for c in f.candidates:
        chosen = "*" if c.passes == f.passes else " "
        rank = f"#{c.rank}" if c.rank is not None else "-Oz"
        if c.error is not None:
            measured = f"error: {c.error}"
        else:
            measured = f"{c.instcount} insts" + (f", {c.objsize} B" if metric == "objsize" else "")
        lines.append(f"    {chosen} {rank:>4}  {measured:<16}  {','.join(c.passes) or '(none)'}")
    return lines


def _table(rows: list[list[str]], header: list[str]) -> list[str]:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header) - 1)]
    widths[0] = min(widths[0], NAME_WIDTH)  # a longer (C++) name pushes only its own row
    out = []
    for r in [header, *rows]:
        cells = [r[0].ljust(widths[0]), *(c.rjust(w) for c, w in zip(r[1:-2], widths[1:-1], strict=True)),
                 r[-2].ljust(widths[-1])]
        out.append("  ".join(cells) + "  " + r[-1])
    return out


def module_verdict(p: ModulePrediction) -> str | None:
    """The module against -Oz by the metric it was chosen by."""
    if p.metric == "objsize":
        return verdict(p.objsize_oz, p.objsize_result)
    return verdict(p.instcount_oz, p.instcount_result)


def _summary(p: ModulePrediction) -> str:
    counts = f"module: {_fmt(p.instcount_input)} -> {_fmt(p.instcount_result)} instructions (-Oz: {_fmt(p.instcount_oz)})"
    size = f".text+.data {_fmt(p.objsize_result)} bytes (-Oz: {_fmt(p.objsize_oz)})"
    by_count = versus_oz(p.instcount_oz, p.instcount_result)
    by_size = versus_oz(p.objsize_oz, p.objsize_result, " bytes")
    if p.metric == "objsize":
        return f"{size}, {by_size or 'not measured'}; {counts}, {by_count}; {p.compilations} compilations"
    return f"{counts}, {by_count}; {size}; {p.compilations} compilations"


def _mode_line(p: ModulePrediction) -> str:
    if p.mode == "per-function":
        return ("written module: each function ran its own pipeline (rows above) while the others were frozen; "
                "no single `opt -passes=` string reproduces it")
    return f"written module: opt -passes='{p.pipeline}' on the whole input (one pipeline for every function)"


def render_text(p: ModulePrediction, *, name: str, notes: list[str], verbose: bool = False) -> list[str]:
    """The text report of one input: header, one row per function, the module row, summary, notes."""
    objsize = p.metric == "objsize"
    header = ["function", "input", "-Oz", "result", *(["-Oz B", "result B"] if objsize else []),
              f"vs -Oz ({'bytes' if objsize else 'instructions'})", "opt -passes="]
    module_row = ["module", _fmt(p.instcount_input), _fmt(p.instcount_oz), _fmt(p.instcount_result)]
    if objsize:
        module_row += [_fmt(p.objsize_oz), _fmt(p.objsize_result), versus_oz(p.objsize_oz, p.objsize_result, " B")]
    else:
        module_row.append(versus_oz(p.instcount_oz, p.instcount_result))
    module_row.append(p.pipeline if p.pipeline is not None else "(each function its own, see rows)")
    table = _table([*(_function_row(f, p.metric) for f in p.functions), module_row], header)
    count = len(p.functions)
    units = " (B = .text+.data bytes, other counts instructions)" if objsize else ""
    lines = [f"{name}: {count} function{'s' if count != 1 else ''}{units}", table[0]]
    for f, line in zip(p.functions, table[1:-1], strict=True):
        lines.append(line)
        if verbose:
            lines += _candidate_lines(f, p.metric)
    lines += [table[-1], _summary(p), _mode_line(p)]
    if verbose:
        lines.append("reproduce a row: llvm-extract --func=NAME IN.ll -S -o - | opt -passes='PIPELINE' -S (a "
                     "one-function input: opt on IN.ll); candidates: * = chosen, #1 = the strategy's first")
    return lines + [f"note: {n}" for n in notes]


def to_json(p: ModulePrediction, *, notes: list[str], verbose: bool = False, **extra: Any) -> dict[str, Any]:
    """One input's JSON object (`extra`: input, output, strategy, samples, model, llvm_version, ...)."""
    return {**extra, "functions": [f.to_json(candidates=verbose) for f in p.functions],
            "instcount_input": p.instcount_input, "instcount_oz": p.instcount_oz,
            "instcount_result": p.instcount_result, "objsize_input": p.objsize_input, "objsize_oz": p.objsize_oz,
            "objsize_result": p.objsize_result, "metric": p.metric, "versus_oz": module_verdict(p),
            "passes": p.passes, "pipeline": p.pipeline, "module_mode": p.mode, "compilations": p.compilations,
            "notes": notes}


def total_line(results: list[ModulePrediction]) -> str:
    """The sum over several inputs (inputs with a missing count are left out)."""
    done = [p for p in results if None not in (p.instcount_oz, p.instcount_result)]
    oz, res = sum(p.instcount_oz for p in done), sum(p.instcount_result for p in done)  # type: ignore[misc]
    line = f"total over {len(done)} inputs: {res} instructions (-Oz: {oz}), {versus_oz(oz, res)}"
    sized = [p for p in done if None not in (p.objsize_oz, p.objsize_result)]
    if len(sized) == len(done):
        boz, bres = sum(p.objsize_oz for p in sized), sum(p.objsize_result for p in sized)  # type: ignore[misc]
        line += f"; .text+.data {bres} bytes (-Oz: {boz}), {versus_oz(boz, bres, ' bytes')}"
    return line
