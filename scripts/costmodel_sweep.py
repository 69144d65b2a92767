"""Many cost-model training runs side by side, scored alike: one device call is a whole sweep.

    python scripts/costmodel_sweep.py PLAN.json --data data/poly-costmodel[,MORE...] --features FEATURES.pkl[.gz] \
        --root runs/cm-sweep [--pack OUT] [--keep 3] [--min-baseline-ms 5]

A plan (JSON) is `{"minutes": 8, "runs": [{"name": "g1", "device": "cuda", "args": ["--epochs", "40", ...]}]}`:
each run is `python -m llmopt.poly.costmodel.train DATA --out ROOT/NAME --device DEVICE --threads 1 ARGS`,
all started at once; any still running after the plan's minutes is stopped (each epoch already saved its
best model and history, so a stopped run is scored like a finished one). `--features` (the cache a run
on the same data wrote, gzipped or not) is uncompressed once and linked into every run, so no run
featurizes again.

Afterwards every run's best model (lowest validation MAPE) is scored on each split of the same seed-0
program split (with `--min-baseline-ms MS` also on its programs that run at least MS ms: keys ending `_MSms`),
and `summary.json` gets the scores, the per-epoch history and the seconds per epoch; with `--pack OUT`, the
summary, the logs and the `--keep` best models by validation MAPE (of those programs, with MS) go there (the device
tool returns at most 8 files). Several CUDA runs share one GPU: the model is small and its steps are
launch-bound (one tree structure a batch), so the GPU idles between any one run's kernels.
"""

from __future__ import annotations

import argparse
import gzip
import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import torch

from llmopt.poly.costmodel.data import load_folders
from llmopt.poly.costmodel.model import load_model
from llmopt.poly.costmodel.train import SPLITS, TrainConfig, at_least, featurize_rows, scores


def shared_features(features: Path, root: Path) -> Path:
    """The feature cache, uncompressed once under `root`, for every run to link to."""
    root.mkdir(parents=True, exist_ok=True)
    if features.suffix != ".gz":
        return features.resolve()
    plain = root / "features.pkl"
    with gzip.open(features, "rb") as src, plain.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    return plain.resolve()


def launch(plan: dict, data: str, root: Path, features: Path | None) -> dict[str, subprocess.Popen]:
    """Start every run; each reads the shared cache through a link (a run that featurizes new rows
    replaces its link with its own file, atomically, and leaves the shared one alone)."""
    cache = shared_features(features, root) if features is not None else None
    procs = {}
    for run in plan["runs"]:
        out = root / run["name"]
        out.mkdir(parents=True, exist_ok=True)
        if cache is not None and not (out / "features.pkl").exists():
            (out / "features.pkl").symlink_to(cache)
        cmd = [sys.executable, "-m", "llmopt.poly.costmodel.train", *data.split(","), "--out", str(out),
               "--device", run.get("device", "cpu"), "--threads", "1", *run.get("args", [])]
        env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
        log = (out / "stdout.log").open("w")
        procs[run["name"]] = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
        print(f"started {run['name']}: {' '.join(cmd[3:])}", flush=True)
    return procs


def wait(procs: dict[str, subprocess.Popen], minutes: float) -> dict[str, int | None]:
    """Exit code of each run; None for one stopped at the deadline."""
    deadline = time.time() + minutes * 60
    while time.time() < deadline and any(p.poll() is None for p in procs.values()):
        time.sleep(5)
    codes: dict[str, int | None] = {}
    for name, p in procs.items():
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
            codes[name] = None
        else:
            codes[name] = p.returncode
    return codes


def history(run_dir: Path) -> list[dict]:
    last = run_dir / "last.pt"
    if not last.exists():
        return []
    return torch.load(last, map_location="cpu", weights_only=False).get("history", [])


_SETS: dict = {}  # suffix -> the featurized splits, shared with the scoring workers by fork


def _suffix(min_baseline_ms: float) -> str:
    return f"_{min_baseline_ms:g}ms" if min_baseline_ms else ""


def _score(model_path: Path) -> dict:
    torch.set_num_threads(1)
    model, _ = load_model(model_path, "cpu")
    out = {}
    for suffix, sets in _SETS.items():
        for split in SPLITS[1:]:  # validation and test; the training MAPE is in the history
            out[f"mape_{split}{suffix}"], out[f"pick_{split}{suffix}"] = scores(model, sets[split])
    return out


def score_all(plan: dict, data: str, root: Path, codes: dict, started: dict, features: Path | None,
              min_baseline_ms: float = 0.0) -> dict:
    """Every run's best model on the validation and test splits (in parallel: one process a model), with
    its history and time per epoch."""
    cache = root / plan["runs"][0]["name"] / "features.pkl" if features is not None else None  # the shared one
    rows = load_folders(data)
    _SETS[""] = featurize_rows(rows, TrainConfig(), progress=False, cache=cache)
    if min_baseline_ms:
        # the rows `train --min-baseline-ms` keeps (row by row), so these scores match its validation MAPE
        _SETS[_suffix(min_baseline_ms)] = featurize_rows(at_least(rows, min_baseline_ms), TrainConfig(),
                                                         progress=False, cache=cache)
    out = {}
    for run in plan["runs"]:
        name, run_dir = run["name"], root / run["name"]
        hist = history(run_dir)
        out[name] = {"device": run.get("device", "cpu"), "args": run.get("args", []), "exit": codes[name],
                     "epochs_done": len(hist), "history": hist}
        if hist:
            out[name]["seconds_per_epoch"] = (os.path.getmtime(run_dir / "last.pt") - started[name]) / len(hist)
    scored = [n for n in out if (root / n / "costmodel.pt").exists()]
    with multiprocessing.get_context("fork").Pool(min(len(scored), os.cpu_count() or 1) or 1) as pool:
        for name, row in zip(scored, pool.map(_score, [root / n / "costmodel.pt" for n in scored]), strict=True):
            out[name].update(row)
    for name, row in out.items():
        print(name, {k: v for k, v in row.items() if k != "history"}, flush=True)
    return out


def pack(summary: dict, root: Path, out: Path, keep: int, key: str = "mape_validation") -> None:
    """The summary, the logs and the `keep` models with the lowest `key`, into `out`."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    with tarfile.open(out / "logs.tar.gz", "w:gz") as tar:
        for name in summary:
            if (root / name / "stdout.log").exists():
                tar.add(root / name / "stdout.log", arcname=f"{name}.log")
    scored = [n for n in summary if key in summary[n]]
    for name in sorted(scored, key=lambda n: summary[n][key])[:keep]:
        shutil.copy(root / name / "costmodel.pt", out / f"{name}.pt")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("plan", type=Path)
    p.add_argument("--data", default="data/poly-costmodel", help="a collected folder, or several comma-joined")
    p.add_argument("--features", type=Path, help="a features.pkl (or .pkl.gz) of the same data")
    p.add_argument("--root", type=Path, default=Path("runs/cm-sweep"))
    p.add_argument("--pack", type=Path, help="folder for summary.json, logs and the best models")
    p.add_argument("--keep", type=int, default=3, help="best models to pack (default 3)")
    p.add_argument("--min-baseline-ms", type=float, default=0.0,
                   help="also score on the programs whose original schedule runs at least this long")
    args = p.parse_args()
    plan = json.loads(args.plan.read_text())
    procs = launch(plan, args.data, args.root, args.features)
    started = {name: time.time() for name in procs}
    codes = wait(procs, float(plan["minutes"]))
    summary = score_all(plan, args.data, args.root, codes, started, args.features, args.min_baseline_ms)
    (args.root / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    if args.pack:
        pack(summary, args.root, args.pack, args.keep, "mape_validation" + _suffix(args.min_baseline_ms))
    return 0


if __name__ == "__main__":
    sys.exit(main())
