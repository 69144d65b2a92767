#!/usr/bin/env python3
"""Training curve of a run (train_log.csv + validation_log.csv) as a PNG and a Markdown table.

    python scripts/plot_training.py runs/default --out docs/results/training
    python scripts/plot_training.py runs/gpu-v3-set/* --out DIR     # several runs: one overlay, one table
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path


def read_csv(path: Path) -> list[dict[str, float]]:
    if not path.exists():
        return []
    with path.open() as fh:
        return [{k: float(v) if v not in ("", None) else float("nan") for k, v in row.items()} for row in csv.DictReader(fh)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, nargs="+")
    parser.add_argument("--out", type=Path, default=Path("docs/results/training"))
    args = parser.parse_args()
    if len(args.run) > 1:
        compare(args.run, args.out)
        return
    args.run = args.run[0]
    train, val = read_csv(args.run / "train_log.csv"), read_csv(args.run / "validation_log.csv")
    args.out.mkdir(parents=True, exist_ok=True)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    ax1.plot([r["tokens"] / 1e6 for r in train], [r["loss"] for r in train], label="train loss", lw=1)
    if val:
        ax1.plot([r["tokens"] / 1e6 for r in val], [r["val_loss"] for r in val], "o-", label="validation loss")
    ax1.set_xlabel("training tokens (M)")
    ax1.set_ylabel("cross-entropy (answer tokens)")
    ax1.set_yscale("log")
    ax1.legend()
    if val:
        tokens = [r["tokens"] / 1e6 for r in val]
        for key, label in (("improvement_over_oz", "improvement over -Oz (%)"), ("valid_pass_lists", "valid lists (%)"),
                           ("ir_parses", "generated IR parses (%)"), ("ir_bleu", "BLEU x100")):
            scale = 100.0 if key == "ir_bleu" else 1.0
            ax2.plot(tokens, [r[key] * scale for r in val], "o-", label=label)
        ax2.set_xlabel("training tokens (M)")
        ax2.legend(fontsize=8)
    fig.suptitle(f"training run {args.run}")
    fig.tight_layout()
    fig.savefig(args.out / "training_curve.png", dpi=110)

    lines = ["| step | tokens | val loss | improvement over -Oz % | valid lists % | counts present % | input count MAPE % "
             "| output count MAPE % | IR parses % | exact match % | BLEU |", "|" + "---|" * 11]
    for r in val:
        lines.append(f"| {r['step']:.0f} | {r['tokens']:,.0f} | {r['val_loss']:.3f} | {r['improvement_over_oz']:.2f} "
                     f"| {r['valid_pass_lists']:.1f} | {r['counts_present']:.1f} | {r['instcount_input_mape']:.1f} "
                     f"| {r['instcount_output_mape']:.1f} | {r['ir_parses']:.1f} | {r['ir_exact_match']:.1f} "
                     f"| {r['ir_bleu']:.3f} |")
    (args.out / "validation.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}/training_curve.png and validation.md")


def compare(runs: list[Path], out: Path) -> None:
    """Train and validation loss of several runs against their tokens, and a table of each run's end."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    lines = ["| run | steps | epochs | training tokens (M) | last train loss | best val loss (step) | last val loss |",
             "|---|---|---|---|---|---|---|"]
    for run in runs:
        train, val = read_csv(run / "train_log.csv"), read_csv(run / "validation_log.csv")
        if not train:
            continue
        ax1.plot([r["tokens"] / 1e6 for r in train], [r["loss"] for r in train], lw=0.8, label=run.name)
        if val:
            ax2.plot([r["tokens"] / 1e6 for r in val], [r["val_loss"] for r in val], "o-", ms=3, label=run.name)
        best = min(val, key=lambda r: r["val_loss"]) if val else None
        lines.append(f"| {run.name} | {train[-1]['step']:.0f} | {train[-1]['epoch']:.2f} | {train[-1]['tokens'] / 1e6:.1f} "
                     f"| {train[-1]['loss']:.3f} | " + (f"{best['val_loss']:.3f} ({best['step']:.0f}) | "
                                                        f"{val[-1]['val_loss']:.3f} |" if best else "| |"))
    for ax, title in ((ax1, "train loss"), (ax2, "validation loss (the training loss on held-out functions)")):
        ax.set_xlabel("training tokens (M)")
        ax.set_title(title, fontsize=9)
        ax.set_yscale("log")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "runs_comparison.png", dpi=110)
    (out / "runs.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {out}/runs_comparison.png and runs.md")


if __name__ == "__main__":
    main()
