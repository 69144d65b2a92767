"""`llmopt loops bench`: the policy vs every search at equal time vs numpy, on test shapes.

For each shape: the policy picks a schedule (its time = inference + compiling and measuring that
one schedule, what a user waits for a verified kernel); "policy-topN" measures the policy's N most
confident distinct schedules (Priority Sampling) and keeps the fastest (`llmopt loops tune
--candidates N`; its time = inference + compiling and measuring all N).  Every search then gets
the time of the slowest of these policy methods, from the same untiled start, with an empty cache
(so no method profits from another's work).  All final schedules are re-measured by one backend
(the winner of N noisy measurements is not reported with its own, luckiest, timing).
"policy+greedy1" is the policy followed by a 1 s greedy refinement (`llmopt loops tune --candidates 1
--search greedy1`), reported separately.  Writes bench.md, bench.json and bench.png.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from llmopt.harness.cache import ResultCache
from llmopt.loops.agent import Policy
from llmopt.loops.backend import Backend, numpy_gflops
from llmopt.loops.dataset import subset
from llmopt.loops.nest import Nest, matmul
from llmopt.loops.search import SEARCHES
from llmopt.loops.tune import best_candidate


def _geomean(xs: list[float]) -> float:
    xs = [max(x, 1e-9) for x in xs]
    return float(np.exp(np.mean(np.log(xs))))


def run_bench(n_shapes: int = 20, search_seconds: float = 0.0, out_dir: str | Path = "docs/results/loops",
              policy_path: str | Path | None = None, searches: list[str] | None = None,
              refine: str | None = "greedy1", refine_seconds: float = 1.0, candidates: int = 16,
              log=print) -> int:
    """Benchmark on the first `n_shapes` test shapes; `search_seconds` 0 = the policy methods' time.
    `candidates` > 1: also report "policy-top<candidates>" (tune --candidates).
    `refine`: also report the policy followed by that search for `refine_seconds` (tune --search)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    names = searches or list(SEARCHES)
    top = f"policy-top{candidates}" if candidates > 1 else None
    policy = Policy(policy_path) if policy_path else Policy()
    backend = Backend()
    peak = backend.peak_gflops()
    rows = []
    for shape in subset("test", n_shapes):
        start = Nest.untiled(matmul(*shape))
        g_start = backend.gflops(start)
        # Policy time on an empty cache, so that it pays for its compile like the searches do.
        with tempfile.TemporaryDirectory() as tmp:
            fresh = Backend(ResultCache(Path(tmp) / "c.sqlite"), Path(tmp) / "so", worker=backend.worker)
            t0 = time.perf_counter()
            nest, _ = policy.actions(start)
            t_infer = time.perf_counter() - t0
            fresh.gflops(nest)
            t_policy = time.perf_counter() - t0
            fresh.close()
        row = {"shape": list(shape), "start": g_start, "numpy": numpy_gflops(backend, start),
               "policy": backend.gflops(nest), "policy_schedule": nest.describe(),
               "policy_infer_s": t_infer, "policy_s": t_policy}
        if top:
            with tempfile.TemporaryDirectory() as tmp:
                fresh = Backend(ResultCache(Path(tmp) / "c.sqlite"), Path(tmp) / "so", worker=backend.worker)
                t0 = time.perf_counter()
                best, _, rank = best_candidate(start, policy, fresh, candidates)
                row[top + "_s"] = time.perf_counter() - t0
                fresh.close()
            row[top], row[top + "_schedule"], row[top + "_rank"] = backend.gflops(best), best.describe(), rank
        if refine:
            with tempfile.TemporaryDirectory() as tmp:
                fresh = Backend(ResultCache(Path(tmp) / "c.sqlite"), Path(tmp) / "so", worker=backend.worker)
                t0 = time.perf_counter()
                res = SEARCHES[refine](nest, fresh, refine_seconds)
                row["policy+" + refine] = backend.gflops(res.nest)
                row["policy+" + refine + "_s"] = t_policy + time.perf_counter() - t0
                fresh.close()
        budget = search_seconds or max(t_policy, row.get(top + "_s", 0.0) if top else 0.0)
        for name in names:
            with tempfile.TemporaryDirectory() as tmp:
                fresh = Backend(ResultCache(Path(tmp) / "c.sqlite"), Path(tmp) / "so", worker=backend.worker)
                res = SEARCHES[name](start, fresh, budget)
                fresh.close()
            row[name] = backend.gflops(res.nest)
            row[name + "_evals"] = res.evaluations
            row[name + "_s"] = res.seconds
        rows.append(row)
        log(f"{shape}: start {g_start:.2f}  policy {row['policy']:.2f} ({t_policy:.2f} s)  "
            + (f"{top} {row[top]:.2f} ({row[top + '_s']:.2f} s)  " if top else "") + f"numpy {row['numpy']:.2f}  "
            + "  ".join(f"{n} {row[n]:.2f}" for n in names))
    methods = ([top] if top else []) + names + (["policy+" + refine] if refine else [])
    summary = _summarize(rows, methods, peak, search_seconds)
    summary["top"] = top
    (out_dir / "bench.json").write_text(json.dumps({"summary": summary, "rows": rows}, indent=1))
    (out_dir / "bench.md").write_text(_markdown(rows, methods, summary, top))
    _plot(rows, methods, out_dir / "bench.png")
    log(json.dumps(summary, indent=1))
    backend.close()
    return 0


def _summarize(rows: list[dict], names: list[str], peak: float, search_seconds: float) -> dict:
    out = {"n_shapes": len(rows), "peak_gflops": peak,
           "search_seconds": search_seconds or "policy time (the slowest policy method, per shape)",
           "policy_infer_s_median": statistics.median(r["policy_infer_s"] for r in rows),
           "policy_s_median": statistics.median(r["policy_s"] for r in rows),
           "numpy_gflops_median": statistics.median(r["numpy"] for r in rows),
           "start_gflops_median": statistics.median(r["start"] for r in rows)}
    for name in ["policy", *names]:
        out[name] = {
            "gflops_median": statistics.median(r[name] for r in rows),
            "speedup_over_start_geomean": _geomean([r[name] / r["start"] for r in rows]),
            "speedup_over_start_mean": float(np.mean([r[name] / r["start"] for r in rows])),
            "vs_numpy_geomean": _geomean([r[name] / r["numpy"] for r in rows]),
            "fraction_of_peak_median": statistics.median(r[name] / peak for r in rows),
            "seconds_median": statistics.median(r.get(name + "_s", r["policy_s"]) for r in rows),
        }
    return out


def _markdown(rows: list[dict], names: list[str], s: dict, top: str | None = None) -> str:
    lines = [f"# Loop schedules: policy vs searches vs numpy ({s['n_shapes']} test shapes)", "",
             f"Peak (register-only FMA, 1 core): {s['peak_gflops']:.1f} GFLOPS. Search time per shape: "
             f"{s['search_seconds'] if isinstance(s['search_seconds'], str) else str(s['search_seconds']) + ' s'}"
             f" (policy median {s['policy_s_median']:.3f} s incl. one compile+measure, "
             f"inference alone {s['policy_infer_s_median'] * 1000:.1f} ms"
             + (f"; {top} median {s[top]['seconds_median']:.3f} s" if top else "") + ").", "",
             "| method | median GFLOPS | speedup over start (geomean) | (mean) | vs numpy 1-thread (geomean) "
             "| fraction of peak (median) | time (median s) |", "|---|---|---|---|---|---|---|"]
    for name in ["policy", *names]:
        m = s[name]
        lines.append(f"| {name} | {m['gflops_median']:.2f} | {m['speedup_over_start_geomean']:.2f}x "
                     f"| {m['speedup_over_start_mean']:.2f}x | {m['vs_numpy_geomean']:.2f}x "
                     f"| {m['fraction_of_peak_median']:.2f} | {m['seconds_median']:.2f} |")
    lines += [f"| start (untiled) | {s['start_gflops_median']:.2f} | 1.00x | 1.00x | | | |",
              f"| numpy 1-thread | {s['numpy_gflops_median']:.2f} | | | 1.00x | | |", "",
              "Per shape (GFLOPS):", "",
              "| M,N,K | start | policy | " + " | ".join(names) + " | numpy | policy schedule |"
              + (f" {top} schedule (rank) |" if top else ""),
              "|---|" + "---|" * (len(names) + 4 + bool(top))]
    for r in rows:
        lines.append(f"| {','.join(map(str, r['shape']))} | {r['start']:.2f} | {r['policy']:.2f} | "
                     + " | ".join(f"{r[n]:.2f}" for n in names)
                     + f" | {r['numpy']:.2f} | `{r['policy_schedule'].replace(' | ', ' ; ')}` |"
                     + (f" `{r[top + '_schedule'].replace(' | ', ' ; ')}` ({r[top + '_rank'] + 1}) |" if top else ""))
    return "\n".join(lines) + "\n"


def _plot(rows: list[dict], names: list[str], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    methods = ["start", "policy", *names, "numpy"]
    fig, ax = plt.subplots(figsize=(10, 4.5))
    data = [[r[m] for r in rows] for m in methods]
    ax.boxplot(data, tick_labels=methods, showmeans=True)
    ax.set_ylabel("GFLOPS (1 core)")
    ax.set_title(f"Matmul schedules on {len(rows)} test shapes: policy vs searches at equal time")
    ax.tick_params(axis="x", rotation=30)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
