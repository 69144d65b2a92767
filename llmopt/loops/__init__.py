"""Loop-schedule path (LoopTune): loop-nest IR, actions, features, codegen, env, searches, agent.

Importing this package registers the gymnasium environment `llmopt/LoopTune-v0`.
"""

from __future__ import annotations

import gymnasium as gym

ENV_ID = "llmopt/LoopTune-v0"

if ENV_ID not in gym.registry:
    gym.register(id=ENV_ID, entry_point="llmopt.loops.env:LoopTuneEnv")
