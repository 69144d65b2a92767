#!/usr/bin/env python3
"""Replay other orders of Priority Sampling's recorded candidates, without the model or the compiler.

    python scripts/study_candidate_order.py runs/EVAL_DIR [--samples 1,3,10,30] [--json OUT]
    python scripts/study_candidate_order.py MODEL_RUN --method priority_nooz --coreset-run CORESET_RUN

An `llmopt eval` run records every candidate's pass list, instruction count and (since 2026-11-25) the
model's log p(list).  Any reordering of the first P lists of `priority` is then a new method whose
improvement at k samples can be computed exactly from the records: the counts are deterministic.
Rows: the run's `coreset_cover` and `priority`, and for each pool P the first P lists ordered by
log p / passes**alpha (`priority_rerank` is P=30, alpha=1) or by maximal marginal relevance over
their first pass (a list whose first pass was already handed out pays `lam` in score: the coreset
wins by covering different heads).  Improvement over -Oz with the -Oz backup, as the eval reports it.

Use it to choose on a validation run and then confirm once on test: every row is a method someone
could ship, and picking the best of many rows on one split overfits that split.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from eval.metrics import outcome_at, summarize  # noqa: E402
from eval.store import BASELINE, JsonlStore, candidates_of  # noqa: E402

Order = Callable[[list[dict]], list[dict]]


def confidence(pool: int, alpha: float) -> Order:
    """The first `pool` samples by log p(list) / passes**alpha, the rest after them in tree order."""
    def order(samples: list[dict]) -> list[dict]:
        key = lambda s: s.get("logprob", 0.0) / max(1, len(s["passes"])) ** alpha  # noqa: E731
        return sorted(samples[:pool], key=key, reverse=True) + samples[pool:]
    return order


def diverse_heads(pool: int, lam: float) -> Order:
    """Maximal marginal relevance: per-pass confidence minus `lam` per earlier list with the same head."""
    def order(samples: list[dict]) -> list[dict]:
        left, out, heads = list(samples[:pool]), [], Counter()
        while left:
            best = max(left, key=lambda s: s.get("logprob", 0.0) / max(1, len(s["passes"])) - lam * heads[s["passes"][0]])
            left.remove(best)
            out.append(best)
            heads[best["passes"][0]] += 1
        return out + samples[pool:]
    return order


def improvement(records: dict[str, dict], base: dict[str, dict], order: Order, k: int) -> tuple[float, int]:
    """(overall improvement % over -Oz with the -Oz backup, instructions saved) at k samples."""
    pairs = []
    for fid, rec in records.items():
        b = base[fid]
        ordered = dict(rec, samples=order(rec["samples"]))
        out = outcome_at(candidates_of(ordered), k, b["instcount_input"], b["instcount_oz"], backup=True)
        pairs.append((b["instcount_oz"], out))
    s = summarize(pairs)
    return s.overall_improvement_pct, s.instcount_oz - s.instcount_result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="an llmopt eval output folder with coreset_cover and priority records")
    parser.add_argument("--samples", default="1,3,10,30")
    parser.add_argument("--method", default="priority", help="the Priority Sampling method to reorder (e.g. priority_nooz)")
    parser.add_argument("--coreset-run", type=Path, help="the eval folder with the coreset_cover records (default: RUN)")
    parser.add_argument("--json", type=Path, help="also write the table as JSON")
    args = parser.parse_args()
    ks = [int(k) for k in args.samples.split(",")]
    by_method: dict[str, dict[str, dict]] = defaultdict(dict)
    for rec in JsonlStore(args.run / "records.jsonl").read():
        by_method[rec["method"]][rec["fid"]] = rec
    base = {b["fid"]: b for b in JsonlStore(args.run / BASELINE).read()}
    coreset = by_method["coreset_cover"]
    if args.coreset_run:
        coreset = {rec["fid"]: rec for rec in JsonlStore(args.coreset_run / "records.jsonl").read()
                   if rec["method"] == "coreset_cover"}
    ps = by_method[args.method]
    if not ps or not any("logprob" in s for rec in ps.values() for s in rec["samples"]):
        print(f"error: the run has no {args.method} records with log-probabilities (an eval from before 2026-11-25?)",
              file=sys.stderr)
        return 1
    rows: list[tuple[str, dict[str, dict], Order]] = [("coreset_cover", coreset, list),
                                                      (f"{args.method} (tree order)", ps, list)]
    rows += [(f"confidence P={p} alpha={a:g}", ps, confidence(p, a)) for p in (10, 30, 100) for a in (0.5, 1.0)]
    rows += [(f"diverse heads P=30 lam={lam:g}", ps, diverse_heads(30, lam)) for lam in (0.1, 0.3, 1.0)]
    table = {}
    print(f"{len(ps)} functions; improvement over -Oz % (instructions saved), -Oz backup")
    print(f"{'order':30s}" + "".join(f"{'@' + str(k):>15s}" for k in ks))
    for name, recs, order in rows:
        if not recs:
            continue
        cells = [improvement(recs, base, order, k) for k in ks]
        table[name] = {str(k): {"pct": round(p, 3), "saved": n} for k, (p, n) in zip(ks, cells, strict=True)}
        print(f"{name:30s}" + "".join(f"{p:8.2f} ({n:4d})" for p, n in cells))
    if args.json:
        args.json.write_text(json.dumps(table, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
