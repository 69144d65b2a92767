"""`REPORT.md` of an evaluation: headline, model-vs-baseline verdicts, the tables, links to CSV/JSON and plots."""

from __future__ import annotations

import json
from pathlib import Path

from eval import plots, tables
from eval.methods import needs_model
from llmopt.errors import UsageError

BASELINES = ("random", "coreset", "coreset_cover", "greedy_search")


def verdicts(results: dict) -> tuple[list[str], list[list]]:
    """Per model method and budget k: the best model-free baseline at the same k, and who wins (raw numbers).

    Returns (plain sentences, table rows [method, k, model %, best baseline@k, baseline %, verdict]).
    """
    methods = results["methods"]
    model = [m for m in methods if needs_model(m)]
    base = [m for m in methods if m in BASELINES]
    if not model:
        return ["No model method was evaluated."], []
    if not base:
        return ["No model-free baseline (random, coreset, coreset_cover) was evaluated."], []
    lines: list[str] = []
    rows: list[list] = []
    auto = methods.get("autotuner")
    for m in model:
        loses, ties, beats = [], [], []
        for k, s in methods[m]["samples"].items():
            mine = s["overall_improvement_pct"]
            best = max(base, key=lambda b: methods[b]["samples"][k]["overall_improvement_pct"])
            theirs = methods[best]["samples"][k]["overall_improvement_pct"]
            verdict = "beats" if mine > theirs + 1e-9 else "ties" if abs(mine - theirs) <= 1e-9 else "loses"
            rows.append([m, int(k), mine, f"{best}@{k}", theirs, verdict])
            {"beats": beats, "ties": ties, "loses": loses}[verdict].append(f"k={k} ({mine:+.2f}% vs {best} {theirs:+.2f}%)")
        if loses:
            lines.append(f"**{m} does not beat the best baseline** at " + ", ".join(loses) + ".")
        if ties:
            lines.append(f"{m} only ties the best baseline at " + ", ".join(ties) + ".")
        if beats:
            lines.append(f"{m} beats every baseline at " + ", ".join(beats) + ".")
        if auto:
            a = auto["samples"][str(results["samples"][-1])]["overall_improvement_pct"]
            top = max(s["overall_improvement_pct"] for s in methods[m]["samples"].values())
            share = f" ({100 * top / a:.0f}% of it)" if a > 0 else ""
            lines.append(f"{m}: best {top:+.2f}% over -Oz vs the autotuner labels' {a:+.2f}%{share}.")
    return lines, rows


def write_all(results: dict, out: Path) -> Path:
    """Write every table (md/csv/json under `tables/`), every plot (`plots/`) and `REPORT.md`; returns its path."""
    built = tables.build_tables(results)
    for table in built:
        table.write(out / "tables")
    images = plots.write_plots(results, out / "plots")
    ks = results["samples"]
    lines = [
        "# llmopt evaluation report",
        "",
        f"- dataset: `{results['dataset']}` — {results['n_functions']} functions, "
        f"{results['instcount_input']} {results.get('unit', 'instructions')} unoptimized, "
        f"{results['instcount_oz']} after -Oz (metric: {results.get('metric', 'instcount')})",
        f"- model: `{results.get('model') or 'shipped default'}`; seed {results['seed']}; samples {ks}",
        "- improvement over -Oz = (sum of -Oz counts - sum of result counts) / sum of -Oz counts (same input, "
        "same LLVM). **Raw** (no backup): a function whose candidates all fail (unparsable, unknown pass, "
        "crash) keeps its *unoptimized* count. **With -Oz backup**: min(result, -Oz), +1 compilation when a "
        "candidate is not -Oz.",
        "- compilations = distinct pass lists compiled (autotuner: its own search budget from the dataset).",
        "",
    ]
    for note in results.get("notes", []):
        lines.append(f"- note: {note}")
    lines += ["", "## Model vs baselines (raw, no backup)", ""]
    sentences, rows = verdicts(results)
    lines += [f"- {v}" for v in sentences]
    if rows:
        table = tables.Table("model_vs_baselines", "Model vs the best model-free baseline at the same budget",
                             ["method", "samples", "model %", "best baseline", "baseline %", "verdict"], rows)
        table.write(out / "tables")
        lines += ["", table.markdown()]
    lines += ["", "## Plots", ""]
    for name, path in images.items():
        lines.append(f"![{name}]({path.relative_to(out).as_posix()})")
        lines.append("")
    lines += ["## Tables", ""]
    for table in built:
        rel = f"tables/{table.name}"
        lines += [f"### {table.title}", "", f"([csv]({rel}.csv), [json]({rel}.json))", "", table.markdown()]
        if table.note:
            lines += [table.note, ""]
    if results.get("sampling_seconds"):
        lines += ["## Time spent sampling (s)", ""]
        lines += [f"- {m}: {s:.1f}" for m, s in results["sampling_seconds"].items()]
        lines.append("")
    lines += ["Raw numbers: [results.json](results.json); per-function candidates: `records.jsonl`.", ""]
    path = out / "REPORT.md"
    path.write_text("\n".join(lines))
    return path


def rewrite(out: Path) -> dict:
    """`llmopt eval --report-only`: the tables, plots and REPORT.md of `out` again from its results.json.

    Nothing is sampled, compiled or re-aggregated, so the numbers are the stored ones; results.json also
    keeps what the records lack (notes, sampling time, code quality)."""
    path = out / "results.json"
    try:
        results = json.loads(path.read_text())
    except FileNotFoundError:
        raise UsageError(f"--report-only: {path} does not exist: run the evaluation into {out} first") from None
    except (OSError, json.JSONDecodeError) as err:
        raise UsageError(f"--report-only: cannot read {path}: {err}") from None
    write_all(results, out)
    return results
