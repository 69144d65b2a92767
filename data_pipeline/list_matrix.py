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

A second matrix adds lists to the first (the thesis's all-to-all broadcast of every best list, which the
job's broadcast only approximates with its most common lists):

    python -m data_pipeline.list_matrix data/llmopt-v3 --name frequent --frequent 200 --all-functions \
        --labels data/llmopt-v3,data/llmopt-v3-more

measures the 200 most frequent best lists of the `--labels` training rows that no matrix of the split
holds yet, on every function, into DATA/lists-<split>-frequent.json.gz.  `load_matrix(DATA, names=
["frequent"])` merges it with the first (training: `extra_matrices: "frequent"`).  (A rare label can win widely: `mem2reg newgvn iroutliner default<O1>` is the best list
of 10 of v3's 20,937 training functions, yet `coreset_cover` finds it the third most useful list.)
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from data_pipeline.writer import read_shard, write_shard
from llmopt.dataset import read_rows
from llmopt.llvm.passes import OZ

CHUNK = 100  # functions per chunk file


def output_path(data_dir: str | Path, split: str, name: str | None = None) -> Path:
    return Path(data_dir) / (f"lists-{split}-{name}.json.gz" if name else f"lists-{split}.json.gz")


def split_matrices(data_dir: str | Path, split: str) -> list[Path]:
    """The split's first matrix (when built), then its named ones (`--name`) in name order."""
    first = output_path(data_dir, split)
    named = sorted(Path(data_dir).glob(f"lists-{split}-*.json.gz"))
    return ([first] if first.exists() else []) + named


def merge_matrices(matrices: list[dict[str, Any]]) -> dict[str, Any]:
    """One matrix from several: their lists in first-seen order, each row's hits the union of its hits
    in every matrix that has the row (a list measured twice keeps its lower count)."""
    index: dict[tuple[str, ...], int] = {}  # insertion order = the merged list order
    rows: dict[str, dict[str, Any]] = {}
    for matrix in matrices:
        remap = [index.setdefault(tuple(ls), len(index)) for ls in matrix["lists"]]
        for h, entry in matrix["rows"].items():
            hits = rows.setdefault(h, {"oz": entry["oz"], "hits": {}})["hits"]
            for j, c in entry["hits"]:
                hits[remap[j]] = min(c, hits.get(remap[j], c))
    return {"lists": [list(ls) for ls in index],
            "rows": {h: {"oz": e["oz"], "hits": [[j, c] for j, c in e["hits"].items()]} for h, e in rows.items()}}


def matrix_paths(data_dir: str | Path, split: str = "train", names: Sequence[str] = ()) -> list[Path]:
    """Per part of `data_dir` (a dataset or a training mix `A,B`, as `read_rows` reads it): its first
    matrix, then the named ones (`--name`) in `names`' order."""
    return [output_path(part, split, name) for part in str(data_dir).split(",") if part
            for name in (None, *names)]


def load_matrix(data_dir: str | Path, split: str = "train", names: Sequence[str] = ()) -> dict[str, Any] | None:
    """The saved matrix (see the module docstring), or None when one of `matrix_paths` was never built.

    With `names` or a training mix, the matrices are merged (`merge_matrices`)."""
    paths = matrix_paths(data_dir, split, names)
    if not all(path.exists() for path in paths):
        return None
    matrices = [read_shard(path) for path in paths]
    return matrices[0] if len(matrices) == 1 else merge_matrices(matrices)


def frequent_lists(label_data: str | Path, n: int, known: list[list[str]]) -> list[list[str]]:
    """The `n` most frequent best lists (`passes`) of `label_data`'s training rows, less those in `known`
    (what `coreset_cover` ranks, llmopt.sampling.baselines.Coreset)."""
    from llmopt.sampling.baselines import Coreset

    seen = {tuple(ls) for ls in known} | {(OZ,)}  # bare -Oz is every row's reference, never a hit
    labels = [r["passes"] for r in read_rows(label_data, "train", columns=["passes"])]
    return [ls for ls in Coreset(labels).lists[:n] if tuple(ls) not in seen]


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
          workers: int | None = None, progress: bool = True, name: str | None = None, frequent: int = 0,
          label_data: str | Path | None = None) -> Path:
    """Build (or resume) the matrix; returns its path.  The lists: the first `n_lists` of the job's
    broadcast lists, or with `frequent` the most frequent labels no matrix of the split holds yet (the
    module docstring); `name` writes a matrix beside the first one."""
    from llmopt.harness import Harness

    data_dir = Path(data_dir)
    work = data_dir / "work" / (f"lists-{split}-{name}" if name else f"lists-{split}")
    saved = work / "settings.json"
    if frequent:
        if saved.exists():  # resuming: the lists were chosen when the other matrices were fewer
            lists = json.loads(saved.read_text())["lists"]
        else:
            known = [ls for path in split_matrices(data_dir, split) if path != output_path(data_dir, split, name)
                     for ls in read_shard(path)["lists"]]
            lists = frequent_lists(label_data or data_dir, frequent, known)
    else:
        lists = json.loads((data_dir / "work" / "broadcast.json").read_text())[:n_lists]
    rows = read_rows(data_dir, split, columns=["ir_hash", "ir", "instcount_oz", "instcount_best"])
    if improvable_only:  # a function -Oz already solves has no list to learn under -Oz backup
        rows = [r for r in rows if r["instcount_best"] < r["instcount_oz"]]
    rows.sort(key=lambda r: r["ir_hash"])
    work.mkdir(parents=True, exist_ok=True)
    settings = {"lists": lists, "improvable_only": improvable_only, "functions": len(rows)}
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
    out = output_path(data_dir, split, name)
    write_shard(out, {"lists": lists, "rows": merged})
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("data", help="a dataset directory made by `llmopt datagen` (with work/broadcast.json)")
    p.add_argument("--split", default="train")
    p.add_argument("--lists", type=int, default=128, help="how many of the broadcast lists (most often best first)")
    p.add_argument("--all-functions", action="store_true", help="also the functions whose best is -Oz")
    p.add_argument("--name", help="write DATA/lists-SPLIT-NAME.json.gz beside the first matrix")
    p.add_argument("--frequent", type=int, default=0,
                   help="measure the N most frequent training labels that no matrix of the split holds")
    p.add_argument("--labels", help="whose training labels --frequent counts (a dataset or mix A,B; default DATA)")
    p.add_argument("--workers", type=int, default=None)
    args = p.parse_args(argv)
    if args.frequent and not args.name:
        p.error("--frequent writes a second matrix: give it a --name")
    print(build(args.data, args.split, args.lists, not args.all_functions, args.workers, name=args.name,
                frequent=args.frequent, label_data=args.labels))


if __name__ == "__main__":
    main()
