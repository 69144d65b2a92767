"""Several runs of `python -m eval.costmodel_eval` side by side: one line per group of runs (e.g. one
setting of `--verify`, each run repeated), with every run's numbers and their mean.

    python scripts/costmodel_runs.py verify4=runs/a/results.json,runs/b/results.json \\
        verify2=runs/c/results.json --out docs/results/costmodel/verify-29/summary.json

`--agent NAME` reads group NAME's numbers from the runs' `with_agent` block (BSM + the agent's walk, runs made
with `--with-agent`) instead of plain BSM's.  A second table gives, per benchmark, the mean over the group's runs
of its answer's time against BSE's, both timed side by side (1.00: as fast as BSE; where a model loses).

A single run of Table 2 moves by several points between repetitions on a shared machine (one benchmark's
best schedule measures 15x in one run and 25x in the next), so settings are compared by the mean of
repeated runs, each run's spread shown beside it.  Prints a markdown table; `--out` keeps the numbers.

`--results DEST` (the shipped model's runs, e.g. `docs/results/costmodel/results.json`) writes the first group's
median run (by BSM + agent's degradation when the runs have it, else BSM's; `--median-by bsm`: BSM's) to DEST with
`repeat_runs`: every
run's Table 2 numbers and their means, BSM's and BSM + agent's, files named relative to DEST.  Keys of an existing
DEST that a run does not write (e.g. `previous_machines`, added by hand) are kept; a run's `results.md` and
`scatter.png` beside a `results.json` are copied beside DEST.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
from pathlib import Path

import numpy as np

from llmopt.errors import UsageError, run_main
from llmopt.outputs import write_atomic

# (summary key path, column title): the side-by-side degradation is the Table 2 figure (eval.costmodel_eval).
COLUMNS = [(("search_speedup",), "search speedup, full cost"),
           (("search_speedup_model_only",), "on predictions alone"),
           (("degradation_pct",), "degradation, side by side"),
           (("degradation_geomean_pct",), "1 - geomean ratio"),
           (("search_timings", "degradation_pct"), "degradation, own timings")]
# Per benchmark row: BSM's (or BSM + agent's) speed over BSE's, both timed side by side in the run.
RATIO_KEYS = {False: "bsm_vs_bse_side", True: "bsma_vs_bse_side"}


def value(summary: dict, path: tuple[str, ...]) -> float | None:
    for key in path:
        summary = summary.get(key) if isinstance(summary, dict) else None
    return summary


def group_numbers(files: list[str], agent: bool = False) -> dict:
    """{column title: [each run's value]} and the runs' files and BSM settings (which must agree); with
    `agent`, the numbers of BSM + agent (a run without them is an error)."""
    runs = [json.loads(Path(f).read_text()) for f in files]
    per_benchmark: dict[str, list[float]] = {}
    for r in runs:
        for row in r.get("rows", []):
            if RATIO_KEYS[agent] in row:
                per_benchmark.setdefault(row["benchmark"], []).append(row[RATIO_KEYS[agent]])
    if agent:
        if missing := [f for f, r in zip(files, runs, strict=True) if "with_agent" not in r]:
            raise UsageError(f"{missing} were not run with --with-agent")
        runs = [{**r["with_agent"], "config": r["config"]} for r in runs]
    settings = {json.dumps({k: r["config"].get(k) for k in ("verify", "candidates", "budget_seconds")}) for r in runs}
    if len(settings) != 1:
        raise UsageError(f"the runs {files} were made with different settings: {sorted(settings)}")
    return {"files": files, "settings": json.loads(settings.pop()), "with_agent": agent,
            "columns": {title: [value(r, path) for r in runs] for path, title in COLUMNS},
            "per_benchmark": per_benchmark}


def benchmark_table(groups: dict[str, dict]) -> str:
    """Groups as rows, benchmarks as columns: the mean ratio to BSE's speed, side by side."""
    names = list(dict.fromkeys(b for g in groups.values() for b in g.get("per_benchmark", {})))
    if not names:
        return ""
    lines = ["| group | " + " | ".join(names) + " |", "|" + "---|" * (len(names) + 1)]
    for name, g in groups.items():
        per = g.get("per_benchmark", {})
        lines.append(f"| {name} | " + " | ".join(f"{np.mean(per[b]):.2f}" if per.get(b) else "n/a" for b in names) + " |")
    return "\n".join(lines)


def table(groups: dict[str, dict]) -> str:
    def cell(xs: list) -> str:
        xs = [x for x in xs if x is not None]
        if not xs:
            return "n/a"
        each = " / ".join(f"{x:.1f}" for x in xs)
        return f"**{np.mean(xs):.1f}** ({each})" if len(xs) > 1 else f"{xs[0]:.1f}"
    lines = ["| group | runs | " + " | ".join(title for _, title in COLUMNS) + " |", "|" + "---|" * (len(COLUMNS) + 2)]
    for name, g in groups.items():
        lines.append(f"| {name} | {len(g['files'])} | " + " | ".join(cell(g["columns"][t]) for _, t in COLUMNS) + " |")
    return "\n".join(lines)


def repeat_block(runs: list[dict], files: list[str]) -> dict:
    """{"files", one list per Table 2 number (key path joined by "_"), "means"} of repeated runs."""
    block: dict = {"files": files}
    for path, _ in COLUMNS:
        block["_".join(path)] = [value(r, path) for r in runs]
    block["means"] = {k: float(np.mean(v)) for k, v in block.items() if k != "files" and None not in v}
    return block


def write_results(dest: str | os.PathLike, files: list[str], median_by: str = "agent") -> str:
    """Write the median of `files` (eval.costmodel_eval results) to `dest` with their `repeat_runs`; returns
    the file chosen.  `median_by`: "agent" ranks the runs by BSM + agent's degradation where every run has it,
    "bsm" by plain BSM's."""
    runs = [json.loads(Path(f).read_text()) for f in files]
    agent = median_by == "agent" and all("with_agent" in r for r in runs)  # rank every run by the same number
    order = sorted(range(len(runs)), key=lambda k: (runs[k]["with_agent"] if agent else runs[k])["degradation_pct"])
    median = order[(len(runs) - 1) // 2]
    dest = Path(dest)
    names = [os.path.relpath(f, dest.parent) for f in files]
    repeat = {"median_run": names[median], **repeat_block(runs, names)}
    if agent:
        repeat["with_agent"] = repeat_block([r["with_agent"] for r in runs], names)
    kept = json.loads(dest.read_text()) if dest.exists() else {}
    kept = {k: v for k, v in kept.items() if k not in runs[median] and k != "repeat_runs"}
    dest.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(dest, json.dumps({**runs[median], "repeat_runs": repeat, **kept}, indent=1) + "\n")
    source = Path(files[median])
    for sibling in ("results.md", "scatter.png") if source.name == "results.json" else ():
        if (source.parent / sibling).exists():
            shutil.copyfile(source.parent / sibling, dest.parent / sibling)
    return files[median]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("groups", nargs="+", help="NAME=results.json[,results.json...]")
    p.add_argument("--agent", action="append", default=[], metavar="NAME",
                   help="group NAME reports BSM + agent (the runs' with_agent numbers); repeatable")
    p.add_argument("--out", help="write the numbers as JSON here")
    p.add_argument("--results", metavar="DEST",
                   help="write the first group's median run to DEST with every run's numbers (repeat_runs)")
    p.add_argument("--median-by", choices=("agent", "bsm"), default="agent",
                   help="--results' median by BSM + agent's degradation (where the runs have it) or plain BSM's")
    a = p.parse_args(argv)
    groups = {}
    for spec in a.groups:
        name, _, files = spec.partition("=")
        if not files:
            raise UsageError(f"{spec!r}: expected NAME=results.json[,results.json...]")
        groups[name] = group_numbers(files.split(","), agent=name in a.agent)
    print(table(groups))
    if per := benchmark_table(groups):
        print("\nPer benchmark, the answer's speed over BSE's, timed side by side (mean of the runs):\n\n" + per)
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        write_atomic(a.out, json.dumps(groups, indent=1))
    if a.results:
        chosen = write_results(a.results, next(iter(groups.values()))["files"], a.median_by)
        print(f"\n{a.results}: {chosen} with repeat_runs")
    return 0


if __name__ == "__main__":
    run_main(main)
