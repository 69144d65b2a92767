"""Where PearlEnv's rewards come from: measured execution, or the learned cost model (issue 16 item 4).

A `Rewarder` answers `speedup(prog, schedule)`: the speedup of `schedule` over `prog` as written,
or None when the schedule fails; the env's step reward is log4 of the ratio of two answers.

- `MeasuredReward` (the default): both times measured by a `Measurer` (compile, check, time;
  memoized in the result cache), about half a second a step on a 2-core machine.
- `CostModelReward`: the cost model's prediction (`llmopt.poly.costmodel.model.predict`), a few
  milliseconds a step and never a failure.  The untransformed program is the model's reference,
  so its speedup is 1 by definition and an episode's return is log4 of the predicted final speedup.
  It is a proxy: the policy learns what the model believes, so a run with it is judged by measuring
  the trained policy's schedules (`llmopt.poly.agent.policy`) as a measured run's are.

`rewarder("measured" | "costmodel", measurer, cost_model)` builds one by name, as the command line does.
"""

from __future__ import annotations

import os
from typing import Protocol

from llmopt.errors import UsageError
from llmopt.poly.measure import Measurer
from llmopt.poly.program import Program
from llmopt.poly.schedule import Schedule

REWARDS = ("measured", "costmodel")


class Rewarder(Protocol):
    name: str

    def speedup(self, prog: Program, schedule: Schedule) -> float | None:
        """Speedup of `schedule` over the untransformed `prog`; None when the schedule fails."""


class MeasuredReward:
    """Speedups from measured times; the untransformed time is kept per program (asked once)."""

    name = "measured"

    def __init__(self, measurer: Measurer):
        self.measurer = measurer
        self._base: dict[str, float | None] = {}

    def _seconds(self, prog: Program, schedule: Schedule) -> float | None:
        got = self.measurer.measure(prog, schedule)
        return max(got["seconds"], 1e-9) if got.get("ok") else None

    def speedup(self, prog: Program, schedule: Schedule) -> float | None:
        if prog.hash() not in self._base:
            self._base[prog.hash()] = self._seconds(prog, Schedule())
        base = self._base[prog.hash()]
        seconds = base if base is None or not schedule.transforms else self._seconds(prog, schedule)
        return base / seconds if seconds is not None else None


class CostModelReward:
    """Speedups predicted by the cost model (`model`, or the one at `path`, loaded once per process)."""

    name = "costmodel"

    def __init__(self, model=None, path: str | os.PathLike | None = None):
        from llmopt.poly.costmodel.search import cached_model

        self.model = model if model is not None else cached_model(path)

    def speedup(self, prog: Program, schedule: Schedule) -> float | None:
        from llmopt.poly.costmodel.model import predict

        return predict(self.model, prog, schedule) if schedule.transforms else 1.0


def rewarder(kind: str, measurer: Measurer, cost_model: str | os.PathLike | None = None) -> Rewarder:
    """The rewarder named `kind` (one of REWARDS); `cost_model`: the model file (default: the shipped one)."""
    if kind == "measured":
        return MeasuredReward(measurer)
    if kind == "costmodel":
        return CostModelReward(path=cost_model)
    raise UsageError(f"unknown reward {kind!r}: use one of {', '.join(REWARDS)}")
