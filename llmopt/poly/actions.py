"""Pearl's 56 actions on the targeted branch (paper 003, §2.2.3) and their legality mask.

    I(i, i+1)        interchange, i in 0..3                   4
    R(i)             reversal, i in 0..4                      5
    S(i, i+1)        skewing (factor 1), i in 0..2            3
    P(i)             parallelization, i in 0..1               2
    T(i, i+1, x, y)  2D tiling, i in 0..3, 9 size pairs      36
    U(f)             unroll the innermost loop, f in 2..32    5
    Next             move to the next branch                  1

A branch is named by one of its statements (`llmopt.poly.schedule.branches`); `transform(a, stmt)`
turns action `a` into the `Transform` on that branch (None for Next), and `action_mask` says which
of the 56 are applicable and legal now (Next always is).  Action indices are stable: the policy's
output layer is ordered as `ACTIONS`.
"""

from __future__ import annotations

from dataclasses import dataclass

from llmopt.poly.legality import Legality
from llmopt.poly.schedule import Interchange, Parallel, Reversal, Schedule, Skew, Tile, Transform, Unroll

TILE_SIZES = [(32, 32), (64, 64), (128, 128), (32, 64), (32, 128), (64, 32), (64, 128), (128, 32), (128, 64)]
UNROLL_FACTORS = (2, 4, 8, 16, 32)


@dataclass(frozen=True)
class Action:
    """One entry of the action space: a kind, the loop level it starts at, its parameters."""

    name: str
    kind: str
    level: int = 0
    params: tuple[int, ...] = ()


def _actions() -> list[Action]:
    out = [Action(f"I({i},{i + 1})", "interchange", i) for i in range(4)]
    out += [Action(f"R({i})", "reversal", i) for i in range(5)]
    out += [Action(f"S({i},{i + 1})", "skewing", i) for i in range(3)]
    out += [Action(f"P({i})", "parallelization", i) for i in range(2)]
    out += [Action(f"T({i},{i + 1},{x},{y})", "tiling", i, (x, y)) for i in range(4) for x, y in TILE_SIZES]
    out += [Action(f"U({f})", "unrolling", 0, (f,)) for f in UNROLL_FACTORS]
    return out + [Action("Next", "next")]


ACTIONS: list[Action] = _actions()
NEXT = len(ACTIONS) - 1
assert len(ACTIONS) == 56


def transform(action: Action, stmt: str) -> Transform | None:
    """The transformation `action` means on the branch of `stmt` (None for Next)."""
    lvl = action.level
    match action.kind:
        case "interchange":
            return Interchange(stmt, lvl, lvl + 1)
        case "reversal":
            return Reversal(stmt, lvl)
        case "skewing":
            return Skew(stmt, lvl, 1)
        case "parallelization":
            return Parallel(stmt, lvl)
        case "tiling":
            return Tile(stmt, lvl, sizes=action.params)
        case "unrolling":
            return Unroll(stmt, factor=action.params[0])
    return None


def action_mask(legality: Legality, schedule: Schedule, stmt: str) -> list[bool]:
    """For each of the 56 actions on the branch of `stmt`: applicable and legal after `schedule`."""
    mask = legality.mask(schedule, [transform(a, stmt) for a in ACTIONS])
    mask[NEXT] = True
    return mask
