"""PNG plots of an evaluation (matplotlib, Agg): sampling curve, improvement against compilations, improvement by
input size, pass frequencies."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from eval.metrics import SIZE_BINS  # noqa: E402
from llmopt.sampling.registry import split_polish  # noqa: E402

# Issue 14's cost comparison: search, fixed lists, the model, and (as NAME_polishK) model-seeded search.
BUDGET_METHODS = ("random", "greedy_search", "coreset", "coreset_cover", "priority")


def sampling_curve(results: dict, path: Path) -> Path:
    """Improvement over -Oz of the best of the first k samples (thesis Fig. 6.3), without / with backup."""
    ks = results["samples"]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=False)
    for ax, backup in zip(axes, (False, True), strict=True):
        for method, entry in results["methods"].items():
            ys = [(entry["samples"][str(k)]["oz_backup"] if backup else entry["samples"][str(k)])
                  ["overall_improvement_pct"] for k in ks]
            style = "--" if method in ("autotuner", "oz") else "-"
            ax.plot(ks, ys, style, marker="o", markersize=3, label=method)
        ax.axhline(0.0, color="grey", linewidth=0.8)
        if len(ks) > 1:
            ax.set_xscale("log")
        ax.set_xticks(ks)
        ax.set_xticklabels([str(k) for k in ks])
        ax.set_xlabel("samples k = compiled pass lists (-Oz baseline not counted)")
        ax.set_ylabel("improvement over -Oz [%]")
        ax.set_title("with -Oz backup" if backup else "without backup (raw)")
        ax.grid(alpha=0.3)
    axes[1].legend(fontsize=7, loc="best")
    fig.suptitle(f"Sampling curve ({results['n_functions']} functions)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def compilation_series(results: dict) -> dict[str, list[tuple[int, float, float]]]:
    """Per method of `BUDGET_METHODS` (polished forms included) and the autotuner: (k, mean compilations per
    function, overall improvement over -Oz %) at each budget k, both with -Oz backup as in the backup overview table.
    The autotuner is one point: its answer and its own search budget do not depend on k."""
    out = {}
    for method, entry in results["methods"].items():
        polish = split_polish(method)
        if method != "autotuner" and (polish[0] if polish else method) not in BUDGET_METHODS:
            continue
        points = [(int(k), s["oz_backup"]["compilations"] / entry["n_functions"],
                   s["oz_backup"]["overall_improvement_pct"]) for k, s in entry["samples"].items()]
        out[method] = points[-1:] if method == "autotuner" else points
    return out


def improvement_vs_compilations(results: dict, path: Path) -> Path:
    """What each method's answer costs: improvement over -Oz (with backup) against compilations per function."""
    fig, ax = plt.subplots(figsize=(8, 4.8))
    for method, points in compilation_series(results).items():
        xs, ys = [x for _, x, _ in points], [y for _, _, y in points]
        if method == "autotuner":
            ax.plot(xs, ys, "*", markersize=12, color="black", label="autotuner labels (its own search)")
            continue
        (line,) = ax.plot(xs, ys, "-", marker="o", markersize=3.5, label=method)
        for k, x, y in points:
            ax.annotate(str(k), (x, y), textcoords="offset points", xytext=(3, 3), fontsize=6, color=line.get_color())
    ax.axhline(0.0, color="grey", linewidth=0.8, label="-Oz (1 compilation)")
    ax.set_xscale("log")
    ax.margins(x=0.06, y=0.08)  # the autotuner's star sits in a corner
    ax.set_xlabel("compilations per function (mean; distinct lists + the -Oz backup)")
    ax.set_ylabel("improvement over -Oz [%] (with -Oz backup)")
    ax.set_title(f"Improvement against compilations ({results['n_functions']} functions; "
                 "point labels: samples k)", fontsize=10)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def by_size(results: dict, path: Path) -> Path:
    """Improvement over -Oz by unoptimized input size (thesis Fig. 4.9), one bar group per size bin."""
    labels = [label for label in results["by_size"] if not label.startswith("oz@")]
    k_max = str(results["samples"][-1])
    labels = [x for x in labels if x.endswith(f"@{k_max}")] or labels
    bins = [b for b in SIZE_BINS if any(b in results["by_size"][x] for x in labels)]
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(bins) + 3), 4.2))
    width = 0.8 / max(len(labels), 1)
    for i, label in enumerate(labels):
        ys = [results["by_size"][label].get(b, {}).get("overall_improvement_pct", 0.0) for b in bins]
        ax.bar([j + i * width for j in range(len(bins))], ys, width, label=label)
    counts = [max((results["by_size"][x].get(b, {}).get("n_functions", 0) for x in labels), default=0) for b in bins]
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(bins))])
    ax.set_xticklabels([f"{b}\n(n={n})" for b, n in zip(bins, counts, strict=True)], fontsize=8)
    ax.axhline(0.0, color="grey", linewidth=0.8)
    ax.set_xlabel("unoptimized input instructions")
    ax.set_ylabel("improvement over -Oz [%] (raw)")
    ax.set_title("Improvement by input size")
    ax.legend(fontsize=7)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def pass_frequency(results: dict, path: Path, top: int = 25) -> Path:
    """Share of lists containing each pass (thesis Fig. 4.7a) and list-length histogram (Fig. 4.7b)."""
    stats = results["pass_frequency"]
    from eval.methods import needs_model

    names = [n for n in stats if needs_model(n) or n == "labels"]
    if len(names) < 2:  # no model: show every method's first sample
        names = list(stats)
    order_src = stats.get("labels") or (stats[names[0]] if names else {"frequency": {}})
    passes = list(order_src["frequency"])
    for n in names:
        passes += [p for p in stats[n]["frequency"] if p not in passes]
    passes = passes[:top]
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(13, max(4, 0.28 * len(passes) + 1.5)),
                                  gridspec_kw={"width_ratios": [2, 1]})
    height = 0.8 / max(len(names), 1)
    for i, n in enumerate(names):
        ax.barh([j + i * height for j in range(len(passes))],
                [100.0 * stats[n]["frequency"].get(p, 0.0) for p in passes], height, label=n)
    ax.set_yticks([j + 0.4 - height / 2 for j in range(len(passes))])
    ax.set_yticklabels(passes, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("% of lists containing the pass (first sample)")
    ax.legend(fontsize=7)
    ax.set_title("Pass frequency")
    for n in names:
        hist = stats[n]["length_histogram"]
        if hist:
            xs = sorted(int(x) for x in hist)
            ax2.plot(xs, [hist[str(x)] for x in xs], marker="o", markersize=3, label=n)
    ax2.set_xlabel("list length (lists that are exactly -Oz excluded)")
    ax2.set_ylabel("lists")
    ax2.set_title("List length")
    ax2.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write_plots(results: dict, directory: Path) -> dict[str, Path]:
    directory.mkdir(parents=True, exist_ok=True)
    out = {"sampling_curve": sampling_curve(results, directory / "sampling_curve.png")}
    if compilation_series(results):
        out["improvement_vs_compilations"] = improvement_vs_compilations(
            results, directory / "improvement_vs_compilations.png")
    if results.get("by_size"):
        out["by_size"] = by_size(results, directory / "by_size.png")
    if results.get("pass_frequency"):
        out["pass_frequency"] = pass_frequency(results, directory / "pass_frequency.png")
    return out
