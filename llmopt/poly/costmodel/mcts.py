"""Monte Carlo tree search with the cost model (paper 002 §5, Table 2 right), registered as "mcts-model".

The tree is the beam searches' (every action on every branch, `llmopt.poly.search.extensions`, up
to `depth` actions, states deduplicated), and a node's value is the model's predicted log speedup:
nothing is compiled or run while searching.  Each iteration walks down from the root by UCT (mean
value of the subtree + `explore` * sqrt(ln N(parent) / N(child))) to a node that may open another
child, opens its best-predicted unopened legal child and backs that child's value up the path.  A
node's children are all scored in one batched pass the first time it opens one, and opened best
prediction first; progressive widening (a node visited n times has at most 1 + isqrt(n) children
open, more once those are exhausted) makes the search go deep on good predictions and come back
for the next ones, and legality is checked only when a child is opened (a few checks per
iteration).  Where beam search commits to the `width` best children of each level, MCTS keeps
every level open to revisiting, which copes better with a model that is wrong in places (§5).

After `iterations` iterations, `budget_seconds`, or when the tree is exhausted, the `verify` opened
schedules with the best predictions are measured, exactly as beam-model does
(`llmopt.poly.costmodel.search.verified`): the answer is never slower than the original program.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from llmopt.poly.costmodel.data import state_key
from llmopt.poly.costmodel.ranker import Ranker, start_helpers
from llmopt.poly.costmodel.search import cached_model, scored_children, verified
from llmopt.poly.legality import Legality
from llmopt.poly.measure import Measurer
from llmopt.poly.program import Program
from llmopt.poly.schedule import Schedule, state
from llmopt.poly.search import DEFAULT_DEPTH, DEFAULT_MIN_GAIN, SearchResult

DEFAULT_ITERATIONS = 64
DEFAULT_EXPLORE = 0.5  # UCT constant, in units of log speedup
DEFAULT_VERIFY = 4  # MCTS's best predictions timed (beam search's default dropped to 1; MCTS was not re-measured)


@dataclass
class Node:
    schedule: Schedule
    value: float  # predicted log speedup (0 for the original program)
    depth: int
    visits: int = 0
    total: float = 0.0
    opened: list[Node] = field(default_factory=list)
    pending: list[tuple[float, Schedule]] | None = None  # scored unopened children, best first; None: not scored
    done: bool = False  # nothing left to open below


class _Tree:
    """The search state of one MCTS run: program, model, legality, deduplication, depth limit."""

    def __init__(self, prog: Program, legality: Legality, model, depth: int):
        self.prog, self.legality, self.model, self.depth = prog, legality, model, depth
        self.rank = Ranker(prog, model)  # one per search: a child reuses its parent's unchanged vectors
        self.seen = {state_key(state(prog, Schedule()))}
        self.root = Node(Schedule(), 0.0, 0)
        self.nodes: list[Node] = []  # every opened node (all legal), for the final candidates

    def can_open(self, node: Node) -> bool:
        if node.depth >= self.depth or node.pending == []:
            return False
        live = [c for c in node.opened if not c.done]
        return len(node.opened) < 1 + math.isqrt(node.visits) or not live

    def open(self, node: Node) -> Node | None:
        """The best-predicted unopened legal child of `node`, now opened; None when none is left."""
        if node.pending is None:  # first opening: score every child in one batch
            node.pending = scored_children(self.prog, [node.schedule], self.seen, math.inf, self.rank)
        while node.pending:
            predicted, sched = node.pending.pop(0)
            if self.legality.is_legal(sched):
                child = Node(sched, math.log(max(predicted, 1e-9)), node.depth + 1)
                node.opened.append(child)
                self.nodes.append(child)
                return child
        return None

    def select(self, explore: float) -> list[Node]:
        """The path from the root, by UCT over live children, to a node that may open a child."""
        path = [self.root]
        while not self.can_open(node := path[-1]):
            live = [c for c in node.opened if not c.done]
            if not live:
                return path
            log_n = math.log(max(node.visits, 1))
            path.append(max(live, key=lambda c: c.total / max(c.visits, 1)
                            + explore * math.sqrt(log_n / max(c.visits, 1))))
        return path

    def iterate(self, explore: float) -> bool:
        """One selection, opening and backup; False when the tree has nothing left to open."""
        path = self.select(explore)
        child = self.open(path[-1]) if self.can_open(path[-1]) else None
        if child is not None:
            path.append(child)
        value = path[-1].value
        for node in reversed(path):
            node.visits += 1
            node.total += value
            node.done = not self.can_open(node) and all(c.done for c in node.opened)
        return not self.root.done


def mcts_search(prog: Program, legality: Legality, model, iterations: int = DEFAULT_ITERATIONS,
                depth: int = DEFAULT_DEPTH, verify: int = DEFAULT_VERIFY, explore: float = DEFAULT_EXPLORE,
                deadline: float = math.inf) -> list[Schedule]:
    """MCTS on predictions alone: the `verify` best-predicted legal schedules it opened, best first."""
    tree = _Tree(prog, legality, model, depth)
    for _ in range(iterations):
        if time.monotonic() > deadline or not tree.iterate(explore):
            break
    return [n.schedule for n in sorted(tree.nodes, key=lambda n: -n.value)[:verify]]


def mcts_model(prog: Program, measurer: Measurer, budget_seconds: float = 60.0,
               iterations: int = DEFAULT_ITERATIONS, depth: int = DEFAULT_DEPTH, verify: int = DEFAULT_VERIFY,
               explore: float = DEFAULT_EXPLORE, min_gain: float = DEFAULT_MIN_GAIN,
               model_path: str | os.PathLike | None = None, log: Callable[[str], None] | None = None
               ) -> SearchResult:
    """MCTS scored by the cost model, the top `verify` predictions measured (module docstring)."""
    model = cached_model(model_path)  # loaded before the clock starts, its helper processes forked too
    start_helpers(model)

    def pick(legality: Legality, deadline: float) -> list[Schedule]:
        return mcts_search(prog, legality, model, iterations, depth, verify, explore, deadline)

    return verified(prog, measurer, pick, budget_seconds, min_gain, log)
