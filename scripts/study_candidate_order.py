#!/usr/bin/env python3
"""Replay other orders of Priority Sampling's recorded candidates, without the model or the compiler.

    python scripts/study_candidate_order.py runs/EVAL_DIR [--samples 1,3,10,30] [--json OUT]
    python scripts/study_candidate_order.py MODEL_RUN --method priority_nooz --coreset-run CORESET_RUN
    python scripts/study_candidate_order.py MODEL_RUN --method priority_nooz --coreset-run CORESET_RUN \
        --mixture OTHER_RUN [OTHER_RUN ...] --cover-data data/llmopt-v3,data/llmopt-v3-more,data/llmopt-v3-more2

An `llmopt eval` run records every candidate's pass list, instruction count and (since 2026-11-25) the
model's log p(list).  Any reordering of the first P lists of `priority` is then a new method whose
improvement at k samples can be computed exactly from the records: the counts are deterministic.
Rows: the run's `coreset_cover` and `priority`, and for each pool P the first P lists ordered by
log p / passes**alpha (`priority_rerank` is P=30, alpha=1) or by maximal marginal relevance over
their first pass (a list whose first pass was already handed out pays `lam` in score: the coreset
wins by covering different heads).  Improvement over -Oz with the -Oz backup, as the eval reports it.

Two more rows on request.  `--mixture RUN...`: an ensemble of models, each run an eval of another model
on the same split: the union of every run's recorded lists ordered by the mean of the models'
probabilities (a list outside a model's recorded ones gets that model's lowest recorded log p, an upper
bound), i.e. what sequence-level ensembling would propose first.  `--cover-data TRAIN`: maximal marginal
relevance over the training list matrix (`data_pipeline.list_matrix`, first and `frequent`): a list pays
log(1 - share of its training savings that the lists already handed out also reach), so lists that win on
the same training functions as earlier ones move back.

Use it to choose on a validation run and then confirm once on test: every row is a method someone
could ship, and picking the best of many rows on one split overfits that split.
"""

from __future__ import annotations

import argparse
import json
import math
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


def mean_logp(key: tuple[str, ...], logps: list[dict], floors: list[float]) -> float:
    """log of the mean over models of p(key); a model that did not record `key` counts its floor."""
    vals = [lp.get(key, floor) for lp, floor in zip(logps, floors, strict=True)]
    top = max(vals)
    return top + math.log(sum(math.exp(v - top) for v in vals) / len(vals))


def mixture(runs: list[dict[str, dict]]) -> dict[str, dict]:
    """Records whose samples are the union of every run's, ordered by the mean probability over the runs
    (module docstring); functions missing from a run are left out."""
    out = {}
    for fid in set.intersection(*(set(r) for r in runs)):
        logps = [{tuple(s["passes"]): s["logprob"] for s in run[fid]["samples"] if "logprob" in s} for run in runs]
        union = {tuple(s["passes"]): s for run in runs for s in run[fid]["samples"]}
        floors = [min(lp.values(), default=-50.0) for lp in logps]
        ranked = sorted(union.values(), key=lambda s: -mean_logp(tuple(s["passes"]), logps, floors))  # noqa: B023
        out[fid] = dict(runs[0][fid], samples=ranked)
    return out


def cover(pool: int, train: str) -> Order:
    """Maximal marginal relevance over the training list matrix (module docstring)."""
    from data_pipeline.list_matrix import load_matrix

    matrix = load_matrix(train, "train", ["frequent"])
    if matrix is None:
        raise SystemExit(f"{train}: no list matrices (first and frequent) for its train split")
    index = {tuple(ls): j for j, ls in enumerate(matrix["lists"])}
    saved: dict[int, dict[str, int]] = defaultdict(dict)  # list -> {function: instructions it saves}
    for h, entry in matrix["rows"].items():
        for j, count in entry["hits"]:
            if entry["oz"] > count:
                saved[j][h] = entry["oz"] - count
    memo: dict[tuple, float] = {}

    def overlap(j: int | None, chosen: tuple[int, ...]) -> float:
        if j is None or not chosen or not saved.get(j):
            return 0.0
        if (j, chosen) not in memo:
            reached = sum(min(s, max(saved[a].get(h, 0) for a in chosen)) for h, s in saved[j].items())
            memo[j, chosen] = reached / sum(saved[j].values())
        return memo[j, chosen]

    def order(samples: list[dict]) -> list[dict]:
        left, out, chosen = list(samples[:pool]), [], ()
        while left:
            best = max(left, key=lambda s: s.get("logprob", 0.0) + math.log(max(
                1e-6, 1.0 - overlap(index.get(tuple(s["passes"])), chosen))))
            left.remove(best)
            out.append(best)
            if (j := index.get(tuple(best["passes"]))) is not None:
                chosen = tuple(sorted({*chosen, j}))
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
    parser.add_argument("--mixture", type=Path, nargs="+", default=[], metavar="RUN",
                        help="evals of other models on the same split: add the ensemble row (module docstring)")
    parser.add_argument("--cover-data", metavar="TRAIN",
                        help="training mix with list matrices: add the training-coverage rows (module docstring)")
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
    if args.mixture:
        others = [{r["fid"]: r for r in JsonlStore(run / "records.jsonl").read() if r["method"] == args.method}
                  for run in args.mixture]
        rows.append((f"mixture of {1 + len(others)} models", mixture([ps, *others]), list))
    if args.cover_data:
        rows += [(f"training cover P={p}", ps, cover(p, args.cover_data)) for p in (15, 30)]
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
