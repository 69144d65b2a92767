"""Where the agent stands in a program and what one action does to it (Pearl §4.2).

Pearl walks the loop tree branch by branch, left to right: the 55 transformation actions target
the current branch, "Next" moves to the following one, and "Next" on the last branch ends the
episode.  A `Position` is that state without any measurement: the schedule built so far and the
index of the targeted branch.  The branch is kept as an index into `branches(state)`, which is
stable under the 55 actions (none of them splits or merges loops), and named by its first
statement when an action is turned into a `Transform`.

The env, the policy and the pre-training data collector all step through programs with these
functions, so the three agree on what an action means.
"""

from __future__ import annotations

from dataclasses import dataclass

from llmopt.poly.actions import ACTIONS, NEXT, transform
from llmopt.poly.legality import Legality
from llmopt.poly.program import Program
from llmopt.poly.schedule import Schedule, Transform, branches, state


@dataclass(frozen=True)
class Position:
    """The schedule so far and the targeted branch (index into `branches(state(program, schedule))`)."""

    schedule: Schedule
    branch: int = 0


def start() -> Position:
    """The first branch of the original program order."""
    return Position(Schedule(), 0)


def branch_list(prog: Program, pos: Position) -> list[list[str]]:
    return branches(state(prog, pos.schedule))


def target(prog: Program, pos: Position) -> str:
    """The statement that names the targeted branch (what `actions.transform` applies to)."""
    return branch_list(prog, pos)[pos.branch][0]


ONCE = ("tiling", "unrolling", "parallelization")  # at most once per branch


def legal_mask(legality: Legality, pos: Position) -> list[bool]:
    """Which of the 56 actions are applicable and legal at `pos` (Next always is).

    Tiling, unrolling and parallelization are offered once per branch: a second unroll or parallel
    mark only overwrites the first, and tiling the tile loops again deepens the nest so much that
    the exact legality checks (and the emitted code) grow without a speedup to show for it.
    """
    mask = legality.mask(pos.schedule, candidate_transforms(legality.prog, pos))
    mask[NEXT] = True
    return mask


def candidate_transforms(prog: Program, pos: Position) -> list[Transform | None]:
    """The transform of each of the 56 actions at `pos`, None where it is not offered (Next, ONCE)."""
    stmt = target(prog, pos)
    done = {t.kind for t in pos.schedule.transforms if t.stmt == stmt}
    return [None if a.kind in done and a.kind in ONCE else transform(a, stmt) for a in ACTIONS]


def first_legal(legality: Legality, pos: Position, order) -> int:
    """The first action of `order` that `legal_mask` allows, checking legality of as few as possible:
    the argmax of a masked policy without the 55 checks of a full mask (Next is always allowed)."""
    return (first_legal_actions(legality, pos, order, 1) or [NEXT])[0]


def first_legal_actions(legality: Legality, pos: Position, order, k: int) -> list[int]:
    """The first `k` actions of `order` that `legal_mask` allows, checked lazily as `first_legal` does."""
    candidates = candidate_transforms(legality.prog, pos)
    out: list[int] = []
    for action in order:
        action = int(action)
        if action == NEXT or (candidates[action] is not None and legality.allows(pos.schedule, candidates[action])):
            out.append(action)
            if len(out) == k:
                break
    return out


def advance(prog: Program, pos: Position, action: int) -> tuple[Position, bool]:
    """(the position after `action`, whether the episode is over).

    The caller has checked the action against `legal_mask`; a transformation is appended to the
    schedule as it is, "Next" moves to the next branch or ends the walk after the last one.
    """
    if action == NEXT:
        last = pos.branch + 1 >= len(branch_list(prog, pos))
        return (pos if last else Position(pos.schedule, pos.branch + 1)), last
    step = transform(ACTIONS[action], target(prog, pos))
    return Position(pos.schedule.then(step), pos.branch), False


def walk_actions(prog: Program, schedule: Schedule) -> list[int] | None:
    """The actions of the walk that builds `schedule` and then ends the episode: each transform on
    its branch (reached with "Next"), then "Next" to the end; None when no walk builds it (a
    transform on an earlier branch than the one before it, or one that is not among the 56).
    Schedules of `random_schedule` and of the agent are walks, so they always have one."""
    pos, out = start(), []
    for t in schedule.transforms:
        while target(prog, pos) != t.stmt:
            pos, done = advance(prog, pos, NEXT)
            if done:
                return None
            out.append(NEXT)
        action = next((a for a in range(len(ACTIONS)) if a != NEXT and transform(ACTIONS[a], t.stmt) == t), None)
        if action is None:
            return None
        pos, _ = advance(prog, pos, action)
        out.append(action)
    for _ in range(len(branch_list(prog, pos)) + 1):
        pos, done = advance(prog, pos, NEXT)
        out.append(NEXT)
        if done:
            return out
    return None
