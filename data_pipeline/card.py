"""The dataset card (OUT/README.md): sources, licenses, counts, token lengths, autotuner gains."""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from pathlib import Path

from data_pipeline.split import SPLITS, TEST_PERMILLE, VALIDATION_PERMILLE


def improvement(rows: list[dict]) -> float:
    """Overall improvement over -Oz in %: (sum oz - sum best) / sum oz."""
    oz = sum(r["instcount_oz"] for r in rows)
    return 100.0 * (oz - sum(r["instcount_best"] for r in rows)) / oz if oz else 0.0


def _quantiles(values: list[int]) -> str:
    if not values:
        return "-"
    values = sorted(values)
    pick = [values[min(len(values) - 1, int(q * len(values)))] for q in (0.0, 0.25, 0.5, 0.75, 0.9, 0.99)]
    return " / ".join(str(v) for v in pick) + f" / {values[-1]}"


def _rejections(p2: Counter) -> str:
    prefix = "safety_rejected_"
    parts = [f"{k[len(prefix):]}: {v}" for k, v in sorted(p2.items()) if k.startswith(prefix)]
    return ", ".join(parts) or "none"


def render_card(cfg, by_split: dict[str, list[dict]], p1: Counter, p2: Counter, n_broadcast: int) -> str:
    rows = [r for s in SPLITS for r in by_split.get(s, [])]
    by_source: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by_source[r["source"]].append(r)
    licenses = {r["source"]: r["license"] for r in rows}
    llvm = sorted({r["llvm_version"] for r in rows})
    lines = [
        "---", "license: other", "tags: [llvm, compiler-optimization, pass-ordering]", "---", "",
        f"# {Path(cfg.out).name}", "",
        "LLVM-IR functions with the best `opt` pass list llmopt's autotuner found for instruction count "
        "(thesis §4.3.2), one row per function. Columns: see `docs/interfaces.md` (Dataset rows).", "",
        "## How it was made", "",
        f"- LLVM {', '.join(map(str, llvm))}; input IR from `clang -Oz -Xclang -disable-llvm-passes -emit-llvm -S`, "
        "one module per defined function (llvm-extract), normalized (thesis §4.2.2).",
        f"- Functions of at most {cfg.max_tokens} estimated tokens; deduplicated on the normalized-IR hash; "
        "csmith's runtime helpers (safe_*, crc32*, transparent_crc, platform_main_*, main) dropped.",
        f"- Autotuner per function: `default<Oz>`, random search of {cfg.budget} evaluations (lists of 1..{cfg.max_len} "
        f"passes, half starting with `default<Oz>`, seed {cfg.seed}), greedy search ({cfg.greedy_steps} steps), "
        f"minimization of the best list, then the {n_broadcast} most frequent distinct best lists broadcast to every "
        "function. Ties go to `default<Oz>`, then to the shorter list. A function whose -Oz count is 1 is not "
        "searched (a defined function keeps at least its terminator).",
        "- Label safety: for csmith programs every label that beats -Oz was checked by building the whole program "
        "with that function's optimized IR (others at -Oz) and comparing its checksum output with `clang -Oz`; "
        "rejected labels fall back to `default<Oz>`.",
        f"- Split by content hash: test {TEST_PERMILLE / 10:g}%, validation {VALIDATION_PERMILLE / 10:g}%, "
        "rest train (a test function never appears in train).",
        f"- Command: `llmopt datagen {' '.join('--source ' + s for s in cfg.sources)} --budget {cfg.budget} "
        f"--greedy-steps {cfg.greedy_steps} --broadcast-top {cfg.broadcast_top} --shard-units {cfg.shard_units} "
        f"--seed {cfg.seed}{' --limit-shards ' + str(cfg.limit_shards) if cfg.limit_shards is not None else ''} "
        f"--out {cfg.out}`", "",
        "## Counts", "",
        "| split | functions |", "|---|---|",
        *[f"| {s} | {len(by_split.get(s, []))} |" for s in SPLITS],
        f"| total | {len(rows)} |", "",
        "## Sources and licenses", "",
        "| source | license | functions | sum -Oz | sum best | improvement over -Oz | improved |",
        "|---|---|---|---|---|---|---|",
    ]
    for src in sorted(by_source):
        rs = by_source[src]
        improved = sum(r["instcount_best"] < r["instcount_oz"] for r in rs)
        lines.append(f"| {src} | {licenses[src]} | {len(rs)} | {sum(r['instcount_oz'] for r in rs)} | "
                     f"{sum(r['instcount_best'] for r in rs)} | {improvement(rs):.2f}% | "
                     f"{100 * improved / len(rs):.1f}% |")
    improved = sum(r["instcount_best"] < r["instcount_oz"] for r in rows)
    worse = sum(r["instcount_best"] > r["instcount_oz"] for r in rows)
    evals = [r["evaluations"] for r in rows]
    methods = Counter(r["search_method"] for r in rows)
    freq = Counter(p for r in rows for p in r["passes"])
    lengths = Counter(len(r["passes"]) for r in rows)
    lines += [
        "", "## Autotuner", "",
        f"- Overall improvement over -Oz: **{improvement(rows):.2f}%** "
        f"(sum -Oz {sum(r['instcount_oz'] for r in rows)}, sum best {sum(r['instcount_best'] for r in rows)}).",
        f"- Functions improved: {improved} ({100 * improved / max(1, len(rows)):.1f}%); worse than -Oz: {worse}.",
        f"- Evaluations per function: mean {statistics.mean(evals) if evals else 0:.0f}, total {sum(evals)}.",
        f"- Search method of the final label: {dict(sorted(methods.items()))}.",
        f"- Labels checked by running: {p2.get('safety_checked', 0)} in {p2.get('safety_programs', 0)} programs; "
        f"rejected: {p2.get('safety_rejected', 0)} "
        f"({_rejections(p2)}).",
        "", "Best-list lengths: " + ", ".join(f"{k}: {lengths[k]}" for k in sorted(lengths)), "",
        "Pass frequencies in best lists (top 25): " + ", ".join(f"`{p}` {n}" for p, n in freq.most_common(25)), "",
        "## Sizes", "",
        "Estimated tokens of the input IR (min / 25% / 50% / 75% / 90% / 99% / max): "
        + _quantiles([r["n_tokens"] for r in rows]), "",
        "Instructions before optimization (same quantiles): " + _quantiles([r["instcount_input"] for r in rows]), "",
        "## Pipeline counts", "",
        "Phase 1 (compile, split, dedupe, autotune): " + ", ".join(f"{k}: {v}" for k, v in sorted(p1.items())), "",
        "Phase 2 (broadcast, safety): " + ", ".join(f"{k}: {v}" for k, v in sorted(p2.items())), "",
        "## Loading", "", "```python",
        "from datasets import load_dataset",
        f"ds = load_dataset('parquet', data_files={{s: f'{cfg.out}/{{s}}.parquet' for s in "
        "['train', 'validation', 'test']})",
        "```", "",
    ]
    return "\n".join(lines)


def write_card(out: Path, cfg, by_split, p1: Counter, p2: Counter, n_broadcast: int) -> None:
    from data_pipeline.writer import write_atomic

    write_atomic(out / "README.md", render_card(cfg, by_split, p1, p2, n_broadcast).encode())
