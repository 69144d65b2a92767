"""Beam search with the cost model ("BSM", paper 002 §5, Table 2), registered as "beam-model".

The same search as `llmopt.poly.search.beam` (Tiramisu's beam search with execution, "BSE"): from
the original schedule, every node of the beam is expanded by every action on every branch
(`llmopt.poly.search.extensions`, the one action enumeration both searches share), and the `width`
best legal children form the next beam, for `depth` levels.  The difference is how a child is
scored: by the model's predicted speedup (`predict_trees`, batched per beam level; a level's children
featurized and answered on this process and a forked helper, `ranker.Ranker`), not by compiling and running
it.  Children are deduplicated by their replayed loop state (equal states emit equal code and are equally
legal).

Legality (exact isl checks, milliseconds each) would cost more than the model if every child were
checked, so it is checked lazily (`legal_best`): all applicable children are scored, then checked
in best-predicted-first order only until the beam's `width` slots are filled, and at the end until
the `verify` best candidates of the whole search are found.  That picks exactly the schedules that
checking everything first would (the top predictions among the legal children), with a few checks
per level instead of hundreds.  A child the features cannot describe is dropped as unscorable.

The model can be wrong, so the answer is checked: the `verify` legal schedules with the best
predicted speedups over the whole search are measured by the `Measurer` (outputs checked against
the reference), and a schedule replaces the identity only when it is measured faster by
`min_gain`, as in `beam`.  So the answer is never slower than the untransformed program, and
`evaluations` counts only those few executions; `SearchResult.measure_seconds` is the time spent
running (baseline and verification), the rest of `search_seconds` is the model's search.

The model comes from `model_path` (default `DEFAULT_MODEL`, `llmopt/poly/data/costmodel.pt`,
where a trained model is shipped; `llmopt loops schedule --search beam-model --cost-model PATH`
picks another); a missing file is a one-line `CostModelError` that says how to train one.  Loaded
models are kept per path, so a bench pays the loading once.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable
from pathlib import Path

from llmopt.poly.costmodel.data import state_key
from llmopt.poly.costmodel.ranker import DEFAULT_HELPERS, Ranker, start_helpers
from llmopt.poly.legality import Legality
from llmopt.poly.measure import Measurer
from llmopt.poly.program import Program
from llmopt.poly.schedule import Schedule, State, state
from llmopt.poly.search import (
    DEFAULT_DEPTH,
    DEFAULT_MIN_GAIN,
    DEFAULT_WIDTH,
    SearchResult,
    extensions,
    notation,
    verified,  # noqa: F401  (re-exported: the frame of every search with the model)
)

DEFAULT_MODEL = Path(__file__).resolve().parent.parent / "data" / "costmodel.pt"
# The paper's BSM answers with its best prediction; timing it (and the original) keeps the answer from ever
# being slower.  Timing the 4 best instead costs 1.8x as much for ~2 points less lost to BSE on the 13 benchmarks,
# less than runs of one setting spread (answers timed side by side: 15.8% vs 18.1%, runs 13.7-22.3%;
# docs/results/costmodel/verify-29/); `verify=4` buys that back.
DEFAULT_VERIFY = 1
# Which predictions a search verifies (`verify_candidates`), each with what it picks: "per-depth" also times a
# one-step win that the deeper, higher predictions outrank.
CANDIDATE_RULES = {"best": "the best over the search", "per-depth": "each depth's best first"}
DEFAULT_CANDIDATES = "best"
# Which of the Pearl agent's walk "beam-model-agent" times beside the model's predictions (`AgentPolicy.walk`).
# Its final schedule alone loses about as little to BSE as its whole walk (15.1% over 7 runs, 14.4% over 3: within
# the runs' spread) at 1.14x less cost (96.0x vs 84.1x faster than BSE; docs/results/costmodel/verify-30/).
AGENT_WALKS = {"all": "its schedule at each branch it left", "final": "its final schedule only"}
DEFAULT_AGENT_WALK = "final"
_models: dict[str, object] = {}


def cached_model(path: str | os.PathLike | None = None):
    """The cost model at `path` (default DEFAULT_MODEL), loaded once per process."""
    import torch

    from llmopt.poly.costmodel.model import load_model

    key = str(Path(path or DEFAULT_MODEL).resolve())
    if key not in _models:
        _models[key] = load_model(key)[0]
        # One thread scores a beam level as fast (a ~1 M-parameter model), and the timed runs need the cores.
        torch.set_num_threads(1)
    return _models[key]


def rank_by_model(prog: Program, model, kids: list[tuple[Schedule, State]]) -> list[tuple[float, Schedule]]:
    """(predicted speedup, child), best first, on this process alone: a child the features cannot describe is
    dropped, like an illegal one (the model cannot rank it).  A search keeps one `ranker.Ranker` instead."""
    return Ranker(prog, model, helpers=0)(kids)


def scored_children(prog: Program, frontier: list[Schedule], seen: set, deadline: float,
                    rank: Callable[[list[tuple[Schedule, State]]], list[tuple[float, Schedule]]]
                    ) -> list[tuple[float, Schedule]]:
    """(predicted speedup, child) of the new applicable children of the frontier, best first.
    Legality is not checked here: `legal_best` checks only the few the search keeps.  `rank`: the search's
    `ranker.Ranker`, one for the whole search, so a child reuses its parent's unchanged vectors."""
    kids: list[tuple[Schedule, State]] = []
    for parent in frontier:
        if time.monotonic() > deadline:
            break
        for child in extensions(prog, parent):
            st = state(prog, child)
            key = state_key(st)  # legality is a function of the state: deduplicating before checking is exact
            if key not in seen:
                seen.add(key)
                kids.append((child, st))
    return rank(kids)


def legal_best(legality: Legality, ranked: list[tuple[float, Schedule]], count: int) -> list[Schedule]:
    """The `count` best-predicted legal schedules of `ranked` (best first), checking legality in
    that order and stopping once they are found: the same answer as checking every one first."""
    out: list[Schedule] = []
    for _, sched in ranked:
        if len(out) >= count:
            break
        if legality.is_legal(sched):
            out.append(sched)
    return out


def verify_candidates(legality: Legality, per_level: list[list[tuple[float, Schedule]]], verify: int,
                      rule: str = DEFAULT_CANDIDATES) -> list[Schedule]:
    """The schedules a search times, from each level's (prediction, child) best first: the `verify` best
    legal ones over all levels ("best"), or the best legal one of each level, then the best of the rest
    ("per-depth"; doitgen: the one interchange worth 11.6x is the model's first choice at depth 1, and the
    deeper schedules built on other moves are predicted higher and measure ~1x)."""
    if rule not in CANDIDATE_RULES:
        raise ValueError(f"unknown candidate rule {rule!r}: one of {', '.join(CANDIDATE_RULES)}")
    ranked = sorted((pair for scored in per_level for pair in scored), key=lambda pair: -pair[0])
    if rule == "best":
        return legal_best(legality, ranked, verify)
    predicted = {sched: p for p, sched in ranked}
    firsts = [s for scored in per_level for s in legal_best(legality, scored, 1)][:verify]
    rest = legal_best(legality, [p for p in ranked if p[1] not in firsts], verify - len(firsts))
    return sorted(firsts + rest, key=lambda s: -predicted[s])


def model_search(prog: Program, legality: Legality, model, width: int = DEFAULT_WIDTH, depth: int = DEFAULT_DEPTH,
                 verify: int = DEFAULT_VERIFY, deadline: float = math.inf,
                 log: Callable[[str], None] | None = None, levels: list | None = None,
                 candidates: str = DEFAULT_CANDIDATES, helpers: int = DEFAULT_HELPERS) -> list[Schedule]:
    """The beam search on predictions alone: the `verify` legal schedules it met that `candidates`
    picks (`verify_candidates`), best predicted first.  Every applicable child is scored; legality is
    checked only for the beam's `width` best per level and the final `verify` (`legal_best`), the same
    answer as checking them all.  `levels`, when given, receives each level's (scored children, next
    frontier): what a diagnosis of the search (`scripts/bsm_misses.py`) replays.  `helpers`: processes
    forked to rank the children beside this one (`ranker.Ranker`)."""
    t0 = time.monotonic()
    frontier, seen, per_level = [Schedule()], {state_key(state(prog, Schedule()))}, []
    rank = Ranker(prog, model, helpers)  # one per search: its kept vectors serve every level
    for level in range(1, depth + 1):
        scored = scored_children(prog, frontier, seen, deadline, rank)
        per_level.append(scored)
        if level < depth and scored and time.monotonic() <= deadline:
            frontier = legal_best(legality, scored, width)
        if levels is not None:
            levels.append((scored, frontier))
        if log:
            best = f"{scored[0][0]:.2f}x ({notation(scored[0][1])})" if scored else "none"
            log(f"{prog.name}: depth {level}: {len(scored)} schedules predicted, best {best} (legality unchecked), "
                f"{legality.computed} legality checks so far, {time.monotonic() - t0:.1f} s")
        if not scored or time.monotonic() > deadline:
            break
    return verify_candidates(legality, per_level, verify, candidates)


def beam_model(prog: Program, measurer: Measurer, budget_seconds: float = 60.0, width: int = DEFAULT_WIDTH,
               depth: int = DEFAULT_DEPTH, verify: int = DEFAULT_VERIFY, min_gain: float = DEFAULT_MIN_GAIN,
               model_path: str | os.PathLike | None = None, with_agent: bool = False,
               policy_path: str | os.PathLike | None = None, log: Callable[[str], None] | None = None,
               candidates: str = DEFAULT_CANDIDATES, agent_walk: str = DEFAULT_AGENT_WALK) -> SearchResult:
    """Beam search scored by the cost model, the top `verify` predictions measured (module docstring).
    `with_agent` ("beam-model-agent"): the Pearl agent's greedy walk (`AgentPolicy.walk`, its schedule at
    each branch it left, or with `agent_walk="final"` its final schedule only) is verified beside them: the
    model ranks parallel schedules badly (docs/results/costmodel/), the agent proposes them, and both pick
    without running anything."""
    if agent_walk not in AGENT_WALKS:
        raise ValueError(f"unknown agent walk {agent_walk!r}: one of {', '.join(AGENT_WALKS)}")
    model = cached_model(model_path)  # loaded before the clock starts, its helper processes forked too
    start_helpers(model)
    policy = None
    if with_agent:
        from llmopt.poly.agent.policy import cached_policy

        policy = cached_policy(policy_path)

    def pick(legality: Legality, deadline: float) -> list[Schedule]:
        found = model_search(prog, legality, model, width, depth, verify, deadline, log, candidates=candidates)
        if policy is not None:
            keys = {json.dumps(s.key()) for s in found}
            walk = policy.walk(prog, measurer)[::-1]  # the final schedule first
            found += [s for s in walk[:1 if agent_walk == "final" else None] if json.dumps(s.key()) not in keys]
        return found

    return verified(prog, measurer, pick, budget_seconds, min_gain, log)
