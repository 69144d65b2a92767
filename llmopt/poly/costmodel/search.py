"""Beam search with the cost model ("BSM", paper 002 §5, Table 2), registered as "beam-model".

The same search as `llmopt.poly.search.beam` (Tiramisu's beam search with execution, "BSE"): from
the original schedule, every node of the beam is expanded by every legal action on every branch
(`llmopt.poly.search.children`, the one expansion both searches share), and the `width` best
children form the next beam, for `depth` levels.  The difference is how a child is scored: by the
model's predicted speedup (`model.predict_many`, one batched forward pass per beam level), not by
compiling and running it.  Children are deduplicated by their replayed loop state (equal states
emit equal code).

The model can be wrong, so the answer is checked: the `verify` schedules with the best predicted
speedups over the whole search are measured by the `Measurer` (outputs checked against the
reference), and a schedule replaces the identity only when it is measured faster by `min_gain`, as
in `beam`.  So the answer is never slower than the untransformed program, and `evaluations` counts
only those few executions.

The model comes from `model_path` (default `DEFAULT_MODEL`, `llmopt/poly/data/costmodel.pt`,
where a trained model is shipped; `llmopt loops schedule --search beam-model --cost-model PATH`
picks another); a missing file is a one-line `CostModelError` that says how to train one.  Loaded
models are kept per path, so a bench pays the loading once.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from llmopt.poly.measure import Measurer
from llmopt.poly.program import Program
from llmopt.poly.schedule import Schedule, state
from llmopt.poly.search import (
    DEFAULT_DEPTH,
    DEFAULT_MIN_GAIN,
    DEFAULT_WIDTH,
    SearchResult,
    children,
    notation,
)

DEFAULT_MODEL = Path(__file__).resolve().parent.parent / "data" / "costmodel.pt"
DEFAULT_VERIFY = 4
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


def _state_key(prog: Program, schedule: Schedule) -> tuple:
    from llmopt.poly.costmodel.data import state_key

    return state_key(state(prog, schedule))


def _level(prog: Program, measurer: Measurer, model, frontier: list[Schedule], seen: set,
           deadline: float) -> list[tuple[float, Schedule]]:
    """(predicted speedup, child) of the new children of the frontier, best first."""
    from llmopt.poly.costmodel.model import predict_many

    kids: list[Schedule] = []
    for parent in frontier:
        if time.monotonic() > deadline:
            break
        for child in children(prog, measurer, parent):
            key = _state_key(prog, child)
            if key not in seen:
                seen.add(key)
                kids.append(child)
    if not kids:
        return []
    scores = predict_many(model, prog, kids)
    return sorted(zip(scores.tolist(), kids, strict=True), key=lambda pair: -pair[0])


def _verify(prog: Program, measurer: Measurer, ranked: list[tuple[float, Schedule]], res: SearchResult,
            count: int, min_gain: float, t0: float) -> None:
    """Measure the `count` best predicted schedules; keep one only when it really is faster."""
    for _, sched in ranked[:count]:
        got = measurer.measure(prog, sched)
        res.evaluations += 1
        if got.get("ok") and got["seconds"] < res.seconds * (1 - min_gain):
            res.schedule, res.seconds = sched, got["seconds"]
            res.trace.append((time.monotonic() - t0, res.speedup))


def beam_model(prog: Program, measurer: Measurer, budget_seconds: float = 60.0, width: int = DEFAULT_WIDTH,
               depth: int = DEFAULT_DEPTH, verify: int = DEFAULT_VERIFY, min_gain: float = DEFAULT_MIN_GAIN,
               model_path: str | os.PathLike | None = None, log: Callable[[str], None] | None = None
               ) -> SearchResult:
    """Beam search scored by the cost model, the top `verify` predictions measured (module docstring)."""
    model = cached_model(model_path)
    t0 = time.monotonic()
    deadline = t0 + budget_seconds
    baseline = measurer.baseline_o3(prog)["seconds"]
    res = SearchResult(Schedule(), baseline, baseline, trace=[(0.0, 1.0)])
    frontier, seen, ranked = [Schedule()], {_state_key(prog, Schedule())}, []
    for level in range(1, depth + 1):
        scored = _level(prog, measurer, model, frontier, seen, deadline)
        ranked = sorted(ranked + scored, key=lambda pair: -pair[0])
        if log:
            best = f"{ranked[0][0]:.2f}x ({notation(ranked[0][1])})" if ranked else "none"
            log(f"{prog.name}: depth {level}: {len(scored)} schedules predicted, best predicted {best}, "
                f"{time.monotonic() - t0:.1f} s")
        if not scored or time.monotonic() > deadline:
            break
        frontier = [s for _, s in scored[:width]]
    _verify(prog, measurer, ranked, res, verify, min_gain, t0)
    res.search_seconds = time.monotonic() - t0
    if log:
        log(f"{prog.name}: verified {min(verify, len(ranked))}: {res.speedup:.2f}x ({notation(res.schedule)})")
    return res

