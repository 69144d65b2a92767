#!/usr/bin/env python3
"""Training curves of Pearl agent runs (issue 15): mean episode return (= mean log4 speedup) per PPO update.

    python scripts/plot_pearl_training.py runs/pearl-cm-nopre:"no pre-training" \
        runs/pearl-cm-pre:"pre-trained" --out docs/results/pearl/training

Each RUN is a run folder of `python -m llmopt.poly.agent.train` (its `log.csv` and `config.json`),
optionally followed by `:LABEL`.  Writes `training.png` (return and geometric-mean speedup of the
episodes, with a moving average) and `training.md` (the last updates of each run, and its settings)
to --out.  A run with `reward: costmodel` plots *predicted* speedups; the caption says so.
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

SMOOTH = 10  # updates in the moving average


def read_log(run: Path) -> list[dict[str, float]]:
    with (run / "log.csv").open() as fh:
        return [{k: float(v) if v not in ("", None) else float("nan") for k, v in row.items()}
                for row in csv.DictReader(fh)]


def moving(xs: list[float], k: int = SMOOTH) -> list[float]:
    out = []
    for i in range(len(xs)):
        window = [x for x in xs[max(0, i - k + 1): i + 1] if x == x]
        out.append(sum(window) / len(window) if window else float("nan"))
    return out


def _parse(spec: str) -> tuple[Path, str]:
    path, _, label = spec.partition(":")
    return Path(path), label or Path(path).name


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", help="RUN_DIR[:LABEL]")
    parser.add_argument("--out", type=Path, default=Path("docs/results/pearl/training"))
    args = parser.parse_args()
    runs = [(*_parse(spec),) for spec in args.runs]
    args.out.mkdir(parents=True, exist_ok=True)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    lines = ["# Pearl agent training", ""]
    rewards = set()
    for path, label in runs:
        log = read_log(path)
        cfg = json.loads((path / "config.json").read_text())
        rewards.add(cfg.get("reward", "measured"))
        x = [r["update"] for r in log]
        for ax, key in ((ax1, "mean_return"), (ax2, "geomean_speedup")):
            ys = [r[key] for r in log]
            (line,) = ax.plot(x, ys, lw=0.6, alpha=0.35)
            ax.plot(x, moving(ys), lw=1.6, color=line.get_color(), label=label)
        last = log[-SMOOTH:]
        mean = sum(r["mean_return"] for r in last) / len(last)
        geo = sum(r["geomean_speedup"] for r in last) / len(last)
        lines += [f"## {label} (`{path}`)", "",
                  f"- {len(log)} updates, {int(log[-1]['steps'])} environment steps, {log[-1]['minutes']:.1f} minutes",
                  f"- reward: {cfg.get('reward', 'measured')}" + (f" (cost model `{cfg.get('cost_model')}`)"
                                                                 if cfg.get("reward") == "costmodel" else ""),
                  f"- pre-training: {cfg.get('pretrain')} programs from {cfg.get('pretrain_data') or 'measurements'}, "
                  f"{cfg.get('pretrain_epochs')} epochs" if cfg.get("pretrain") or cfg.get("pretrain_data")
                  else "- pre-training: none",
                  f"- last {len(last)} updates: mean return {mean:.3f} (log4 speedup), "
                  f"mean episode geomean speedup {geo:.3f}x", ""]
    predicted = "; speedups predicted by the cost model" if rewards == {"costmodel"} else ""
    ax1.set_xlabel("PPO update")
    ax1.set_ylabel("mean episode return (log4 speedup)")
    ax2.set_xlabel("PPO update")
    ax2.set_ylabel("geomean final speedup of episodes")
    for ax in (ax1, ax2):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"Pearl agent, PPO on generated programs (thin: per update; thick: {SMOOTH}-update mean{predicted})",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(args.out / "training.png", dpi=110)
    (args.out / "training.md").write_text("\n".join(lines))
    print(f"wrote {args.out / 'training.png'} and training.md")


if __name__ == "__main__":
    main()
