"""`REPORT.md` of an evaluation: headline, model-vs-baseline verdicts, the tables, links to CSV/JSON and plots."""

from __future__ import annotations

from pathlib import Path

from eval import plots, tables
from eval.methods import needs_model

BASELINES = ("random", "coreset", "coreset_cover", "greedy_search")


def verdicts(results: dict) -> list[str]:
    """Plain statements of where each model method does / does not beat the model-free baselines, per budget."""
    methods = results["methods"]
    model = [m for m in methods if needs_model(m)]
    base = [m for m in methods if m in BASELINES]
    lines: list[str] = []
    if not model:
        return ["No model method was evaluated."]
    auto = methods.get("autotuner")
    for m in model:
        losses, wins = [], []
        for k, s in methods[m]["samples"].items():
            mine = s["overall_improvement_pct"]
            for b in base:
                other = methods[b]["samples"].get(k)
                if other is None:
                    continue
                text = f"{b}@{k} ({other['overall_improvement_pct']:+.2f}% vs {mine:+.2f}%)"
                (wins if mine > other["overall_improvement_pct"] else losses).append(text)
        if losses:
            lines.append(f"**{m} does not beat** " + ", ".join(losses) + ".")
        if wins:
            lines.append(f"{m} beats " + ", ".join(wins) + ".")
        if auto:
            a = auto["samples"][str(results["samples"][-1])]["overall_improvement_pct"]
            best = max(s["overall_improvement_pct"] for s in methods[m]["samples"].values())
            reach = f"{100 * best / a:.0f}% of" if a > 0 else "vs"
            lines.append(f"{m}: best {best:+.2f}% over -Oz = {reach} the autotuner's {a:+.2f}% (raw, no backup).")
    return lines


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
        f"{results['instcount_input']} instructions unoptimized, {results['instcount_oz']} after -Oz",
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
    lines += ["", "## Model vs baselines", ""]
    lines += [f"- {v}" for v in verdicts(results)]
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
