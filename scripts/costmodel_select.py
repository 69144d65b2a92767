"""Which cost model searches best: beam search with the model on held-out programs, its answers timed.

    python scripts/costmodel_select.py MODEL [MODEL...] --data FOLDER [FOLDER...] [--split validation]
        [--min-baseline-ms 5] [--min-best 1.5] [--limit N] [--candidates best per-depth] [--out FILE.json]

Why: a model's MAPE and its pick ratio among a program's measured schedules did not tell which of several
models finds the benchmarks' big wins (docs/results/costmodel/sweep-27/: the lowest MAPE searched worst).
This runs what the benchmark evaluation runs, on programs none of the models trained on: beam search on
predictions (`model_search`, width 4, depth 4), its `verify` best candidates timed in alternation with the
original (`Measurer.paired`, memoized in the user's timing cache, so a schedule two models propose is timed
once), the answer the fastest of them or the original (as `verified` keeps it).  A program's score is that
answer's speedup over the best speedup measured for it in the data (a greedy search's label or the best of
its random schedules; above 1 when the model finds better); a model's score is the geometric mean over the
programs, beside Table 2's form, the mean of 1 - ratio (and that with ratios capped at 1: one find 40x past
the data's best would otherwise outweigh every loss).  `--out` is written after every program, and a rerun
into it resumes: a model's answer already there is kept.

`--agents POLICY...` chooses the hybrid's agent the same way ("beam-model-agent" with the final schedule):
each agent's greedy schedule is timed beside the first model's answer, and the faster one is the hybrid's
answer (key `MODEL+POLICY`), so agents are compared on programs none of them was judged on.

Programs: those of `--split` (the models' own split: they must share it, `train --seed`) in the folders,
running at least `--min-baseline-ms`, with a measured best of at least `--min-best` (where nothing gains,
every verified search answers ~1x and the program tells the models nothing), first `--limit` by hash.
Times schedules: run it alone on the machine.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from llmopt.harness.cache import DEFAULT_CACHE_DIR, open_cache, scratch_cache  # noqa: E402
from llmopt.outputs import atomic_target  # noqa: E402
from llmopt.poly.costmodel.data import load_rows  # noqa: E402
from llmopt.poly.costmodel.search import (  # noqa: E402
    CANDIDATE_RULES,
    DEFAULT_CANDIDATES,
    DEFAULT_VERIFY,
    cached_model,
    model_search,
)
from llmopt.poly.costmodel.train import split_of  # noqa: E402
from llmopt.poly.legality import Legality  # noqa: E402
from llmopt.poly.measure import Measurer  # noqa: E402
from llmopt.poly.program import program_from_dict  # noqa: E402
from llmopt.poly.search import DEFAULT_DEPTH, DEFAULT_MIN_GAIN, DEFAULT_WIDTH, notation  # noqa: E402

SLOWER = 2.0  # a candidate 2x slower than the original in its first round is not timed again: it cannot win


def held_out_programs(folders: list[str], split: str, metas: list[dict], min_ms: float, min_best: float,
                      limit: int | None) -> list[dict]:
    """{"hash", "program", "best", "best_schedule", "folder"} of the programs to search (module docstring)."""
    seeds = {(m.get("seed", 0), tuple(m.get("fractions", (0.6, 0.2)))) for m in metas}
    if len(seeds) != 1:
        raise SystemExit(f"the models were split differently ({sorted(seeds)}): compare models of one split")
    seed, fractions = seeds.pop()
    trained = set().union(*(m.get("programs", {}).get("train", []) for m in metas))
    best: dict[str, dict] = {}
    for folder in folders:
        for r in load_rows(folder):
            if split_of(r["hash"], fractions, seed) != split or r["hash"] in trained:
                continue
            if float(r["baseline_seconds"]) * 1e3 < min_ms:
                continue
            b = best.get(r["hash"])
            if b is None or float(r["speedup"]) > b["best"]:
                best[r["hash"]] = {"hash": r["hash"], "program": r["program"], "best": float(r["speedup"]),
                                   "best_schedule": r["schedule"], "folder": folder}
    picked = [b for h, b in sorted(best.items()) if b["best"] >= min_best]
    return picked[:limit] if limit else picked


def search_one(prog, model, measurer: Measurer, verify: int, candidates: str = DEFAULT_CANDIDATES) -> dict:
    """BSM's answer on `prog`: its candidates on predictions, each timed; the fastest, or the original."""
    t0 = time.monotonic()
    found = model_search(prog, Legality(prog), model, DEFAULT_WIDTH, DEFAULT_DEPTH, verify, candidates=candidates)
    model_seconds = time.monotonic() - t0
    answer, speedup = "identity", 1.0
    for sched in found:
        got = measurer.paired(prog, sched, slower=SLOWER)
        if got.get("ok") and got["speedup"] > speedup * (1 + DEFAULT_MIN_GAIN):
            answer, speedup = notation(sched), float(got["speedup"])
    return {"schedule": answer, "speedup": speedup, "model_seconds": model_seconds}


def with_agent(prog, bsm: dict, policy_path: str, measurer: Measurer) -> dict:
    """The hybrid's answer: the agent's final greedy schedule timed beside BSM's answer `bsm`; the faster."""
    from llmopt.poly.agent.policy import cached_policy

    sched = cached_policy(policy_path).schedule(prog, measurer)
    answer = {"schedule": bsm["schedule"], "speedup": bsm["speedup"], "agent": notation(sched)}
    if sched.transforms:
        got = measurer.paired(prog, sched, slower=SLOWER)
        if got.get("ok") and got["speedup"] > bsm["speedup"] * (1 + DEFAULT_MIN_GAIN):
            answer |= {"schedule": notation(sched), "speedup": float(got["speedup"])}
    return answer


def label(entry: str) -> str:
    """A short name for a model file: its folder for train's OUT/costmodel.pt, else its stem (and the rule)."""
    path, _, rule = entry.partition("@")
    p = Path(path)
    return (p.parent.name if p.name == "costmodel.pt" else p.stem) + (f"@{rule}" if rule else "")


def entries(models: list[str], rules: list[str]) -> list[tuple[str, str, str]]:
    """(key, model file, rule) of every model under every candidate rule; the default rule's key is the file."""
    return [(m if r == DEFAULT_CANDIDATES else f"{m}@{r}", m, r) for m in models for r in rules]


def summarize(rows: list[dict], models: list[str]) -> dict:
    """Per model (entry key): the geometric mean of answer / data's best, Table 2's mean of 1 - it (also with
    gains capped), and how many answers came within 10% of the best."""
    out = {}
    for m in models:
        ratios = np.array([r["models"][m]["speedup"] / r["best"] for r in rows])
        out[m] = {"geomean_ratio": float(np.exp(np.mean(np.log(ratios)))) if len(ratios) else math.nan,
                  "degradation_pct": float(100 * np.mean(1 - ratios)) if len(ratios) else math.nan,
                  # a find 40x past the data's best would otherwise outweigh every loss
                  "degradation_capped_pct": float(100 * np.mean(1 - np.minimum(ratios, 1))) if len(ratios) else math.nan,
                  "within_10pct": int(np.sum(ratios >= 0.9)), "programs": len(ratios)}
    return out


def finished_rows(out: str | None) -> dict[str, dict]:
    """{program hash: {model: answer}} of an earlier run into `out` (nothing when there is none)."""
    if not out or not Path(out).is_file():
        return {}
    return {r["hash"]: r["models"] for r in json.loads(Path(out).read_text()).get("rows", [])}


def write(out: str, settings: dict, rows: list[dict]) -> None:
    models = list(rows[0]["models"]) if rows else []
    with atomic_target(out) as tmp:
        tmp.write_text(json.dumps({"settings": settings, "summary": summarize(rows, models), "rows": rows},
                                  indent=1) + "\n")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("models", nargs="+", help="cost model files (train's OUT/costmodel.pt, or an ensemble)")
    p.add_argument("--data", nargs="+", required=True, help="collected folders whose held-out programs to search")
    p.add_argument("--split", default="validation", choices=("validation", "test"))
    p.add_argument("--min-baseline-ms", type=float, default=5.0)
    p.add_argument("--min-best", type=float, default=1.5, help="only programs where the data measured this gain")
    p.add_argument("--limit", type=int, default=None, help="at most this many programs (first by hash)")
    p.add_argument("--verify", type=int, default=DEFAULT_VERIFY, help="candidates timed per search")
    p.add_argument("--candidates", nargs="+", default=[DEFAULT_CANDIDATES], choices=list(CANDIDATE_RULES),
                   help="which predictions a search times (search.verify_candidates); several compare them")
    p.add_argument("--repeats", type=int, default=10, help="timed runs per paired measurement")
    p.add_argument("--agents", nargs="+", default=[], metavar="POLICY",
                   help="also the hybrid of the first model with each of these agent policies (module docstring)")
    p.add_argument("--out", default=None, help="also write the rows and the summary here as JSON")
    a = p.parse_args(argv)
    from llmopt.poly.costmodel.model import load_model

    metas = [load_model(m)[1] for m in a.models]
    progs = held_out_programs(a.data, a.split, metas, a.min_baseline_ms, a.min_best, a.limit)
    print(f"{len(progs)} {a.split} programs", file=sys.stderr)
    measurer = Measurer(open_cache(DEFAULT_CACHE_DIR / "poly.sqlite") or scratch_cache(), a.repeats, threads=2)
    done, rows = finished_rows(a.out), []
    searches = entries(a.models, a.candidates)
    first = searches[0][0]  # the hybrids' model
    keys = [key for key, _, _ in searches] + [f"{first}+{pol}" for pol in a.agents]
    try:
        for k, entry in enumerate(progs):
            prog, before = program_from_dict(entry["program"]), done.get(entry["hash"], {})
            got = {key: before.get(key) or search_one(prog, cached_model(m), measurer, a.verify, rule)
                   for key, m, rule in searches}
            got |= {f"{first}+{pol}": before.get(f"{first}+{pol}") or with_agent(prog, got[first], pol, measurer)
                    for pol in a.agents}
            rows.append({name: v for name, v in entry.items() if name != "program"} | {"models": got})
            print(f"[{k + 1}/{len(progs)}] {entry['hash'][:10]} best {entry['best']:.2f}x: "
                  + ", ".join(f"{label(m)} {g['speedup']:.2f}x" for m, g in got.items()), file=sys.stderr)
            if a.out:  # after every program: a killed run keeps what it timed, and a rerun resumes
                write(a.out, vars(a), rows)
    finally:
        measurer.close()
    print(json.dumps(summarize(rows, keys), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
