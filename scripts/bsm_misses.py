"""Where beam search with the model (BSM) loses the schedule beam search with execution (BSE) found.

    python scripts/bsm_misses.py docs/results/costmodel/bse-900s.json [--model PATH] [--out FILE.json] [--candidates RULE]

For each benchmark of a BSE reference file (`eval.costmodel_eval --bse-reference`), BSE's answer is a path of
actions from the original schedule.  BSM (`model_search`, the same width and depth) is replayed on predictions
alone, and each prefix of that path is placed among the children BSM scored at its depth: its predicted
speedup, its rank among the legal ones, and whether it stayed in BSM's beam.  The first depth where the path
leaves the beam says whether the model lost it early (a first action it ranks low, e.g. gemm's distributing
interchange) or late; `verified` says whether BSE's schedule was among the candidates BSM measures; the
10th-90th percentile of a depth's predictions says whether the model tells its children apart at all.  Runs on
predictions and legality checks only: nothing is executed, so it is cheap beside a timing job.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from llmopt.poly.benchmarks import benchmark  # noqa: E402
from llmopt.poly.costmodel.data import state_key  # noqa: E402
from llmopt.poly.costmodel.search import (  # noqa: E402
    CANDIDATE_RULES,
    DEFAULT_CANDIDATES,
    cached_model,
    model_search,
    rank_by_model,
)
from llmopt.poly.legality import Legality  # noqa: E402
from llmopt.poly.schedule import Schedule, state  # noqa: E402
from llmopt.poly.search import notation  # noqa: E402


def _rank(legality: Legality, scored: list, predicted: float) -> int:
    """1 + how many legal children of a level the model predicts faster than `predicted`."""
    return 1 + sum(1 for p, s in scored if p > predicted and legality.is_legal(s))


def diagnose(name: str, bse: dict, settings: dict, model, candidates: str = DEFAULT_CANDIDATES) -> dict:
    """BSE's path on benchmark `name` placed in BSM's replayed beam (module docstring)."""
    prog = benchmark(name, settings["small"])
    legality, levels = Legality(prog), []
    found = model_search(prog, legality, model, settings["width"], settings["depth"], levels=levels,
                         candidates=candidates)
    target = Schedule.from_list(bse["transforms"])

    def keys(schedules) -> set:
        return {state_key(state(prog, s)) for s in schedules}

    path = [Schedule(target.transforms[:k]) for k in range(len(target.transforms) + 1)]  # identity .. target
    steps, frontier = [], [Schedule()]
    for k, prefix in enumerate(path[1:]):
        score = rank_by_model(prog, model, [(prefix, state(prog, prefix))])
        predicted = score[0][0] if score else float("nan")
        in_reach = state_key(state(prog, path[k])) in keys(frontier)
        scored, frontier = levels[k] if k < len(levels) else ([], [])
        # the last depth has no next beam: see `verified`
        kept = state_key(state(prog, prefix)) in keys(frontier) if k + 1 < settings["depth"] else None
        spread = [float(q) for q in np.percentile([p for p, _ in scored], [10, 90])] if scored else None
        steps.append({"depth": k + 1, "schedule": notation(prefix), "predicted": predicted,
                      "rank": _rank(legality, scored, predicted), "children": len(scored), "p10_p90": spread,
                      "parent_in_beam": in_reach, "kept_in_beam": kept})
    lost = next((s["depth"] for s in steps if not s["parent_in_beam"]), None)
    return {"benchmark": name, "bse_speedup": bse["speedup"], "bse_schedule": bse["schedule"],
            "verified": state_key(state(prog, target)) in keys(found), "path_leaves_beam_at": lost,
            "bsm_top": [notation(s) for s in found], "steps": steps}


def _span(spread: list[float] | None) -> str:
    return f"{spread[0]:.2f}-{spread[1]:.2f}x" if spread else "none"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("reference", help="a BSE reference file (eval.costmodel_eval --bse-reference)")
    p.add_argument("--model", default=None, help="cost model (default: the shipped one)")
    p.add_argument("--out", default=None, help="also write the diagnosis here as JSON")
    p.add_argument("--candidates", choices=list(CANDIDATE_RULES), default=DEFAULT_CANDIDATES,
                   help="which predictions BSM verifies (as eval.costmodel_eval --candidates)")
    a = p.parse_args(argv)
    ref = json.loads(Path(a.reference).read_text())
    model = cached_model(a.model)
    out = []
    for name, bse in ref["rows"].items():
        d = diagnose(name, bse, ref["settings"], model, a.candidates)
        out.append(d)
        print(f"{name}: BSE {d['bse_speedup']:.2f}x `{d['bse_schedule']}`; verified by BSM: {d['verified']}; "
              f"leaves BSM's beam at depth {d['path_leaves_beam_at'] or '-'}")
        for s in d["steps"]:
            print(f"    depth {s['depth']}: {s['schedule']:<50} predicted {s['predicted']:.2f}x, rank {s['rank']} "
                  f"of {s['children']} (their p10-p90 {_span(s['p10_p90'])})"
                  f"{'' if s['parent_in_beam'] else ', its parent not in the beam'}")
    if a.out:
        Path(a.out).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
