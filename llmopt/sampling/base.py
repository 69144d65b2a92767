"""The strategy seam (docs/interfaces.md "Sampling strategies"): `Strategy.sample(ir, n) -> list[Sample]`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass
class Sample:
    """One candidate pass list.

    `score` is the strategy's own ranking value: the priority (log scale) for Priority Sampling,
    the sequence log-probability for greedy / nucleus, None for the model-free baselines.
    `logprob` is the model's log-probability of the whole generated sequence (None without a model).
    """

    passes: list[str]
    score: float | None
    text: str = ""
    logprob: float | None = None


@runtime_checkable
class Strategy(Protocol):
    """A source of ranked candidate pass lists for one input IR."""

    name: str

    def sample(self, ir: str, n: int) -> list[Sample]:
        """The first `n` samples for `ir` (a normalized single-function module), best first."""
        ...


class PromptTooLongError(ValueError):
    """The input does not fit in the model's context (predict falls back to -Oz)."""


def distinct(samples: list[Sample]) -> list[list[str]]:
    """The distinct pass lists of `samples`, in first-seen order (what verification compiles)."""
    seen: set[tuple[str, ...]] = set()
    out = []
    for s in samples:
        key = tuple(s.passes)
        if key not in seen:
            seen.add(key)
            out.append(list(s.passes))
    return out
