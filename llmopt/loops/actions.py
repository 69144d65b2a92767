"""LoopTune's action space: move the cursor, swap loops, split loops.

Actions (index: name): 0 up, 1 down, 2 swap_up, 3 swap_down, 4 split_4, 5 split_8, 6 split_16.
An action that is not available in a state is a no-op (the env gives it zero reward and masks it).
"""

from __future__ import annotations

import numpy as np

from llmopt.loops.nest import Loop, Nest, steps

ACTIONS: tuple[str, ...] = ("up", "down", "swap_up", "swap_down", "split_4", "split_8", "split_16")
SPLITS = {"split_4": 4, "split_8": 8, "split_16": 16}
MAX_LOOPS = 10


def is_available(nest: Nest, action: str) -> bool:
    """Whether `action` changes `nest` (cursor or loops) under LoopTune's rules."""
    loops, c, n_comp = nest.loops, nest.cursor, len(nest.compute)
    if action == "up":
        return c > 0
    if action == "down":
        return c < len(loops) - 1
    if action in ("swap_up", "swap_down"):
        other = c - 1 if action == "swap_up" else c + 1
        if not 0 <= other < len(loops):
            return False
        # Loops only move within their own nest, and never past a loop of the same iterator.
        if (c < n_comp) != (other < n_comp):
            return False
        return loops[c].iterator != loops[other].iterator
    if action in SPLITS:
        return len(loops) < MAX_LOOPS and loops[c].size // SPLITS[action] > 0
    raise ValueError(f"unknown action {action!r}; choose from {ACTIONS}")


def action_mask(nest: Nest) -> np.ndarray:
    """Boolean mask over ACTIONS. Shape: [7]."""
    return np.array([is_available(nest, a) for a in ACTIONS], dtype=bool)


def split_loop(loop: Loop, step: int, factor: int) -> tuple[Loop, Loop]:
    """Split `loop` (of nominal `step`) by `factor`: outer N // factor with the leftover elements
    as its tail, inner `factor` full iterations of the old step."""
    outer = Loop(loop.iterator, loop.size // factor, (loop.size % factor) * step + loop.tail)
    inner = Loop(loop.iterator, factor, 0)
    return outer, inner


def apply(nest: Nest, action: str | int) -> Nest:
    """The nest after `action`; the same nest object when the action is unavailable."""
    if isinstance(action, (int, np.integer)):
        action = ACTIONS[int(action)]
    if not is_available(nest, action):
        return nest
    loops, c, n_comp = list(nest.loops), nest.cursor, len(nest.compute)
    if action == "up":
        return nest.with_loops(loops, n_comp, c - 1)
    if action == "down":
        return nest.with_loops(loops, n_comp, c + 1)
    if action in ("swap_up", "swap_down"):
        other = c - 1 if action == "swap_up" else c + 1
        loops[c], loops[other] = loops[other], loops[c]
        return nest.with_loops(loops, n_comp, other)
    # Split: the step of the loop at the cursor comes from its own nest only.
    in_compute = c < n_comp
    own = loops[:n_comp] if in_compute else loops[n_comp:]
    pos = c if in_compute else c - n_comp
    outer, inner = split_loop(loops[c], steps(own)[pos], SPLITS[action])
    loops[c : c + 1] = [outer, inner]
    return nest.with_loops(loops, n_comp + (1 if in_compute else 0), c)


def apply_all(nest: Nest, actions: list[str | int]) -> Nest:
    for a in actions:
        nest = apply(nest, a)
    return nest
