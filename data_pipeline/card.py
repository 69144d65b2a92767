"""The dataset card (OUT/README.md): how it was made, sources and licenses, sizes, the autotuner's gains
per split, source and size bin, how labels were found, how many good lists each function has."""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from pathlib import Path

from data_pipeline.writer import good_lists
from llmopt.dataset import SPLITS
from llmopt.metrics import SIZE_BINS, overall_improvement, share, size_bin


def improvement(rows: list[dict]) -> float:
    """Overall improvement over -Oz in %: (sum oz - sum best) / sum oz."""
    return overall_improvement((r["instcount_oz"] for r in rows), (r["instcount_best"] for r in rows))


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


def _improved_pct(rows: list[dict]) -> float:
    """% of the functions whose best list beats -Oz."""
    return share(sum(r["instcount_best"] < r["instcount_oz"] for r in rows), len(rows))


def _gain_row(label: str, rows: list[dict], total: int, extra: str = "") -> str:
    return (f"| {label} |{extra} {len(rows)} | {share(len(rows), total):.1f}% | {improvement(rows):.2f}% | "
            f"{_improved_pct(rows):.1f}% |")


def _command(cfg) -> str:
    opts = [f"--source {s}" for s in cfg.sources]
    for name in ("budget", "greedy_steps", "max_tokens", "min_instructions", "package_cap", "broadcast_top",
                 "shard_units", "shard_functions", "split", "seed", "limit_shards"):
        if name == "budget" and getattr(cfg, "metric", "instcount") != "instcount":
            opts.append(f"--metric {cfg.metric}")
        value = getattr(cfg, name, None)
        if value is not None:
            opts.append(f"--{name.replace('_', '-')} {value}")
    return f"llmopt datagen {' '.join(opts)} --out {cfg.out}"


def _how_made(cfg, n_broadcast: int) -> list[str]:
    split = getattr(cfg, "split", "hash")
    return [
        "## How it was made", "",
        "- Input IR from `clang -Oz -Xclang -disable-llvm-passes -emit-llvm -S` (C++: `clang++ -std=c++17`), one "
        "module per defined function (llvm-extract), normalized (thesis §4.2.2); deduplicated on the normalized-IR "
        "hash. Csmith's runtime helpers and C++ standard-library instantiations are dropped.",
        f"- Functions of at least {getattr(cfg, 'min_instructions', 1)} instructions and at most {cfg.max_tokens} "
        f"tokens of the model's tokenizer, at most {getattr(cfg, 'package_cap', None)} per package, sampled in a "
        "seeded order across the package's files.",
        f"- Autotuner per function: `default<Oz>`; random search of {cfg.budget} compilations (lists of "
        f"1..{cfg.max_len} passes, half starting with `default<Oz>`, seed {cfg.seed}); greedy search (append the "
        f"pass that helps most) until a step no longer improves (at most {cfg.greedy_steps} steps); minimization; "
        f"then the {n_broadcast} most frequent distinct best lists broadcast to every function, and a greedy "
        "polish from each function's best list (same rule) and minimization again. Ties go to the shorter list, "
        "then to `default<Oz>`. Every label is at most the -Oz count (the search starts from -Oz).",
        "- `good_lists`: the lists that tie for the best count (up to 64, shortest first; `n_best_lists` counts "
        "them all) and the 16 best distinct lists measured, with their counts.",
        "- Label safety: for csmith programs every label that beats -Oz was checked by building the whole program "
        "with that function's optimized IR (others at -Oz) and comparing its checksum output with `clang -Oz`; "
        "rejected labels fall back to `default<Oz>`.",
        ("- Split by package: test and validation hold whole packages (a generated program is its own) never seen "
         f"in train, about {100 * cfg.test_share:g}% and {100 * cfg.validation_share:g}% of the functions."
         if split == "package" else "- Split by content hash (a test function never appears in train)."),
        f"- Command: `{_command(cfg)}`", "",
    ]


def _objective(cfg) -> str:
    sized = getattr(cfg, "metric", "instcount") == "objsize"
    return "object size (.text + .data bytes after llc)" if sized else "instruction count"


def _bytes_summary(cfg, rows: list[dict]) -> list[str]:
    """Tuned for bytes: the gain in bytes (the tables below count the chosen lists' instructions)."""
    if getattr(cfg, "metric", "instcount") != "objsize":
        return []
    oz, best = [r["objsize_oz"] for r in rows], [r["objsize_best"] for r in rows]
    return [f"Labels minimize bytes: **{overall_improvement(oz, best):.2f}%** smaller than -Oz (sum -Oz {sum(oz)} "
            f"bytes, sum best {sum(best)}); `good_lists` hold bytes (`objsize`). The instruction counts below are "
            "those of the chosen lists.", ""]


def render_card(cfg, by_split: dict[str, list[dict]], p1: Counter, p2: Counter, n_broadcast: int) -> str:
    rows = [r for s in SPLITS for r in by_split.get(s, [])]
    key = "package" if rows and "package" in rows[0] else "source"
    llvm = sorted({r["llvm_version"] for r in rows})
    lines = [
        "---", "license: other", "tags: [llvm, compiler-optimization, pass-ordering]", "---", "",
        f"# {Path(cfg.out).name}", "",
        f"LLVM {', '.join(map(str, llvm))} IR functions with the best `opt` pass list llmopt's autotuner found for "
        f"{_objective(cfg)} (thesis §4.3.2), one row per function. Columns: `docs/interfaces.md` (Dataset rows).", "",
        *_bytes_summary(cfg, rows),
        *_how_made(cfg, n_broadcast),
        *_counts(by_split, rows, key),
        *_autotuner(rows, p2),
        *_sizes(rows),
        *_test_split(by_split.get("test", [])),
        *_sources(by_split, rows, key),
        "## Pipeline counts", "",
        "Phases 0-1 (compile, select, search): " + ", ".join(f"{k}: {v}" for k, v in sorted(p1.items())), "",
        "Phase 2 (broadcast, polish, safety): " + ", ".join(f"{k}: {v}" for k, v in sorted(p2.items())), "",
        "## Loading", "", "```python",
        "from datasets import load_dataset",
        f"ds = load_dataset('parquet', data_files={{s: f'{cfg.out}/{{s}}.parquet' for s in "
        "['train', 'validation', 'test']})",
        "```", "",
    ]
    return "\n".join(lines)


def _counts(by_split: dict[str, list[dict]], rows: list[dict], key: str) -> list[str]:
    improved = sum(r["instcount_best"] < r["instcount_oz"] for r in rows)
    return [
        "## Counts", "",
        "| split | functions | packages | improvement over -Oz | functions improved |", "|---|---|---|---|---|",
        *[f"| {s} | {len(by_split.get(s, []))} | {len({r[key] for r in by_split.get(s, [])})} | "
          f"{improvement(by_split.get(s, [])):.2f}% | "
          f"{_improved_pct(by_split.get(s, [])):.1f}% |"
          for s in SPLITS],
        f"| total | {len(rows)} | {len({r[key] for r in rows})} | {improvement(rows):.2f}% | "
        f"{share(improved, len(rows)):.1f}% |", "",
    ]


def _autotuner(rows: list[dict], p2: Counter) -> list[str]:
    improved = sum(r["instcount_best"] < r["instcount_oz"] for r in rows)
    worse = sum(r["instcount_best"] > r["instcount_oz"] for r in rows)
    evals = [r["evaluations"] for r in rows]
    n_best = [r.get("n_best_lists", r.get("n_ties", 1)) for r in rows]
    kept_lists = [len(r.get("good_lists") or good_lists(r)) for r in rows]
    return [
        "## Autotuner", "",
        f"- Overall improvement over -Oz: **{improvement(rows):.2f}%** (sum -Oz {sum(r['instcount_oz'] for r in rows)}, "
        f"sum best {sum(r['instcount_best'] for r in rows)}); functions improved: {improved} "
        f"({share(improved, len(rows)):.1f}%); worse than -Oz: {worse}.",
        f"- Compilations per function: mean {statistics.mean(evals) if evals else 0:.0f}, median "
        f"{statistics.median(evals) if evals else 0:.0f}, total {sum(evals)}.",
        f"- Search method of the final label: {dict(sorted(Counter(r['search_method'] for r in rows).items()))}.",
        f"- Lists reaching the best count per function (min / 25% / 50% / 75% / 90% / 99% / max): {_quantiles(n_best)}; "
        f"good lists kept per function: {_quantiles(kept_lists)}.",
        f"- Labels checked by running: {p2.get('safety_checked', 0)} in {p2.get('safety_programs', 0)} programs; "
        f"rejected: {p2.get('safety_rejected', 0)} ({_rejections(p2)}).", "",
        "Best-list lengths: " + ", ".join(f"{k}: {v}" for k, v in sorted(Counter(len(r['passes']) for r in rows).items())),
        "", "Pass frequencies in best lists (top 30): " + ", ".join(
            f"`{p}` {n}" for p, n in Counter(p for r in rows for p in r["passes"]).most_common(30)), "",
    ]


def _sizes(rows: list[dict]) -> list[str]:
    return [
        "## By size (instructions before optimization)", "",
        "| size bin | functions | share | improvement over -Oz | functions improved |", "|---|---|---|---|---|",
        *_size_rows(rows), "",
        "## Sizes", "",
        "Tokens of the input IR (min / 25% / 50% / 75% / 90% / 99% / max): " + _quantiles([r["n_tokens"] for r in rows]),
        "", "Instructions before optimization (same quantiles): " + _quantiles([r["instcount_input"] for r in rows]),
        "", "Instructions after -Oz (same quantiles): " + _quantiles([r["instcount_oz"] for r in rows]), "",
    ]


def _size_rows(rows: list[dict], prefix: str = "") -> list[str]:
    """One gain row per size bin (instructions before optimization) that holds any of `rows`."""
    by_bin = {b: [r for r in rows if size_bin(r["instcount_input"]) == b] for b in SIZE_BINS}
    return [_gain_row(f"{prefix}{b}", by_bin[b], len(rows)) for b in SIZE_BINS if by_bin[b]]


def _test_split(rows: list[dict]) -> list[str]:
    """The test split alone, per source and size bin: where the labels' headroom is (and is not)."""
    if not rows:
        return []
    sources = sorted({r["source"] for r in rows})
    small = [r for r in rows if r["instcount_input"] < 25]
    rest = [r for r in rows if r["instcount_input"] >= 50]
    return [
        "## Test split by source and size", "",
        "The test split holds packages never seen in training; its headroom over -Oz per source and size bin. "
        f"Functions improved: {_improved_pct(rows):.1f}% overall; {_improved_pct(rest):.1f}% of the "
        f"{len(rest)} functions of 50 or more instructions, but {_improved_pct(small):.1f}% of the {len(small)} "
        "of fewer than 25 instructions, where -Oz is usually already the best any list of the search reaches "
        f"({share(len(small), len(rows)):.0f}% of the split: real code is mostly small functions).", "",
        "| source / size bin | functions | share | improvement over -Oz | functions improved |", "|---|---|---|---|---|",
        _gain_row("all", rows, len(rows)),
        *[_gain_row(s, [r for r in rows if r["source"] == s], len(rows)) for s in sources],
        *_size_rows(rows, "size "), "",
    ]


def _sources(by_split: dict[str, list[dict]], rows: list[dict], key: str) -> list[str]:
    """Per package (csmith programs as one): its split, license and gains."""
    def group(r: dict) -> str:
        return "csmith (all programs)" if r["source"] == "csmith" else r[key]

    by_package: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by_package[group(r)].append(r)
    licenses = {group(r): r["license"] for r in rows}
    split_of_package = {r[key]: s for s in SPLITS for r in by_split.get(s, []) if r["source"] != "csmith"}
    split_of_package["csmith (all programs)"] = "each program in one"
    return [
        "## Sources and licenses", "",
        "| package | split | license | functions | share | improvement over -Oz | functions improved |",
        "|---|---|---|---|---|---|---|",
        *[_gain_row(p, by_package[p], len(rows), f" {split_of_package[p]} | {licenses[p]} |")
          for p in sorted(by_package, key=lambda p: -len(by_package[p]))], "",
    ]


def write_card(out: Path, cfg, by_split, p1: Counter, p2: Counter, n_broadcast: int) -> None:
    from data_pipeline.writer import write_atomic

    write_atomic(out / "README.md", render_card(cfg, by_split, p1, p2, n_broadcast).encode())
