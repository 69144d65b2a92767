"""Strategies by name: the one registry that `llmopt predict`, `llmopt eval` and `llmopt cc` read.

    greedy
    nucleus, nucleus_tT                  nucleus sampling (T: its temperature, e.g. nucleus_t0.8)
    priority[_noregex|_geomean|_token|_branchN]...   Priority Sampling and its Table 6.1 ablations
    priority_nooz                        Priority Sampling that never spends a sample on bare -Oz (the backup)
    priority_rerank[N]                   Priority Sampling whose first N (default 30) lists are reordered by their
                                         mean log-probability per pass (model time, not compilations)
    priority_lists                       Priority Sampling over a fixed set of known-good lists only (the model ranks
                                         them per function; needs `list_vocabulary`, `ListSetGrammar`)
    feedback, feedback_{fast,short,long} greedy answer, then compiler-feedback retries (needs a harness)
    random, coreset                      model-free baselines (coreset needs training pass lists)
    NAME_polishK                         K samples of NAME, then greedy polish (needs a harness)

Settings not carried by the name come from a `SamplingConfig`.  `eval` adds its own methods
(autotuner labels, -Oz, set-cover coreset, greedy search) and polishes them through `polished`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence
from typing import Any

from llmopt.llvm.passes import META_PASSES, OZ
from llmopt.sampling.base import Sample, Strategy
from llmopt.sampling.config import DEFAULTS, SamplingConfig

BASE_NAMES = ("greedy", "nucleus", "priority", "random", "coreset")  # what `llmopt predict --help` lists
_NUCLEUS = re.compile(r"^nucleus(?:_t(\d+(?:\.\d+)?))?$")
_PRIORITY = re.compile(r"^priority((?:_(?:noregex|geomean|token|nooz|lists|branch\d+|rerank\d*))*)$")
RERANK_POOL = 30  # `priority_rerank`'s pool: the first 30 lists, reordered by confidence per pass
_FEEDBACK = re.compile(r"^feedback(?:_(fast|short|long))?$")
_POLISH = re.compile(r"^(.+)_polish(\d+)$")


def split_polish(name: str) -> tuple[str, int] | None:
    """(inner name, K) of `NAME_polishK`; None for any other name."""
    m = _POLISH.match(name)
    return (m.group(1), int(m.group(2))) if m else None


def needs_model(name: str) -> bool:
    """Whether the strategy `name` samples from the language model."""
    if polish := split_polish(name):
        return needs_model(polish[0])
    return name == "greedy" or bool(_NUCLEUS.match(name) or _PRIORITY.match(name) or _FEEDBACK.match(name))


def is_known(name: str, extra: Collection[str] = ()) -> bool:
    """A registry name (or one of the caller's `extra` names), polished forms included."""
    if polish := split_polish(name):
        return polish[1] >= 1 and is_known(polish[0], extra)
    return name in ("random", "coreset") or name in extra or needs_model(name)


def polished(inner: Strategy, harness: Any, seeds: int, metric: str = "instcount", name: str | None = None
             ) -> Strategy:
    """`inner`'s first `seeds` samples, then a greedy polish of the best by `metric` (`PolishAfter`)."""
    from llmopt.llvm.passes import vocabulary
    from llmopt.metrics import metric_value
    from llmopt.sampling.polish import PolishAfter

    sized = metric == "objsize"
    return PolishAfter(inner, lambda ir, lists: harness.evaluate_many(ir, lists, objsize=sized),
                       vocabulary(harness.version), seeds=seeds,
                       score=lambda r: metric_value(r, metric) if r.ok else None, name=name)


class NoRegexFallback:
    """Priority Sampling without the grammar (Table 6.1 "no regex"): an empty or invalid list becomes -Oz."""

    def __init__(self, inner: Strategy, name: str, vocabulary: set[str]):
        self.inner, self.name, self.vocabulary = inner, name, vocabulary

    def sample(self, ir: str, n: int) -> list[Sample]:
        out = []
        for s in self.inner.sample(ir, n):
            passes, meta = [], False
            for p in s.passes:
                if p not in self.vocabulary or (p in META_PASSES and meta):
                    continue  # drop invalid passes and any second meta-pass
                meta = meta or p in META_PASSES
                passes.append(p)
            out.append(Sample(passes or [OZ], s.score, s.text, getattr(s, "logprob", None)))
        return out


def _priority(lm: Any, name: str, flags: str, config: SamplingConfig,
              list_vocabulary: Sequence[Sequence[str]] | None = None) -> Strategy:
    from llmopt.sampling.priority import PrioritySampling

    parts = [f for f in flags.split("_") if f]
    if "lists" in parts:
        if not list_vocabulary:
            raise ValueError(f"{name} needs a list vocabulary (eval: --list-vocabulary FILE or the training labels)")
        if "noregex" in parts:
            raise ValueError(f"{name}: a list vocabulary is a grammar; it cannot be combined with noregex")
        lm = lm.restricted_to(list_vocabulary)
    branch = next((int(f[6:]) for f in parts if f.startswith("branch")), config.max_branch)
    priority = "geometric" if "geomean" in parts else "token" if "token" in parts else config.priority
    grammar = config.grammar and "noregex" not in parts
    exclude = [[OZ]] if "nooz" in parts else []  # -Oz is evaluated anyway as the backup
    rerank = next((int(f[6:] or RERANK_POOL) for f in parts if f.startswith("rerank")), 0)
    strategy = PrioritySampling(lm, max_branch=branch, priority=priority, grammar=grammar, exclude=exclude,
                                rerank=rerank, prefetch=config.prefetch)
    strategy.name = name  # type: ignore[misc]
    return NoRegexFallback(strategy, name, set(lm.passes)) if not grammar else strategy


def strategy_from_name(name: str, *, lm: Any = None, config: SamplingConfig = DEFAULTS, harness: Any = None,
                       metric: str = "instcount", train_pass_lists: Sequence[Sequence[str]] | None = None,
                       passes: Sequence[str] | None = None, feedback_rounds: int = 2,
                       build: Callable[[str], Strategy] | None = None,
                       list_vocabulary: Sequence[Sequence[str]] | None = None) -> Strategy:
    """The strategy `name` (module docstring); model strategies need `lm`, feedback and polish a `harness`.

    `build` makes the inner strategy of `NAME_polishK` (default: this registry), so a caller can
    polish its own methods.  Unknown names raise ValueError.
    """
    if polish := split_polish(name):
        inner = (build or (lambda n: strategy_from_name(n, lm=lm, config=config, harness=harness, metric=metric,
                                                        train_pass_lists=train_pass_lists, passes=passes,
                                                        feedback_rounds=feedback_rounds,
                                                        list_vocabulary=list_vocabulary)))(polish[0])
        return polished(inner, harness, polish[1], metric, name)
    if name == "greedy":
        from llmopt.sampling.decoding import GreedyDecoding

        return GreedyDecoding(lm, grammar=config.grammar)
    if m := _NUCLEUS.match(name):
        from llmopt.sampling.decoding import NucleusSampling

        temperature = float(m.group(1)) if m.group(1) else config.temperature
        strategy = NucleusSampling(lm, temperature=temperature, top_p=config.top_p, seed=config.seed,
                                   grammar=config.grammar)
        strategy.name = name  # type: ignore[misc]
        return strategy
    if m := _PRIORITY.match(name):
        return _priority(lm, name, m.group(1), config, list_vocabulary)
    if m := _FEEDBACK.match(name):
        from llmopt.feedback import FeedbackStrategy

        strategy = FeedbackStrategy(lm, harness, form=m.group(1) or "fast", rounds=feedback_rounds)
        strategy.name = name
        return strategy
    if name == "random":
        from llmopt.sampling.baselines import RandomSearch

        return RandomSearch(passes, seed=config.seed)
    if name == "coreset":
        from llmopt.sampling.baselines import Coreset

        if train_pass_lists is None:
            raise ValueError("the coreset strategy needs the training set's pass lists")
        return Coreset(train_pass_lists)
    raise ValueError(f"unknown strategy {name!r}: choose greedy, nucleus[_tT], priority[_noregex|_geomean|_token|"
                     "_nooz|_lists|_branchN], feedback[_fast|_short|_long], random, coreset, or NAME_polishK")
