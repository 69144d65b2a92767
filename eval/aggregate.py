"""Aggregation of an evaluation's records into the results dict (results.json): per method and sample
budget k, without and with -Oz backup, by source and size, object-size honesty and pass statistics."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from eval import metrics
from eval.inputs import Function
from eval.store import candidates_of
from llmopt.llvm.passes import OZ
from llmopt.metrics import share

if TYPE_CHECKING:  # the runner calls aggregate: no import at run time
    from eval.runner import EvalConfig


def _base(b: dict, metric: str) -> tuple[int, int]:
    """(input, -Oz) of one function's baseline row in `metric`."""
    return b[f"{metric}_input"], b[f"{metric}_oz"]


def _grouper(functions: Sequence[Function], max_groups: int = 12) -> Any:
    """Source -> dataset group: the full source (`pypi:zlib-ng`) when there are few, else its prefix (`pypi`)."""
    sources = {fn.source for fn in functions}
    if len(sources) <= max_groups and not any(s.startswith(("dir:", "file:")) for s in sources):
        return lambda fn: fn.source
    return lambda fn: fn.source.split(":", 1)[0]


def aggregate(functions: Sequence[Function], base: dict[str, dict], records: dict[tuple[str, str], dict],
              methods: Sequence[str], ks: Sequence[int], objsizes: dict[tuple[str, str], int | None],
              train: Sequence[dict], described: str, cfg: EvalConfig) -> dict:
    """The results dict (results.json): per method and k, without and with -Oz backup, plus breakdowns."""
    by_fid = {fn.fid: fn for fn in functions}
    metric = cfg.metric
    oz_total = sum(_base(base[fn.fid], metric)[1] for fn in functions)
    input_total = sum(_base(base[fn.fid], metric)[0] for fn in functions)
    # With metric objsize every count below (instcount_* fields included) is bytes: see `unit`.
    out: dict[str, Any] = {
        "dataset": described, "n_functions": len(functions), "metric": metric,
        "unit": "bytes" if metric == "objsize" else "instructions", "instcount_oz": oz_total,
        "instcount_input": input_total, "samples": list(ks), "seed": cfg.seed, "model": cfg.options.model,
        "methods": {}, "by_source": {}, "by_size": {}, "objsize": {}, "pass_frequency": {},
    }
    k_report = sorted({ks[0], ks[-1]})
    group_of = _grouper(functions)
    train_lists = {tuple(r["passes"]) for r in train if r.get("passes") is not None}
    for method in methods:
        recs = {fid: r for (m, fid), r in records.items() if m == method}
        if not recs:
            continue
        per_k = {k: _outcomes(method, recs, k, base, by_fid, metric) for k in ks}
        out["methods"][method] = {
            "n_functions": len(recs), "samples": {str(k): _summary(per_k[k]) for k in ks},
            "notes": sorted({r["note"].split(":")[0] for r in recs.values() if r.get("note")})}
        for k in k_report:
            label = f"{method}@{k}"
            groups: dict[str, list] = {}
            sizes: dict[str, list] = {}
            for fn, oz, raw, backed in per_k[k]:
                groups.setdefault(group_of(fn), []).append((oz, raw, backed))
                sizes.setdefault(metrics.size_bin(base[fn.fid]["instcount_input"]), []).append((oz, raw, backed))
            out["by_source"][label] = {g: _pair_summary(v) for g, v in sorted(groups.items())}
            out["by_size"][label] = {b: _pair_summary(sizes[b]) for b in metrics.SIZE_BINS if b in sizes}
        for k in ks if objsizes else ():
            out["objsize"][f"{method}@{k}"] = _objsize_honesty(per_k[k], objsizes)
        if method not in ("autotuner", "oz"):  # the autotuner's lists are `labels` below
            first = [candidates_of(r)[0].passes for r in recs.values() if r["samples"]]
            out["pass_frequency"][method] = pass_statistics(first, train_lists)
    labels = [fn.passes for fn in functions if fn.passes is not None]
    if labels:
        out["pass_frequency"]["labels"] = pass_statistics(labels, train_lists)
    return out


_Row = tuple[Function, int, metrics.Outcome, metrics.Outcome]  # (function, -Oz value, raw, with -Oz backup)


def _outcomes(method: str, recs: dict[str, dict], k: int, base: dict[str, dict], by_fid: dict[str, Function],
              metric: str) -> list[_Row]:
    """Each function's outcome of the first `k` candidates, without and with -Oz backup."""
    rows = []
    for fid, rec in recs.items():
        value_input, value_oz = _base(base[fid], metric)
        extra = by_fid[fid].evaluations if method == "autotuner" else None
        cands = candidates_of(rec, metric)
        raw = metrics.outcome_at(cands, k, value_input, value_oz, False, extra)
        backed = metrics.outcome_at(cands, k, value_input, value_oz, True, extra)
        rows.append((by_fid[fid], value_oz, raw, backed))
    return rows


def _summary(rows: list[_Row]) -> dict:
    out = metrics.summarize([(oz, o) for _, oz, o, _ in rows]).to_dict()
    out["oz_backup"] = metrics.summarize([(oz, o) for _, oz, _, o in rows]).to_dict()
    return out


def _objsize_honesty(rows: list[_Row], objsizes: dict[tuple[str, str], int | None]) -> dict:
    honesty = [(oz, raw.instcount, objsizes.get((fn.fid, json.dumps([OZ]))),
                objsizes.get((fn.fid, json.dumps(raw.passes)))) for fn, oz, raw, _ in rows if raw.passes is not None]
    return metrics.objsize_honesty(honesty)


def _pair_summary(rows: list[tuple[int, metrics.Outcome, metrics.Outcome]]) -> dict:
    raw = metrics.summarize([(oz, r) for oz, r, _ in rows])
    backed = metrics.summarize([(oz, b) for oz, _, b in rows])
    return {"n_functions": raw.n_functions, "instcount_oz": raw.instcount_oz,
            "overall_improvement_pct": raw.overall_improvement_pct,
            "overall_improvement_pct_oz_backup": backed.overall_improvement_pct,
            "functions_improved": raw.functions_improved, "functions_regressed": raw.functions_regressed}


def pass_statistics(lists: Sequence[Sequence[str]], train_lists: set[tuple[str, ...]]) -> dict:
    """Thesis Fig. 4.7: share of lists each pass appears in, list lengths (excluding exactly -Oz), novelty."""
    n = len(lists)
    counts: dict[str, int] = {}
    for passes in lists:
        for p in set(passes):
            counts[p] = counts.get(p, 0) + 1
    not_oz = [p for p in lists if list(p) != [OZ]]
    lengths = [len(p) for p in not_oz]
    distinct = {tuple(p) for p in lists}
    return {
        "n_lists": n,
        "frequency": {p: c / n for p, c in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))} if n else {},
        "oz_only_pct": share(n - len(not_oz), n),
        "oz_in_longer_pct": share(sum(OZ in p for p in not_oz), n),
        "mean_length_excl_oz": sum(lengths) / len(lengths) if lengths else 0.0,
        "max_length": max(lengths, default=0),
        "length_histogram": {str(length): lengths.count(length) for length in sorted(set(lengths))},
        "distinct_lists": len(distinct),
        "lists_not_in_training": len(distinct - train_lists) if train_lists else None,
    }
