"""`llmopt datagen --status --out DIR`: where a (possibly running or stopped) job stands, and what the
autotuner has found so far, from the work files alone (no LLVM, no network)."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path

from data_pipeline.writer import read_shard
from llmopt.metrics import SIZE_BINS, overall_improvement, share, size_bin


def _gain(rows: list[dict]) -> str:
    improved = sum(r["instcount_best"] < r["instcount_oz"] for r in rows)
    gain = overall_improvement((r["instcount_oz"] for r in rows), (r["instcount_best"] for r in rows))
    return f"{len(rows):6d} functions  {gain:6.2f}% over -Oz  {share(improved, len(rows)):5.1f}% improved"


def job_status(out: Path) -> str:
    work = out / "work"
    if not (work / "config.json").exists():
        return f"{out}: no datagen job here (no work/config.json)"
    items = sorted((work / "p0").glob("item-*.json.gz"))
    lines = [f"{out}: phase 0 {len(items)} work items done"]
    plan_path = work / "plan.json"
    if not plan_path.exists():
        return "\n".join(lines + ["phase 1 not planned yet (phase 0 unfinished)"])
    shards = json.loads(plan_path.read_text())["shards"]
    p1 = sorted((work / "p1").glob("shard-*.json.gz"))
    p2 = sorted((work / "p2").glob("shard-*.json.gz"))
    lines += [f"phase 1 {len(p1)}/{len(shards)} shards, phase 2 {len(p2)}/{len(shards)} shards"]
    meta = {}
    for item in items:
        for rec in read_shard(item)["rows"]:
            meta.setdefault(rec["ir_hash"], rec["source"])
    rows = [r for path in (p2 or p1) for r in read_shard(path)["rows"]]
    if not rows:
        return "\n".join(lines)
    phase = "phase 2 (after broadcast and polish)" if p2 else "phase 1 (before broadcast and polish)"
    evals = sum(r["evaluations"] for r in rows)
    lines += ["", f"Labels so far, {phase}; {evals / len(rows):.0f} compilations a function:",
              f"  all              {_gain(rows)}"]
    by_kind: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by_kind[meta.get(r["ir_hash"], "?").split(":")[0]].append(r)
    lines += [f"  {kind:16s} {_gain(rs)}" for kind, rs in sorted(by_kind.items())]
    lines += ["", "By size (instructions before optimization):"]
    for b in SIZE_BINS:
        rs = [r for r in rows if size_bin(r["instcount_input"]) == b]
        if rs:
            lines.append(f"  {b:16s} {_gain(rs)}")
    methods = Counter(r["search_method"] for r in rows)
    lines += ["", "Search method of the label: " + ", ".join(f"{k} {v}" for k, v in methods.most_common())]
    return "\n".join(lines)
