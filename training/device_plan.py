"""Several training runs side by side in one GPU-machine call, packed so that the device tool returns them.

    # on the GPU machine (OUT set by the device tool), after scripts/device_stage.sh stage here:
    PYTHONPATH=. python3 -m training.device_plan run PLAN.json
    # here, with the folder the tool returned:
    python3 -m training.device_plan fetch FILES_AT runs/PLAN_NAME

Why side by side: the models that run on CPU afterwards (5-17M parameters) leave an H100 mostly idle,
a call lasts at most 10 minutes and the machine is given back after 30 s idle, so one call that trains
every variant of a comparison at once is the whole experiment.

A plan (JSON) names the runs: `{"minutes": 7, "runs": [{"name": "tiny-set", "config": "training/configs/
x.json", "set": {"lr": 0.001}}, ...]}`.  Each run is `training.cli CONFIG` with out_dir `RUN_ROOT/NAME`,
the carried data (`--data`, default .device/data) and `max_minutes` = the run's `minutes` or the plan's;
the values in `set` win.  A run with `"after": "EARLIER_RUN"` is a second stage: it starts when that run
ends, from its final model (`"init": "best"`: its lowest-validation-loss one), so that one call can
pre-train and then fine-tune (two stages may follow one run).  Afterwards the models each run's `keep`
names (default `["best", "model"]`: lowest validation loss, then final) are copied with bf16 weights,
and everything (models, logs, stdout) goes into one tar split into 15 MiB parts in $OUT: the tool
returns at most 8 files, 16 MiB each, 64 MiB in all.  Models that would not fit are left out (second
choices before first ones), the summary says so, and `run PLAN --only RUN/KIND,...` packs them from the
still-warm machine without training.  A run that fails keeps its logs in the pack.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

from training.device_export import copy_bf16

PART_BYTES = 15 * 2**20
PACK_LIMIT = 60 * 2**20  # under the tool's 64 MiB, with room for the checksum file
LOGS = ("train_log.csv", "validation_log.csv", "train_config.json", "stdout.log")


def load_plan(path: Path) -> dict[str, Any]:
    plan = json.loads(path.read_text())
    runs = plan.get("runs") or []
    names = [r.get("name") for r in runs]
    if not runs or any(not n or "/" in n for n in names) or len(set(names)) != len(names):
        raise ValueError(f"{path}: a plan needs runs with distinct names (no '/'), got {names}")
    for i, r in enumerate(runs):
        if not Path(r["config"]).exists():
            raise FileNotFoundError(f"{path}: run {r['name']}: config {r['config']} not found")
        # Only earlier runs, so that the order of the plan is an order the stages can run in (no cycles).
        if r.get("after") is not None and r["after"] not in names[:i]:
            raise ValueError(f"{path}: run {r['name']}: 'after' must name an earlier run, got {r['after']!r}")
    if float(plan.get("minutes", 0)) <= 0:
        raise ValueError(f"{path}: 'minutes' (each run's training cap) must be > 0")
    return plan


def _minutes(plan: dict[str, Any], run: dict[str, Any]) -> float:
    return float(run.get("minutes", plan["minutes"]))


def chain_minutes(plan: dict[str, Any]) -> float:
    """The longest chain of `after` stages: how long the whole plan trains."""
    total: dict[str, float] = {}
    for run in plan["runs"]:  # earlier runs first (load_plan checks it)
        total[run["name"]] = _minutes(plan, run) + (total[run["after"]] if run.get("after") else 0.0)
    return max(total.values())


def _command(run: dict[str, Any], data: str, out_dir: Path, minutes: float, init: Path | None = None) -> list[str]:
    values = {"data_dir": data, "out_dir": str(out_dir), "max_minutes": minutes,
              **({"init_from": str(init)} if init is not None else {}), **run.get("set", {})}
    cmd = [sys.executable, "-m", "training.cli", run["config"], "--no-progress"]
    for key, value in values.items():
        cmd += ["--set", f"{key}={json.dumps(value) if not isinstance(value, str) else value}"]
    return cmd


def _start(plan: dict[str, Any], run: dict[str, Any], data: str, root: Path, threads: int):
    """Start one run (a stage `after` another starts from that one's final model, or its `best/` with
    `"init": "best"`); None when the model it needs is missing."""
    init = None
    if run.get("after"):
        init = root / run["after"] / run.get("init", "model")
        if not (init / "model.safetensors").exists():
            print(f"{run['name']}: skipped, {init} has no model", flush=True)
            return None
    out = root / run["name"]
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "PYTHONUNBUFFERED": "1"}
    log = (out / "stdout.log").open("w")
    command = _command(run, data, out, _minutes(plan, run), init)
    print(f"started {run['name']}: {' '.join(command[3:])}", flush=True)
    return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env), log


def train_all(plan: dict[str, Any], data: str, root: Path) -> dict[str, int | None]:
    """Start every run as soon as the run it comes `after` has ended (the others at once), wait for all
    (killing any still running 90 s past the longest chain's minutes), and return each run's
    exit code (None: killed or skipped)."""
    roots = sum(1 for r in plan["runs"] if not r.get("after"))
    threads = max(1, (os.cpu_count() or 2) // max(roots, len(plan["runs"]) - roots))
    deadline = time.time() + chain_minutes(plan) * 60 + 90
    pending, running, codes = list(plan["runs"]), {}, {}
    while pending or running:
        for run in [r for r in pending if not r.get("after") or r["after"] in codes]:
            pending.remove(run)
            started = _start(plan, run, data, root, threads)
            if started is None:
                codes[run["name"]] = None
            else:
                running[run["name"]] = started
        for name, (proc, log) in list(running.items()):
            if proc.poll() is None and time.time() < deadline:
                continue
            killed = proc.poll() is None
            if killed:
                proc.kill()
            code = proc.wait()
            codes[name] = None if killed else code
            log.close()
            del running[name]
            print(f"{name}: exit {codes[name]}", flush=True)
        time.sleep(1 if running else 0)
    return codes


def collect(plan: dict[str, Any], root: Path, stage: Path, only: set[str] | None = None) -> list[str]:
    """Copy logs and bf16 models of every run into `stage` within PACK_LIMIT: the models each run's
    `keep` names (default best, then final), every run's first choice before any second; `only`: just
    these `RUN/KIND` models (a second call for what the first left out). Returns what was left out."""
    wanted = []  # (priority, run, kind)
    for run in plan["runs"]:
        out = root / run["name"]
        (stage / run["name"]).mkdir(parents=True, exist_ok=True)
        for name in LOGS:
            if (out / name).exists():
                shutil.copy2(out / name, stage / run["name"] / name)
        wanted += [(i, run["name"], kind) for i, kind in enumerate(run.get("keep", ["best", "model"]))
                   if only is None or f"{run['name']}/{kind}" in only]
    used = sum(f.stat().st_size for f in stage.rglob("*") if f.is_file())
    left_out = []
    for _, name, kind in sorted(wanted):
        source = root / name / kind
        if not (source / "model.safetensors").exists():
            continue
        target = stage / name / kind
        copy_bf16(source, target)
        size = sum(f.stat().st_size for f in target.iterdir())
        if used + size > PACK_LIMIT:
            shutil.rmtree(target)
            left_out.append(f"{name}/{kind}")
        else:
            used += size
    return left_out


def pack(stage: Path, out: Path) -> list[Path]:
    """`stage` as one tar split into PART_BYTES parts `pack.tar.partN` in `out`, plus `pack.tar.sha256`."""
    out.mkdir(parents=True, exist_ok=True)
    tar_path = Path(tempfile.mkdtemp()) / "pack.tar"
    with tarfile.open(tar_path, "w") as tar:
        tar.add(stage, arcname=".")
    digest = hashlib.sha256(tar_path.read_bytes()).hexdigest()
    (out / "pack.tar.sha256").write_text(digest + "\n")
    parts = []
    with tar_path.open("rb") as f:
        while chunk := f.read(PART_BYTES):
            parts.append(out / f"pack.tar.part{len(parts)}")
            parts[-1].write_bytes(chunk)
    return parts


def summary(plan: dict[str, Any], root: Path, codes: dict[str, int | None]) -> list[str]:
    import csv

    lines = []
    for run in plan["runs"]:
        out = root / run["name"]
        rows = list(csv.DictReader((out / "train_log.csv").open())) if (out / "train_log.csv").exists() else []
        vals = list(csv.DictReader((out / "validation_log.csv").open())) if (out / "validation_log.csv").exists() else []
        last = rows[-1] if rows else {}
        best = min(vals, key=lambda r: float(r["val_loss"])) if vals else {}
        lines.append(f"{run['name']}: exit {codes.get(run['name'])}, step {last.get('step')}, epoch {last.get('epoch')},"
                     f" loss {last.get('loss')}, tokens/s {last.get('tokens_per_s')}, best val_loss "
                     f"{best.get('val_loss')} at step {best.get('step')}, last val_loss "
                     f"{vals[-1]['val_loss'] if vals else None}")
    return lines


def run_plan(plan_path: Path, data: str, root: Path, out: Path, only: set[str] | None = None) -> int:
    """Train the plan's runs and pack them into `out`; with `only`, pack those models of runs trained
    by an earlier call on the same machine (under `root`) without training."""
    plan = load_plan(plan_path)
    codes = train_all(plan, data, root) if only is None else {r["name"]: 0 for r in plan["runs"]}
    stage = Path(tempfile.mkdtemp()) / "pack"
    left_out = collect(plan, root, stage, only)
    lines = summary(plan, root, codes) + [f"left out (over {PACK_LIMIT >> 20} MiB): {', '.join(left_out) or 'none'}"]
    (stage / "SUMMARY.txt").write_text("\n".join(lines) + "\n")
    shutil.copy2(plan_path, stage / "plan.json")
    parts = pack(stage, out)
    print("\n".join(lines))
    print(f"packed {len(parts)} part(s), {sum(p.stat().st_size for p in parts) / 2**20:.1f} MiB in {out}")
    return 0 if all(c == 0 for c in codes.values()) else 1


def fetch(files_at: Path, dest: Path) -> None:
    """Join the parts, check the checksum and unpack into `dest` (one folder per run)."""
    parts = sorted(files_at.glob("pack.tar.part*"), key=lambda p: int(p.name.rsplit("part", 1)[1]))
    if not parts or not (files_at / "pack.tar.sha256").exists():
        raise FileNotFoundError(f"{files_at}: no pack.tar.part* / pack.tar.sha256 (not a device_plan result)")
    with tempfile.TemporaryDirectory() as tmp:
        tar_path = Path(tmp) / "pack.tar"
        with tar_path.open("wb") as f:
            for p in parts:
                f.write(p.read_bytes())
        digest = hashlib.sha256(tar_path.read_bytes()).hexdigest()
        if digest != (files_at / "pack.tar.sha256").read_text().strip():
            raise ValueError("sha256 mismatch: a part is missing or damaged")
        dest.mkdir(parents=True, exist_ok=True)
        with tarfile.open(tar_path) as tar:
            tar.extractall(dest, filter="data")
    summary_file = dest / "SUMMARY.txt"
    print(f"unpacked into {dest}" + (":\n" + summary_file.read_text() if summary_file.exists() else ""))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="verb", required=True)
    r = sub.add_parser("run", help="on the GPU machine: train the plan's runs, pack into $OUT")
    r.add_argument("plan", type=Path)
    r.add_argument("--data", default=".device/data", help="the carried dataset (default .device/data)")
    r.add_argument("--root", type=Path, default=Path("/tmp/llmopt-device-runs"), help="the runs' out_dirs")
    r.add_argument("--out", type=Path, default=None, help="where the parts go (default $OUT)")
    r.add_argument("--only", default=None, help="RUN/KIND,...: pack these models of an earlier call's runs "
                   "(still under --root on the warm machine) instead of training")
    f = sub.add_parser("fetch", help="here: join, check and unpack what the device tool returned")
    f.add_argument("files_at", type=Path)
    f.add_argument("dest", type=Path)
    args = parser.parse_args(argv)
    if args.verb == "fetch":
        fetch(args.files_at, args.dest)
        return 0
    out = args.out or (Path(os.environ["OUT"]) if os.environ.get("OUT") else None)
    if out is None:
        parser.error("--out or $OUT: where the parts go")
    only = set(args.only.split(",")) if args.only else None
    return run_plan(args.plan, args.data, args.root, out, only)


if __name__ == "__main__":
    sys.exit(main())
