"""Ranking a search's children by the cost model, on this process and on forked helpers (issue 16, Table 2).

A search with the model spends its own time (everything but timing the baseline and its answer) featurizing the
children of each level -- mostly the isl questions of the compiler view -- and asking the model about them
(docs/results/costmodel/: two thirds and a fifth of it for the trees).  Each child is featurized and answered
independently of the others, so `Ranker` deals a level's children between this process and `helpers` forked
processes (the machine's other cores: one on 2 cores), each featurizing its share with its own copy of the search's
featurizer and answering it with its own copy of the model, and merges their answers in the children's order.
The ranking is the one `search.rank_by_model` gives on one process: the same features (a child's vectors do not
depend on which vectors a featurizer kept before), the same model, the same stable sort.  A network's answers
may differ in the last bits (its batches differ); trees answer row by row.

Why fork: a helper inherits the program, the loaded model and the featurizer (with the untransformed tree's vectors
already made) without pickling isl objects; only the children's replayed states go to it and only floats come
back.  Children are dealt alternately, so every process gets half of each parent's children and makes that
parent's unchanged vectors once.  A level of fewer than `MIN_SHARED` children is ranked here.  A helper that cannot
start, dies, hangs or answers with an error is not waited for again: its share is ranked here, and so is every later level.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from collections.abc import Sequence

from llmopt.poly.program import Program
from llmopt.poly.schedule import Schedule, State

PATIENCE_SECONDS = 30.0  # a helper slower than this (plus 4x this process's time for its share) is given up
MIN_SHARED = 8  # below this a round trip to a helper costs more than featurizing the children here
# One helper on a machine of 2 cores or more: the timed runs come after the search, so its cores are free.
DEFAULT_HELPERS = 1 if (os.cpu_count() or 1) >= 2 else 0


class Ranker:
    """`ranker(kids)`: (predicted speedup, child) of `kids` ((child, replayed state) pairs), best first, children the
    features cannot describe dropped (module docstring).  Close it (or use it in a `with`) to stop its helpers."""

    def __init__(self, prog: Program, model, helpers: int = DEFAULT_HELPERS):
        from llmopt.poly.costmodel.model import model_featurizer

        self.prog, self.model = prog, model
        self.featurize = model_featurizer(model, prog)  # one per search: a child reuses its parent's unchanged vectors
        self._helpers: list[tuple] = []  # (process, connection)
        for _ in range(helpers):
            try:
                ctx = multiprocessing.get_context("fork")
                ours, theirs = ctx.Pipe()
                proc = ctx.Process(target=_serve, args=(theirs, self), daemon=True)
                proc.start()
            except (ValueError, OSError, AssertionError):  # no fork here, no processes left, or a daemon's child
                break
            theirs.close()
            self._helpers.append((proc, ours))

    def scores(self, states: Sequence[State]) -> list[float | None]:
        """The model's predicted speedup of each state, None where the features cannot describe it."""
        from llmopt.poly.costmodel.model import predict_trees

        trees, at = [], []
        for i, st in enumerate(states):
            try:
                trees.append(self.featurize(st))
            except Exception:  # any failure only means "unscorable", never a crashed search
                continue
            at.append(i)
        out: list[float | None] = [None] * len(states)
        if trees:
            for i, score in zip(at, predict_trees(self.model, trees).tolist(), strict=True):
                out[i] = score
        return out

    def __call__(self, kids: Sequence[tuple[Schedule, State]]) -> list[tuple[float, Schedule]]:
        helpers = self._helpers if len(kids) >= MIN_SHARED else []
        parts = 1 + len(helpers)
        shares = [[st for _, st in kids[p::parts]] for p in range(parts)]
        asked = []
        for (_, conn), share in zip(helpers, shares[1:], strict=True):  # a helper gets shares 1.., this process 0
            try:
                conn.send(share)
                asked.append(conn)
            except (OSError, ValueError):
                asked.append(None)
        start = time.monotonic()
        answers = [self.scores(shares[0])]
        patience = PATIENCE_SECONDS + 4 * (time.monotonic() - start)  # its share is as large as this process's
        for conn, share in zip(asked, shares[1:], strict=True):
            got = _answer(conn, patience)
            if got is None or len(got) != len(share):
                self.close()
                got = self.scores(share)
            answers.append(got)
        scored = [(answers[j % parts][j // parts], child) for j, (child, _) in enumerate(kids)]
        return sorted([(s, child) for s, child in scored if s is not None], key=lambda pair: -pair[0])

    def close(self) -> None:
        for proc, conn in self._helpers:
            try:
                conn.send(None)
                conn.close()
            except (OSError, ValueError):
                pass
            proc.join(timeout=1)  # an idle helper exits at once; a hung one is killed
            if proc.is_alive():
                proc.kill()
                proc.join()
        self._helpers = []

    def __enter__(self) -> Ranker:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _answer(conn, patience: float) -> list[float | None] | None:
    """A helper's scores, or None when it is gone, failed or has not answered in `patience` seconds (hung)."""
    if conn is None:
        return None
    try:
        if not conn.poll(patience):
            return None
        got = conn.recv()
    except (EOFError, OSError):
        return None
    return got if isinstance(got, list) else None


def _serve(conn, ranker: Ranker) -> None:
    """A helper's loop: scores for each list of states received, until None or the pipe closes."""
    ranker._helpers = []  # the parent's pipes are not this process's to use
    while True:
        try:
            states = conn.recv()
        except (EOFError, OSError):
            return
        if states is None:
            return
        try:
            conn.send(ranker.scores(states))
        except Exception as e:  # sent back as a failure: the parent ranks this share itself
            conn.send(f"{type(e).__name__}: {e}")
