"""Sampling strategies: interchangeable objects that turn an IR into a ranked list of candidate pass lists.

    lm = PassListLM.load()                          # the shipped model (or PassListLM.load(path))
    PrioritySampling(lm).sample(ir, 10)             # 10 unique lists, most probable prefix first
    GreedyDecoding(lm), NucleusSampling(lm, temperature=1.2, top_p=0.95, seed=0)
    RandomSearch(), Coreset(train_pass_lists)       # model-free baselines
    make_strategy("priority", lm=lm)                # by name, for CLIs

The pass-list grammar (`PassListGrammar`) is a logits processor every model strategy applies.
Imports are lazy: `import llmopt.sampling` does not import torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from llmopt.sampling.base import PromptTooLongError, Sample, Strategy, distinct

if TYPE_CHECKING:
    from llmopt.sampling.baselines import Coreset, RandomSearch
    from llmopt.sampling.grammar import PassListGrammar
    from llmopt.sampling.lm import PassListLM, TreeDecoder
    from llmopt.sampling.priority import GreedyDecoding, NucleusSampling, PrioritySampling

STRATEGIES = ("greedy", "nucleus", "priority", "random", "coreset")
_LAZY = {
    "Coreset": "baselines", "RandomSearch": "baselines", "PassListGrammar": "grammar", "PassListLM": "lm",
    "TreeDecoder": "lm", "GreedyDecoding": "priority", "NucleusSampling": "priority", "PrioritySampling": "priority",
}

__all__ = ["STRATEGIES", "Coreset", "GreedyDecoding", "NucleusSampling", "PassListGrammar", "PassListLM",
           "PrioritySampling", "PromptTooLongError", "RandomSearch", "Sample", "Strategy", "TreeDecoder",
           "distinct", "make_strategy"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"llmopt.sampling.{_LAZY[name]}"), name)
    raise AttributeError(name)


def make_strategy(name: str, *, lm: Any = None, temperature: float = 1.2, top_p: float = 0.95, seed: int = 0,
                  max_branch: int | None = None, priority: str = "prefix", train_pass_lists: Any = None,
                  passes: Any = None) -> Strategy:
    """A strategy by name (`STRATEGIES`); model strategies need `lm`, coreset needs `train_pass_lists`."""
    from llmopt.sampling import baselines
    from llmopt.sampling import priority as ps

    if name == "greedy":
        return ps.GreedyDecoding(lm)
    if name == "nucleus":
        return ps.NucleusSampling(lm, temperature=temperature, top_p=top_p, seed=seed)
    if name == "priority":
        return ps.PrioritySampling(lm, max_branch=max_branch, priority=priority)  # type: ignore[arg-type]
    if name == "random":
        return baselines.RandomSearch(passes, seed=seed)
    if name == "coreset":
        if train_pass_lists is None:
            raise ValueError("the coreset strategy needs the training set's pass lists")
        return baselines.Coreset(train_pass_lists)
    raise ValueError(f"unknown strategy {name!r}: choose one of {', '.join(STRATEGIES)}")
