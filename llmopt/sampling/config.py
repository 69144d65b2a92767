"""`SamplingConfig`: the decoding settings every command shares (HF `GenerationConfig` style).

`llmopt predict`, `llmopt eval`, `llmopt cc` and the strategies themselves take their defaults from
here, so "temperature 1.2" or "48 passes at most" is written once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Priority = Literal["prefix", "geometric", "token"]
PRIORITIES: tuple[Priority, ...] = ("prefix", "geometric", "token")
PREFILL_DTYPES = ("float32", "bfloat16", "auto")  # how a prompt is encoded: `llmopt.sampling.lm._prefill_copy`


@dataclass
class SamplingConfig:
    """How a strategy turns the model into candidates (thesis ch. 6 defaults)."""

    strategy: str = "priority"          # a `llmopt.sampling.registry` name
    samples: int = 10                    # candidates per function (`llmopt predict -k`)
    temperature: float = 1.2             # nucleus sampling
    top_p: float = 0.95                  # nucleus sampling
    max_branch: int | None = None        # Priority Sampling: alternatives pushed per token (None: all useful)
    priority: Priority = "prefix"        # Priority Sampling queue order
    prefetch: int = 8                    # Priority Sampling: queued prefixes scored in one forward (<= 1: off)
    grammar: bool = True                 # mask tokens that would break the pass-list grammar (thesis "regex")
    seed: int = 0                        # nucleus and random search
    max_passes: int = 48                 # longest pass list the model may generate


DEFAULTS = SamplingConfig()
