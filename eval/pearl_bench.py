"""`llmopt loops pearl-bench`: beam search with execution vs Polly vs plain -O3 (vs the agent) on the
affine benchmarks (issue 15, item 5).  Writes bench.md, bench.json and bench.png to the output folder.

Per benchmark, in one run:

- **beam**: `llmopt.poly.search.beam` (Tiramisu's beam search with execution) within
  `budget_seconds`, on a fresh, empty cache, so its search time is what the search really costs;
- **Polly**: the untransformed C through Polly (`Measurer.baseline_polly`, flags in
  `llmopt.poly.measure`);
- **-O3**: the untransformed C at -O3, which is what every speedup divides: its column is 1.0 by
  definition, shown so the table reads as the issue asks;
- **agent**: the trained Pearl agent (search "agent", `llmopt.poly.agent.policy.agent_search`),
  filled in only when its policy file exists (`--policy`, default the shipped
  `llmopt/poly/data/agent.pt`); it runs on its own fresh cache, its schedule (the greedy walk's,
  or the walk's schedule at an earlier branch when that is faster: `agent_search`) measured like the
  others, and its time is the agent's own (`search_seconds - measure_seconds`: walking the policy
  with its legality checks, not the timing runs).  Without a policy the column reads "n/a": no
  number is ever made up.

Speedup = untransformed -O3 time / optimized time, each the minimum of `repeats` runs, every
output checked against the reference by the `Measurer` first; a method's speedup and its baseline
come from the same measurer.  Every timed run is guarded against other work (`quiet`, `--quiet-cores`,
`llmopt.poly.cpu_watch`): on a shared 2-core machine one busy neighbour halves a 2-thread run.  Rows are saved after every benchmark: a re-run with the same
settings (and machine) skips the benchmarks already done, so an interrupted bench resumes.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path

from eval.store import rows_of_earlier_run
from llmopt.harness.cache import scratch_cache
from llmopt.outputs import write_atomic
from llmopt.poly.benchmarks import NAMES, benchmark
from llmopt.poly.cli import times
from llmopt.poly.measure import Measurer, machine_id
from llmopt.poly.search import DEFAULT_DEPTH, DEFAULT_WIDTH, SEARCHES, SearchResult

METHODS = ("beam", "polly", "o3", "agent")
CATCH_UP = 0.10  # "beam search needs >= 100x longer for a result within 10% of the agent's" (issue 15)


@dataclass
class BenchConfig:
    names: list[str] | None = None  # default: every benchmark
    budget_seconds: float = 300.0
    width: int | None = None  # None: the search's default
    depth: int | None = None
    repeats: int = 30
    threads: int = 2
    small: bool = False
    policy: str | None = None  # the agent's policy file (default: the shipped one, when it exists)
    quiet: float | None = 0.15  # the busy-machine guard (`Measurer(quiet=...)`); None: off

    def policy_file(self) -> Path | None:
        from llmopt.poly.agent.policy import DEFAULT_POLICY

        path = Path(self.policy) if self.policy else DEFAULT_POLICY
        return path if path.exists() else None

    def settings(self) -> dict:
        """What the numbers depend on (a resumed run must match it), names aside."""
        d = dataclasses.asdict(self)
        d.pop("names")
        policy = self.policy_file()
        d["policy"] = hashlib.sha256(policy.read_bytes()).hexdigest()[:16] if policy else None
        d["width"], d["depth"] = self.width or DEFAULT_WIDTH, self.depth or DEFAULT_DEPTH
        return {**d, "machine": machine_id()}


def _search(name: str, prog, cfg: BenchConfig, log) -> tuple[SearchResult, dict]:
    """Run search `name` on a fresh measurer; (its result, Polly on the same measurer or {})."""
    measurer = Measurer(scratch_cache(), repeats=cfg.repeats, threads=cfg.threads, quiet=cfg.quiet)
    options = {"budget_seconds": cfg.budget_seconds}
    if name == "beam":
        options.update(width=cfg.width or DEFAULT_WIDTH, depth=cfg.depth or DEFAULT_DEPTH)
    if name == "agent":
        options.update(policy_path=cfg.policy_file())
    try:
        res = SEARCHES[name](prog, measurer, log=log, **options)
        polly = measurer.baseline_polly(prog) if name == "beam" else {}
    finally:
        measurer.close()
    return res, polly


def bench_one(name: str, cfg: BenchConfig, log=print) -> dict:
    """One table row: every method on benchmark `name` (module docstring)."""
    prog = benchmark(name, cfg.small)
    beam, polly = _search("beam", prog, cfg, log)
    row = {"benchmark": name, "params": prog.params, "o3_seconds": beam.baseline_seconds,
           "beam": beam.speedup, "beam_schedule": beam.to_dict()["schedule"], "beam_transforms": beam.schedule.to_list(),
           "beam_search_seconds": beam.search_seconds, "beam_evaluations": beam.evaluations,
           "beam_trace": beam.trace, "o3": 1.0,
           "polly": beam.baseline_seconds / polly["seconds"] if polly.get("ok") else None,
           "polly_error": polly.get("error"), "agent": None, "agent_search_seconds": None}
    if cfg.policy_file() is not None:
        agent, _ = _search("agent", prog, cfg, log)
        row.update(agent=agent.speedup, agent_schedule=agent.to_dict()["schedule"],
                   agent_search_seconds=agent.search_seconds - agent.measure_seconds)
    log(f"{name}: beam {row['beam']:.2f}x in {row['beam_search_seconds']:.0f} s, polly "
        f"{_fmt(row['polly'])}, agent {_fmt(row['agent'])}")
    return row


def _geomean(xs: list[float]) -> float | None:
    xs = [x for x in xs if x is not None]
    return math.exp(sum(math.log(max(x, 1e-9)) for x in xs) / len(xs)) if xs else None


def summarize(rows: list[dict]) -> dict:
    """Geometric mean speedup and the number of benchmarks below 1x, per method."""
    out = {}
    for m in METHODS:
        values = [r[m] for r in rows if r.get(m) is not None]
        out[m] = {"geomean": _geomean(values), "below_1x": sum(v < 1 for v in values), "benchmarks": len(values)}
    out["beam_search_seconds_total"] = sum(r["beam_search_seconds"] for r in rows)
    if out["agent"]["benchmarks"]:
        out["beam_vs_agent"] = catch_up_rows(rows)
    return out


def beam_catch_up(row: dict, within: float = CATCH_UP) -> float | None:
    """Seconds until beam search's best schedule so far came within `within` of the agent's speedup
    (from its trace of improvements); None when it never did inside its budget, or without an agent."""
    if row.get("agent") is None:
        return None
    return next((t for t, best in row["beam_trace"] if best >= (1 - within) * row["agent"]), None)


def catch_up_rows(rows: list[dict]) -> list[dict]:
    """The issue's time criterion per benchmark the agent speeds up: beam search's time to come within
    10% of the agent over the agent's own time (None: beam search never did, so the ratio is at least
    its whole search time over the agent's)."""
    out = []
    for r in rows:
        if r.get("agent") is None or r["agent"] <= 1.0:
            continue  # the agent kept the program: beam search "matches" it before measuring anything
        t = beam_catch_up(r)
        agent_s = max(r["agent_search_seconds"], 1e-6)
        out.append({"benchmark": r["benchmark"], "agent": r["agent"], "agent_ms": agent_s * 1e3, "beam_seconds": t,
                    "ratio": (t if t is not None else r["beam_search_seconds"]) / agent_s, "caught_up": t is not None})
    return out


def _fmt(x: float | None, unit: str = "x") -> str:
    if x is None:
        return "n/a"
    return times(x) if unit == "x" else f"{x:.1f}{unit}"


def markdown(rows: list[dict], summary: dict, cfg: dict) -> str:
    head = ("| benchmark | sizes | -O3 ms | beam | beam schedule | beam search s | evaluated | Polly | -O3 "
            "| agent | agent search s |")
    lines = [f"# Pearl benchmarks: beam search with execution vs Polly vs -O3 ({'test' if cfg['small'] else 'measured'}"
             " sizes)", "",
             f"Speedup over the untransformed program at -O3 (min of {cfg['repeats']} runs, outputs checked), "
             f"{cfg['threads']} OpenMP threads; beam width {cfg['width']}, depth {cfg['depth']}, budget "
             f"{cfg['budget_seconds']:g} s per benchmark. Agent: n/a when no policy file "
             "is given or shipped (llmopt/poly/data/agent.pt).", "", head, "|" + "---|" * 11]
    for r in rows:
        sizes = " ".join(f"{k}={v}" for k, v in r["params"].items())
        lines.append(f"| {r['benchmark']} | {sizes} | {r['o3_seconds'] * 1e3:.4g} | {_fmt(r['beam'])} | "
                     f"`{r['beam_schedule']}` | {r['beam_search_seconds']:.1f} | {r['beam_evaluations']} | "
                     f"{_fmt(r['polly'])} | 1.00x | {_fmt(r['agent'])} | {_fmt(r['agent_search_seconds'], '')} |")
    g = {m: summary[m]["geomean"] for m in METHODS}
    lines.append(f"| **geomean** | | | **{_fmt(g['beam'])}** | | {summary['beam_search_seconds_total']:.0f} "
                 f"(total) | | **{_fmt(g['polly'])}** | 1.00x | **{_fmt(g['agent'])}** | |")
    below = ", ".join(f"{m} {summary[m]['below_1x']}" for m in METHODS if summary[m]["benchmarks"])
    return "\n".join(lines + ["", f"Benchmarks below 1x: {below}.", ""] + _catch_up_table(rows, summary))


def _catch_up_table(rows: list[dict], summary: dict) -> list[str]:
    """Beam search's time to come within 10% of the agent (the summary's `beam_vs_agent`), against the
    agent's own time."""
    table = summary.get("beam_vs_agent") or []
    if not table:
        return []
    lines = ["Beam search with execution against the agent: time until beam search's best schedule so far is "
             f"within {CATCH_UP:.0%} of the agent's speedup, over the agent's own time (benchmarks the agent "
             "speeds up).", "", f"| benchmark | agent | agent ms | beam within {CATCH_UP:.0%} after | ratio |",
             "|---|---|---|---|---|"]
    for c in table:
        when = f"{c['beam_seconds']:.1f} s" if c["caught_up"] else "never in its budget"
        ratio = f"{c['ratio']:,.0f}x" if c["caught_up"] else f"> {c['ratio']:,.0f}x"
        lines.append(f"| {c['benchmark']} | {_fmt(c['agent'])} | {c['agent_ms']:.0f} | {when} | {ratio} |")
    slow = sum(c["ratio"] >= 100 for c in table)
    worst = max(r["agent_search_seconds"] for r in rows if r.get("agent_search_seconds") is not None)
    return lines + ["", f"Beam search needs >= 100x the agent's time on {slow} of {len(table)}; the agent's time "
                    f"is at most {worst * 1e3:.0f} ms.", ""]


def plot(rows: list[dict], path: Path) -> None:
    """Grouped bars per benchmark (and the geometric mean), speedups on a log scale."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    methods = [m for m in METHODS if any(r.get(m) is not None for r in rows)]
    labels = [r["benchmark"] for r in rows] + ["geomean"]
    fig, ax = plt.subplots(figsize=(max(6.0, 0.9 * len(labels)), 4.0))
    width = 0.8 / len(methods)
    for k, m in enumerate(methods):
        values = [r.get(m) or 0.0 for r in rows] + [_geomean([r.get(m) for r in rows]) or 0.0]
        ax.bar([i + k * width for i in range(len(labels))], [max(v, 1e-3) for v in values], width,
               label={"o3": "clang -O3", "polly": "Polly"}.get(m, m))
    ax.set_yscale("log")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks([i + width * (len(methods) - 1) / 2 for i in range(len(labels))], labels, rotation=45, ha="right")
    ax.set_ylabel("speedup over untransformed -O3 (log)")
    if "agent" not in methods:
        ax.set_title("agent: n/a (no trained policy)", fontsize=9)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def run_bench(cfg: BenchConfig, out_dir: str | Path, log=print) -> dict:
    """Bench every benchmark of `cfg` (resuming finished ones), write bench.{json,md,png}; the summary."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    settings = cfg.settings()
    done = rows_of_earlier_run(out_dir / "bench.json", settings)
    rows: list[dict] = []
    for name in cfg.names or NAMES:
        rows.append(done[name] if name in done else bench_one(name, cfg, log))
        summary = summarize(rows)
        # The resume state after every benchmark: a killed bench keeps its finished rows.
        write_atomic(out_dir / "bench.json", json.dumps({"config": settings, "summary": summary, "rows": rows},
                                                        indent=1))
    write_atomic(out_dir / "bench.md", markdown(rows, summary, settings))
    plot(rows, out_dir / "bench.png")
    log(f"wrote {out_dir / 'bench.md'}, bench.json, bench.png")
    return summary
