"""Sampling strategies: interchangeable objects that turn an IR into a ranked list of candidate pass lists.

    lm = PassListLM.load()                          # the shipped model (or PassListLM.load(path))
    PrioritySampling(lm).sample(ir, 10)             # 10 unique lists, most probable prefix first
    GreedyDecoding(lm), NucleusSampling(lm, temperature=1.2, top_p=0.95, seed=0)
    RandomSearch(), Coreset(train_pass_lists)       # model-free baselines
    strategy_from_name("priority_branch3", lm=lm)   # by name (registry.py), for predict and eval alike

Defaults live in one `SamplingConfig` (config.py).  The pass-list grammar (`PassListGrammar`) is a
logits processor every model strategy applies (`TreeDecoder.masked_logprobs`); decoding.py holds the
token rules (greedy continuation, nucleus draw) and the greedy and nucleus strategies, priority.py
Priority Sampling alone.
Imports are lazy: `import llmopt.sampling` does not import torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from llmopt.sampling.base import PromptTooLongError, Sample, Strategy, distinct
from llmopt.sampling.config import DEFAULTS, SamplingConfig

if TYPE_CHECKING:
    from llmopt.sampling.baselines import Coreset, RandomSearch
    from llmopt.sampling.decoding import GreedyDecoding, NucleusSampling
    from llmopt.sampling.grammar import PassListGrammar
    from llmopt.sampling.lm import PassListLM, TreeDecoder
    from llmopt.sampling.priority import PrioritySampling
    from llmopt.sampling.registry import strategy_from_name

_LAZY = {
    "Coreset": "baselines", "RandomSearch": "baselines", "PassListGrammar": "grammar", "PassListLM": "lm",
    "TreeDecoder": "lm", "GreedyDecoding": "decoding", "NucleusSampling": "decoding", "PrioritySampling": "priority",
    "strategy_from_name": "registry",
}

__all__ = ["DEFAULTS", "Coreset", "GreedyDecoding", "NucleusSampling", "PassListGrammar", "PassListLM",
           "PrioritySampling", "PromptTooLongError", "RandomSearch", "Sample", "SamplingConfig", "Strategy",
           "TreeDecoder", "distinct", "strategy_from_name"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"llmopt.sampling.{_LAZY[name]}"), name)
    raise AttributeError(name)
