#!/usr/bin/env python3
"""Per function, where one evaluated method beats another at k samples, and with which of its lists.

    python scripts/where_it_loses.py runs/eval-model priority_nooz runs/eval-coreset coreset_cover --samples 10

Both directories are `llmopt eval --out` runs over the same functions (their records.jsonl and
baseline.jsonl).  Prints the instructions each saves over -Oz (with -Oz backup), how many functions each wins,
and the second method's lists ranked by the instructions they save where the first method's k samples do worse.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path


def best_counts(run: Path, method: str, k: int) -> dict[str, dict]:
    """{fid: {"best": lowest count of the first k samples (None if none compiled), "samples": [...]}}"""
    out = {}
    for line in (run / "records.jsonl").open():
        rec = json.loads(line)
        if rec["method"] != method:
            continue
        samples = rec["samples"][:k]
        counts = [s["instcount"] for s in samples if s["instcount"] is not None]
        out[rec["fid"]] = {"best": min(counts) if counts else None, "samples": samples}
    if not out:
        raise SystemExit(f"{run}/records.jsonl has no records of method {method!r}")
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("run_a", type=Path)
    p.add_argument("method_a")
    p.add_argument("run_b", type=Path)
    p.add_argument("method_b")
    p.add_argument("--samples", type=int, default=10, help="k: the first k samples of each method")
    p.add_argument("--top", type=int, default=12)
    args = p.parse_args(argv)
    oz = {r["fid"]: r["instcount_oz"] for r in map(json.loads, (args.run_a / "baseline.jsonl").open())
          if r.get("instcount_oz") is not None}
    a = best_counts(args.run_a, args.method_a, args.samples)
    b = best_counts(args.run_b, args.method_b, args.samples)
    fids = [f for f in oz if f in a and f in b]
    saved_a = saved_b = wins_a = wins_b = 0
    lists: Counter = Counter()
    for f in fids:
        ca = min(oz[f], a[f]["best"] if a[f]["best"] is not None else oz[f])
        cb = min(oz[f], b[f]["best"] if b[f]["best"] is not None else oz[f])
        saved_a += oz[f] - ca
        saved_b += oz[f] - cb
        wins_a += ca < cb
        wins_b += cb < ca
        if cb < ca:
            winner = next(s for s in b[f]["samples"] if s["instcount"] == cb)
            lists[" ".join(winner["passes"])] += ca - cb
    total = sum(oz[f] for f in fids)
    print(f"{len(fids)} functions, -Oz {total} instructions, {args.samples} samples, -Oz backup")
    print(f"{args.method_a}: saves {saved_a} ({100 * saved_a / total:.2f}%), better on {wins_a} functions")
    print(f"{args.method_b}: saves {saved_b} ({100 * saved_b / total:.2f}%), better on {wins_b} functions")
    print(f"{args.method_b}'s lists where it is better (instructions ahead):")
    for ls, n in lists.most_common(args.top):
        print(f"  {n:5d}  {ls}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
