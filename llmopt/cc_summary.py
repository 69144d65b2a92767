"""The project summary of `llmopt cc` builds: totals against -Oz and the units that fell back, as text or JSON."""

from __future__ import annotations

import os
from dataclasses import asdict
from typing import Any

from llmopt.cc_store import UnitRecord
from llmopt.metrics import overall_improvement

STATUSES = ("optimized", "fallback", "skipped", "error")


def totals(units: list[UnitRecord]) -> dict[str, Any]:
    """Counts per status and sums over the optimized units (bytes only where both objects were measured)."""
    done = [u for u in units if u.status == "optimized" and u.instcount_oz is not None
            and u.instcount_result is not None]
    sized = [u for u in done if u.objsize_oz is not None and u.objsize_result is not None]
    out: dict[str, Any] = {"units": len(units), **{s: sum(u.status == s for u in units) for s in STATUSES}}
    out.update({
        "cache_hits": sum(u.cache_hit for u in units), "kept_clang_oz": sum(u.detail.get("kept") == "clang -Oz"
                                                                           for u in units),
        "functions": sum(u.functions for u in done),
        "instcount_oz": sum(u.instcount_oz for u in done), "instcount_result": sum(u.instcount_result for u in done),
        "objsize_oz": sum(u.objsize_oz for u in sized), "objsize_result": sum(u.objsize_result for u in sized),
        "seconds": round(sum(u.seconds for u in units), 2),
    })
    out["instcount_vs_oz_percent"] = round(overall_improvement([out["instcount_oz"]], [out["instcount_result"]]), 2)
    out["objsize_vs_oz_percent"] = round(overall_improvement([out["objsize_oz"]], [out["objsize_result"]]), 2)
    return out


def to_json(units: list[UnitRecord], directory: str | None) -> dict[str, Any]:
    return {"directory": directory, "totals": totals(units), "units": [asdict(u) for u in units]}


def _pct(oz: int | None, result: int | None) -> str:
    if not oz or result is None:
        return ""
    return f"{overall_improvement([oz], [result]):+.1f}%"


def _cell(value: Any) -> str:
    return "-" if value is None else str(value)


def format_text(units: list[UnitRecord], directory: str | None) -> str:
    """A table of the units, a total line, and why units fell back (savings: + means smaller than -Oz)."""
    t = totals(units)
    where = f"under {directory}" if directory else "(all recorded)"
    lines = [f"llmopt cc: {t['units']} units {where}: {t['optimized']} optimized, {t['fallback']} fell back, "
             f"{t['skipped']} built by plain clang, {t['error']} with compile errors; "
             f"{t['cache_hits']} answers from the cache"]
    if not units:
        return lines[0] + "\n(no units recorded: build with CC=\"llmopt cc\" first)\n"
    names = [os.path.relpath(u.output, directory) if directory else u.output for u in units]
    width = max(8, *(len(n) for n in names))
    lines.append(f"{'unit':<{width}}  {'status':<9} {'funcs':>5}  {'-Oz ins':>7}  {'ins':>7}  {'saved':>6}  "
                 f"{'-Oz bytes':>9}  {'bytes':>9}  {'saved':>6}")
    for name, u in zip(names, units, strict=True):
        lines.append(f"{name:<{width}}  {u.status:<9} {u.functions:>5}  {_cell(u.instcount_oz):>7}  "
                     f"{_cell(u.instcount_result):>7}  {_pct(u.instcount_oz, u.instcount_result):>6}  "
                     f"{_cell(u.objsize_oz):>9}  {_cell(u.objsize_result):>9}  "
                     f"{_pct(u.objsize_oz, u.objsize_result):>6}")
    lines.append(f"{'total':<{width}}  {'':<9} {t['functions']:>5}  {t['instcount_oz']:>7}  {t['instcount_result']:>7}  "
                 f"{_pct(t['instcount_oz'], t['instcount_result']):>6}  {t['objsize_oz']:>9}  "
                 f"{t['objsize_result']:>9}  {_pct(t['objsize_oz'], t['objsize_result']):>6}")
    for name, u in zip(names, units, strict=True):
        if u.status != "optimized" or u.reason:
            lines.append(f"{u.status if u.status != 'optimized' else 'note'}: {name}: {u.reason}")
    return "\n".join(lines) + "\n"
