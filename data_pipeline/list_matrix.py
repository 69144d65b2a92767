"""Which common pass lists work on which training functions: the (function x list) count matrix.

The dataset's `good_lists` holds up to 64 lists that tie a function's best, but most are the best list
with a no-op pass appended: they say little about which *other* common lists would also have won.
Training targets that use every good list (training/targets.py, `set` policy) need that, so this
compiles each of the job's broadcast lists (work/broadcast.json, the most-often-best lists) on every
function of a split and keeps, per function, the lists that beat -Oz and their counts.

    python -m data_pipeline.list_matrix data/llmopt-v3 --split train --lists 128 --improvable-only

Output: DATA/lists-<split>.json.gz = {"lists": [...], "rows": {ir_hash: {"oz": n, "hits": [[list index,
count], ...]}}}.  Work is done in chunks under DATA/work/lists-<split>/, each written atomically: a
killed run resumes at the first missing chunk.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from data_pipeline.writer import read_shard, write_shard
from llmopt.dataset import read_rows

CHUNK = 100  # functions per chunk file


def output_path(data_dir: str | Path, split: str) -> Path:
    return Path(data_dir) / f"lists-{split}.json.gz"


def load_matrix(data_dir: str | Path, split: str = "train") -> dict[str, Any] | None:
    """The saved matrix (see the module docstring), or None when it was never built.

    `data_dir` may be a training mix (`A,B`, as `read_rows` reads it): the matrices of its parts are
    merged, each part's list indices mapped onto one list of lists; None when a part has none."""
    parts = [part for part in str(data_dir).split(",") if part]
    matrices = []
    for part in parts:
        path = output_path(part, split)
        if not path.exists():
            return None
        matrices.append(read_shard(path))
    if len(matrices) == 1:
        return matrices[0]
    index: dict[tuple[str, ...], int] = {}  # insertion order = the merged list order
    rows: dict[str, Any] = {}
    for matrix in matrices:
        remap = [index.setdefault(tuple(ls), len(index)) for ls in matrix["lists"]]
        for h, entry in matrix["rows"].items():
            rows.setdefault(h, {"oz": entry["oz"], "hits": [[remap[j], c] for j, c in entry["hits"]]})
    return {"lists": [list(ls) for ls in index], "rows": rows}


def measure_chunk(rows: list[dict[str, Any]], lists: list[list[str]], harness: Any) -> dict[str, Any]:
    """{ir_hash: {"oz": count, "hits": [[list index, count] for lists that beat -Oz]}}."""
    results = harness.evaluate_tasks([(r["ir"], ls) for r in rows for ls in lists])
    out = {}
    for i, row in enumerate(rows):
        oz = int(row["instcount_oz"])
        part = results[i * len(lists): (i + 1) * len(lists)]
        hits = [[j, res.instcount] for j, res in enumerate(part) if res.ok and res.instcount < oz]
        out[row["ir_hash"]] = {"oz": oz, "hits": hits}
    return out


def build(data_dir: str | Path, split: str = "train", n_lists: int = 128, improvable_only: bool = True,
          workers: int | None = None, progress: bool = True) -> Path:
    """Build (or resume) the matrix; returns its path."""
    from llmopt.harness import Harness

    data_dir = Path(data_dir)
    lists = json.loads((data_dir / "work" / "broadcast.json").read_text())[:n_lists]
    rows = read_rows(data_dir, split, columns=["ir_hash", "ir", "instcount_oz", "instcount_best"])
    if improvable_only:  # a function -Oz already solves has no list to learn under -Oz backup
        rows = [r for r in rows if r["instcount_best"] < r["instcount_oz"]]
    rows.sort(key=lambda r: r["ir_hash"])
    work = data_dir / "work" / f"lists-{split}"
    work.mkdir(parents=True, exist_ok=True)
    settings = {"lists": lists, "improvable_only": improvable_only, "functions": len(rows)}
    saved = work / "settings.json"
    if saved.exists() and json.loads(saved.read_text()) != settings:
        raise SystemExit(f"{work} was started with other settings: delete it or pass the same ones")
    saved.write_text(json.dumps(settings))
    started = time.time()
    chunks = range(0, len(rows), CHUNK)
    with Harness(workers=workers, cache=False) as harness:
        for n, start in enumerate(chunks):
            path = work / f"chunk-{n:05d}.json.gz"
            if path.exists():
                continue
            write_shard(path, measure_chunk(rows[start:start + CHUNK], lists, harness))
            if progress:
                print(f"chunk {n + 1}/{len(chunks)}  {time.time() - started:.0f}s", flush=True)
    merged: dict[str, Any] = {}
    for n in range(len(chunks)):
        merged.update(read_shard(work / f"chunk-{n:05d}.json.gz"))
    out = output_path(data_dir, split)
    write_shard(out, {"lists": lists, "rows": merged})
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("data", help="a dataset directory made by `llmopt datagen` (with work/broadcast.json)")
    p.add_argument("--split", default="train")
    p.add_argument("--lists", type=int, default=128, help="how many of the broadcast lists (most often best first)")
    p.add_argument("--all-functions", action="store_true", help="also the functions whose best is -Oz")
    p.add_argument("--workers", type=int, default=None)
    args = p.parse_args(argv)
    print(build(args.data, args.split, args.lists, not args.all_functions, args.workers))


if __name__ == "__main__":
    main()
