"""Loop-schedule path (LoopTune): loop-nest IR, actions, features, codegen, env, searches, the policy
(`train` trains it, `policy` applies it).

Importing `llmopt.loops.env` registers the gymnasium environment `llmopt/LoopTune-v0`; the package
itself imports nothing heavy, so `llmopt` (whose parser lists `loops`) starts without gymnasium.
"""

from __future__ import annotations

from pathlib import Path

ENV_ID = "llmopt/LoopTune-v0"
DEFAULT_POLICY = Path(__file__).parent / "data" / "policy.zip"
# Measured on 40 unseen shapes under load ~3.5 on the 2-core machine: 8 candidates 0.50 s median
# (0.62 max), 0.876x numpy; 16: 0.88 s (1.12 max), 0.886x; 1 (greedy): 0.854x (docs/benchmarks.md).
DEFAULT_CANDIDATES = 8
MAX_CANDIDATES = 64  # each is compiled and measured; Priority Sampling past this only adds waiting
