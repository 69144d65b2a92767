"""Grow a finished dataset's train split with functions its job selected but never labelled.

A datagen job stopped with `--limit-shards` leaves phase-0 functions (compiled, split into functions,
deduplicated) that no shard searched.  Rerunning the job on more shards would re-split the packages
(`split_by_group` fills test and validation by share of *all* rows), so a function could move between
splits and earlier test numbers would stop being comparable.  This job leaves the base dataset alone
and writes a train-only dataset of the unlabelled functions of the base's *train* packages, labelled
exactly as the base's rows were (same search settings, the base's broadcast lists), to be trained on
as a mix: `data_dir: "data/llmopt-v3,data/llmopt-v3-more"`.

    python -m data_pipeline.extend data/llmopt-v3 --out data/llmopt-v3-more --min-tokens 700

Larger functions first is the point of `--min-tokens`: in v3, 44% of the functions of 100-199
instructions beat -Oz and 2.4% of those under 25 do.  Each shard is searched (phase 1) and refined
(phase 2) in one go and written as one file, so a killed job loses at most the shard it was on and
`--write` can assemble whatever is finished at any time.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from data_pipeline.card import render_card
from data_pipeline.executors import run_shards
from data_pipeline.job import JobConfig, JobStats, interleave, run_phase1_shard, run_phase2_shard
from data_pipeline.writer import read_shard, shard_path, write_atomic, write_dataset
from llmopt.dataset import read_rows

PHASE = "p12"  # shard files of this job: phase 1 and 2 of one shard together
P2_STAT = "p2:"  # phase 2's counts in a shard's stats (the card shows the phases apart)


def phase0_functions(base: Path) -> dict[str, dict]:
    """{ir_hash: phase-0 record} of the base job, the first occurrence winning (as the job reads them)."""
    functions: dict[str, dict] = {}
    for path in sorted((base / "work" / "p0").glob("item-*.json.gz")):
        for rec in read_shard(path)["rows"]:
            functions.setdefault(rec["ir_hash"], rec)
    return functions


def unlabelled_train_functions(base: Path, functions: dict[str, dict], min_tokens: int, seed: int,
                               skip: Sequence[Path] = ()) -> list[str]:
    """The ir_hash of the base job's phase-0 functions that no split holds, from packages of the base's train split
    (so no test or validation package gains rows), larger than `min_tokens`; packages interleaved
    round-robin in a seeded order so that every prefix of the list mixes them."""
    labelled = set()
    for dataset in (base, *skip):  # `skip`: earlier extensions, whose functions are labelled too
        for split in ("train", "validation", "test"):
            labelled.update(r["ir_hash"] for r in read_rows(dataset, split, columns=["ir_hash"]))
    train_packages = {r["package"] for r in read_rows(base, "train", columns=["package"])}
    by_package: dict[str, list[str]] = {}
    for h, rec in functions.items():
        if h not in labelled and rec["package"] in train_packages and rec["n_tokens"] >= min_tokens:
            by_package.setdefault(rec["package"], []).append(h)
    packages = sorted(by_package)
    random.Random(seed).shuffle(packages)
    return interleave([by_package[p] for p in packages])


def label_shard(cfg: JobConfig, index: int, functions: list[dict], lists: list[list[str]], harness) -> dict:
    """Phase 1 (search) then phase 2 (broadcast, polish, optimized IR) of one shard."""
    p1 = run_phase1_shard(cfg, index, functions, harness)
    p2 = run_phase2_shard(cfg, index, p1["rows"], {f["ir_hash"]: f for f in functions}, lists, harness)
    p2["stats"] = {**p1["stats"], **{P2_STAT + k: v for k, v in p2["stats"].items()}}
    return p2


def prepare(base: Path, out: Path, functions: dict[str, dict], min_tokens: int, seed: int,
            workers: int | None, skip: Sequence[Path] = ()) -> tuple[JobConfig, list[list[str]]]:
    """The job's settings and shard plan (lists of ir_hash), stored under OUT/work the first time and
    read back after."""
    work = out / "work"
    work.mkdir(parents=True, exist_ok=True)
    settings = {"base": str(base), "min_tokens": min_tokens, "seed": seed, **({"skip": list(map(str, skip))} if skip else {})}
    saved = work / "extend.json"
    if saved.exists() and json.loads(saved.read_text()) != settings:
        raise SystemExit(f"{out} was started with other settings ({saved.read_text().strip()}): "
                         "pass the same ones or use another --out")
    if not (work / "config.json").exists():
        shutil.copy(base / "work" / "config.json", work / "config.json")
        shutil.copy(base / "work" / "broadcast.json", work / "broadcast.json")
    plan_path = work / "plan.json"
    if not plan_path.exists():
        order = unlabelled_train_functions(base, functions, min_tokens, seed, skip)
        shard_size = JobConfig.from_file(work / "config.json", out=str(out)).shard_functions
        plan = [order[i: i + shard_size] for i in range(0, len(order), shard_size)]
        write_atomic(plan_path, json.dumps(plan).encode())
        write_atomic(saved, json.dumps(settings).encode())
    # No csmith rows come here (a generated program is its own package, never a train one already
    # labelled), so the run-the-program label check has nothing to do.
    cfg = JobConfig.from_file(work / "config.json", out=str(out), workers=workers, safety=False)
    return cfg, json.loads(plan_path.read_text())


def write(out: Path, n_shards: int, functions: dict[str, dict], cfg: JobConfig, command: str) -> int:
    """OUT/train.parquet (+ an empty validation and test) and the card from the finished shards;
    returns the rows."""
    rows, p1, p2, done = [], Counter(), Counter(), 0
    for i in range(n_shards):
        if (path := shard_path(out, PHASE, i)).exists():
            payload = read_shard(path)
            rows += payload["rows"]
            done += 1
            for k, v in payload["stats"].items():
                (p2 if k.startswith(P2_STAT) else p1)[k.removeprefix(P2_STAT)] += v
    rows = [{**row, "ir": functions[row["ir_hash"]]["ir"]} for row in rows]
    by_split = {"train": rows, "validation": [], "test": []}
    write_dataset(by_split, out)
    lists = json.loads((out / "work" / "broadcast.json").read_text())
    card = render_card(cfg, by_split, p1, p2, len(lists))
    head, heading, rest = card.partition(f"# {out.name}\n\n")  # the note goes under the heading
    base = json.loads((out / "work" / "extend.json").read_text())["base"]
    note = (f"A train-only extension of `{base}` ({done} of {n_shards} planned shards labelled): the functions of "
            f"its train packages that its job selected but never labelled, labelled with its settings and its "
            f"broadcast lists (`data_pipeline/extend.py`). Validation and test are the base's; train on the mix "
            f"`{base},{out}`. Made by `{command}`; the settings below are the base job's.")
    write_atomic(out / "README.md", f"{head}{heading}{note}\n\n{rest}".encode())
    return len(rows)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("base", type=Path, help="a dataset folder made by `llmopt datagen` (with its work/ folder)")
    p.add_argument("--out", type=Path, required=True, help="the new train-only dataset folder")
    p.add_argument("--min-tokens", type=int, default=0, help="only functions of at least this many input tokens")
    p.add_argument("--seed", type=int, default=0, help="order of the packages")
    p.add_argument("--skip", type=Path, action="append", default=[], metavar="DATASET",
                   help="an earlier extension of BASE: its functions count as labelled (repeatable)")
    p.add_argument("--workers", type=int, default=None, help="harness workers (default: all cores)")
    p.add_argument("--limit-shards", type=int, default=None, help="stop after the first N shards")
    p.add_argument("--write", action="store_true", help="only assemble the finished shards into train.parquet")
    args = p.parse_args(argv)
    functions = phase0_functions(args.base)
    cfg, plan = prepare(args.base, args.out, functions, args.min_tokens, args.seed, args.workers, args.skip)
    n = len(plan) if args.limit_shards is None else min(len(plan), args.limit_shards)
    if not args.write:
        lists = json.loads((args.out / "work" / "broadcast.json").read_text())
        todo = [i for i in range(n) if not shard_path(args.out, PHASE, i).exists()]
        print(f"{sum(map(len, plan))} functions in {len(plan)} shards; {len(todo)} of the first {n} to do", flush=True)
        run_shards(cfg, PHASE, todo, n, label_shard, lambda i: ([functions[h] for h in plan[i]], lists),
                   JobStats())
    command = "python -m data_pipeline.extend " + " ".join(argv if argv is not None else sys.argv[1:])
    print(f"{write(args.out, len(plan), functions, cfg, command)} rows written to {args.out}/train.parquet")


if __name__ == "__main__":
    main()
