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
instructions beat -Oz and 2.4% of those under 25 do.

`--beyond-cap N` goes past what the base selected: its train packages that hit its `package_cap`
(v3: 1,000 functions; 14 train packages had more) are compiled and selected again with cap N, in the
same seeded order, so the first functions are the base's and the rest are new (one file per package
under OUT/work/p0x, written when the package is done; a killed job redoes at most the one it was on):

    python -m data_pipeline.extend data/llmopt-v3 --out data/llmopt-v3-cap2k --beyond-cap 2000 \
        --skip data/llmopt-v3-more --skip data/llmopt-v3-more2

Each shard is searched (phase 1) and refined (phase 2) in one go and written as one file, so a killed
job loses at most the shard it was on and `--write` can assemble whatever is finished at any time.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import shutil
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from data_pipeline.card import render_card
from data_pipeline.executors import run_shards
from data_pipeline.job import (
    JobConfig,
    JobStats,
    interleave,
    plan_items,
    run_phase0_item,
    run_phase1_shard,
    run_phase2_shard,
)
from data_pipeline.writer import item_path, read_shard, shard_path, write_atomic, write_dataset, write_shard
from llmopt.dataset import read_rows

PHASE = "p12"  # shard files of this job: phase 1 and 2 of one shard together
BEYOND_CAP = "p0x"  # phase-0 files of the base's capped train packages, selected again with a larger cap
P2_STAT = "p2:"  # phase 2's counts in a shard's stats (the card shows the phases apart)


def phase0_functions(base: Path, out: Path | None = None) -> dict[str, dict]:
    """{ir_hash: phase-0 record} of the base job, the first occurrence winning (as the job reads them),
    then those that `reselect_capped` added under OUT/work/p0x."""
    functions: dict[str, dict] = {}
    paths = sorted((base / "work" / "p0").glob("item-*.json.gz"))
    if out is not None:
        paths += sorted((out / "work" / BEYOND_CAP).glob("item-*.json.gz"))
    for path in paths:
        for rec in read_shard(path)["rows"]:
            functions.setdefault(rec["ir_hash"], rec)
    return functions


def beyond_cap_path(out: Path, index: int) -> Path:
    """The file of base work item `index` selected again by `reselect_capped` (named as the base's p0 file)."""
    return out / "work" / BEYOND_CAP / item_path(out, index).name


def capped_train_items(base: Path) -> dict[int, str]:
    """{phase-0 item index: item key} of the base's work items that stopped at its package cap and
    hold only train packages (so re-selecting them can add no function to a test or validation package)."""
    train_packages = {r["package"] for r in read_rows(base, "train", columns=["package"])}
    out = {}
    for path in sorted((base / "work" / "p0").glob("item-*.json.gz")):
        payload = read_shard(path)
        packages = {r["package"] for r in payload["rows"]}
        if payload["stats"].get("over_cap", 0) > 0 and packages and packages <= train_packages:
            out[int(path.name[len("item-"):].split(".")[0])] = payload["item"]
    return out


def reselect_capped(base: Path, out: Path, cap: int, workers: int | None) -> None:
    """Phase 0 again, with package cap `cap`, for `capped_train_items(base)`; skips items already done."""
    from data_pipeline.compile import TokenCounter

    cfg = JobConfig.from_file(base / "work" / "config.json", out=str(out), package_cap=cap, workers=workers,
                              progress=False)
    todo = {i: key for i, key in capped_train_items(base).items()
            if not beyond_cap_path(out, i).exists()}
    if not todo:
        return
    # Only the sources that made these items: a generated source lists its units when planned.
    keep = [spec for spec in cfg.sources if spec.split(":", 1)[0] in ("pypi", "npm", "packages")
            or any(key.startswith(spec + "#") for key in todo.values())]
    items = {item.key: item for item in plan_items(dataclasses.replace(cfg, sources=keep))}
    count_tokens = TokenCounter(cfg.tokenizer)
    for i, key in sorted(todo.items()):
        if key not in items:
            raise SystemExit(f"{base}: work item {key!r} is not in its sources any more (catalog changed?)")
        payload = run_phase0_item(cfg, items[key], count_tokens)
        print(f"{key}: {len(payload['rows'])} functions selected with cap {cap}", flush=True)
        write_shard(beyond_cap_path(out, i), payload)


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


def check_settings(out: Path, settings: dict) -> None:
    """Refuse to resume OUT with other settings than it was started with."""
    saved = out / "work" / "extend.json"
    if saved.exists() and json.loads(saved.read_text()) != settings:
        raise SystemExit(f"{out} was started with other settings ({saved.read_text().strip()}): "
                         "pass the same ones or use another --out")


def prepare(base: Path, out: Path, functions: dict[str, dict], settings: dict, min_tokens: int, seed: int,
            workers: int | None, skip: Sequence[Path] = ()) -> tuple[JobConfig, list[list[str]]]:
    """The job's settings and shard plan (lists of ir_hash), stored under OUT/work the first time and
    read back after."""
    work = out / "work"
    work.mkdir(parents=True, exist_ok=True)
    check_settings(out, settings)
    saved = work / "extend.json"
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
    settings = json.loads((out / "work" / "extend.json").read_text())
    base = settings["base"]
    what = "that its job selected but never labelled"
    if cap := settings.get("beyond_cap"):
        what += (f", and those past its package cap that a second selection with cap {cap} (same seeded order) "
                 "found in its capped train packages")
    note = (f"A train-only extension of `{base}` ({done} of {n_shards} planned shards labelled): the functions of "
            f"its train packages {what}, labelled with its settings and its "
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
    p.add_argument("--beyond-cap", type=int, default=None, metavar="N",
                   help="also select again, with package cap N, the base's train packages that hit its cap")
    p.add_argument("--write", action="store_true", help="only assemble the finished shards into train.parquet")
    args = p.parse_args(argv)
    settings = {"base": str(args.base), "min_tokens": args.min_tokens, "seed": args.seed,
                **({"skip": list(map(str, args.skip))} if args.skip else {}),
                **({"beyond_cap": args.beyond_cap} if args.beyond_cap else {})}
    check_settings(args.out, settings)
    if args.beyond_cap and not args.write:
        reselect_capped(args.base, args.out, args.beyond_cap, args.workers)
    functions = phase0_functions(args.base, args.out if args.beyond_cap else None)
    cfg, plan = prepare(args.base, args.out, functions, settings, args.min_tokens, args.seed, args.workers, args.skip)
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
