"""Ranking a search's children by the cost model, on this process and on helper processes (issue 16, Table 2).

A search with the model spends its own time (everything but timing the baseline and its answer) featurizing the
children of each level -- mostly the isl questions of the compiler view -- and asking the model about them
(docs/results/costmodel/: two thirds and a fifth of it for the trees).  Each child is featurized and answered
independently of the others, so `Ranker` deals a level's children between this process and `helpers` helper
processes (the machine's other cores: one on 2 cores), each featurizing its share with its own featurizer of the
program (made anew for each search, as this process's is) and answering it with its own copy of the model, and
merges their answers in the children's order.  The ranking is the one `search.rank_by_model` gives on one process:
the same features (a child's vectors do not depend on which vectors a featurizer kept before), the same model, the
same stable sort.  A network's answers may differ in the last bits (its batches differ); trees answer row by row.

The helpers are forked once per model and kept (`start_helpers`, which the searches call where they load the model,
before their clock starts): forking at every search made this process's own share ~35% slower, every page it
touched after the fork being copied again (copy-on-write).  A search sends them its program (pickled: a few hundred
bytes) and then each level's replayed states; only floats come back.  Children are dealt alternately, so every
process gets half of each parent's children and makes that parent's unchanged vectors once.  A level of fewer than
`MIN_SHARED` children is ranked here.  A helper that dies, hangs or answers with an error is not waited for again:
its share is ranked here, and the model's helpers are started anew for the next search.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import time
import weakref
from collections.abc import Sequence

from llmopt.poly.program import Program
from llmopt.poly.schedule import Schedule, State

PATIENCE_SECONDS = 30.0  # a helper slower than this (plus 4x this process's time for its share) is given up
MIN_SHARED = 8  # below this a round trip to a helper costs more than featurizing the children here
# One helper on a machine of 2 cores or more: the timed runs come after the search, so its cores are free.
DEFAULT_HELPERS = 1 if (os.cpu_count() or 1) >= 2 else 0
_started: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # model -> its helpers [(process, connection)]
_asked = itertools.count()  # each question's number: an answer to an earlier, abandoned question is skipped


def start_helpers(model, helpers: int = DEFAULT_HELPERS) -> list[tuple]:
    """The model's helper processes, forked now if they are not running (at most `helpers` of them; fewer where
    this process cannot fork: no fork start method, or a daemonic process).  Kept until the model is freed or
    `stop_helpers`."""
    running = [(proc, conn) for proc, conn in _started.get(model, []) if proc.is_alive()]
    while len(running) < helpers:
        try:
            ctx = multiprocessing.get_context("fork")
            ours, theirs = ctx.Pipe()
            proc = ctx.Process(target=_serve, args=(theirs, model), daemon=True)
            proc.start()
        except (ValueError, OSError, AssertionError):
            break
        theirs.close()
        running.append((proc, ours))
        weakref.finalize(model, _stop, [(proc, ours)])
    _started[model] = running
    return running[:helpers]


def stop_helpers(model) -> None:
    """Stop the model's helpers (a later search starts them again)."""
    _stop(_started.pop(model, []))


def _stop(helpers: list[tuple]) -> None:
    for proc, conn in helpers:
        try:
            conn.send(None)
            conn.close()
        except (OSError, ValueError):
            pass
        proc.join(timeout=1)  # an idle helper exits at once; a hung one is killed
        if proc.is_alive():
            proc.kill()
            proc.join()


class Ranker:
    """`ranker(kids)`: (predicted speedup, child) of `kids` ((child, replayed state) pairs), best first, children the
    features cannot describe dropped (module docstring).  One per search: its featurizer (and its helpers') keep
    the vectors they made, so a child reuses its parent's unchanged ones."""

    def __init__(self, prog: Program, model, helpers: int = DEFAULT_HELPERS):
        from llmopt.poly.costmodel.model import model_featurizer

        self.prog, self.model = prog, model
        self._helpers: list[tuple] = []
        for proc, conn in start_helpers(model, helpers) if helpers else []:
            try:
                conn.send(prog)  # a new search: the helper makes a fresh featurizer of it
                self._helpers.append((proc, conn))
            except (OSError, ValueError):
                self._give_up()
                break
        self.featurize = model_featurizer(model, prog)

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
        asked, number = [], next(_asked)
        for (_, conn), share in zip(helpers, shares[1:], strict=True):  # a helper gets shares 1.., this process 0
            try:
                conn.send((number, share))
                asked.append(conn)
            except (OSError, ValueError):
                asked.append(None)
        start = time.monotonic()
        answers = [self.scores(shares[0])]
        patience = PATIENCE_SECONDS + 4 * (time.monotonic() - start)  # its share is as large as this process's
        for conn, share in zip(asked, shares[1:], strict=True):
            got = _answer(conn, number, patience)
            if got is None or len(got) != len(share):
                self._give_up()
                got = self.scores(share)
            answers.append(got)
        scored = [(answers[j % parts][j // parts], child) for j, (child, _) in enumerate(kids)]
        return sorted([(s, child) for s, child in scored if s is not None], key=lambda pair: -pair[0])

    def _give_up(self) -> None:
        """A helper failed: this search ranks alone from now on, and the model's helpers are started anew."""
        stop_helpers(self.model)
        self._helpers = []


def _answer(conn, number: int, patience: float) -> list[float | None] | None:
    """A helper's scores for question `number`, or None when it is gone, failed or has not answered in `patience`
    seconds (hung).  Answers to earlier questions (a search that stopped between asking and reading) are skipped."""
    if conn is None:
        return None
    deadline = time.monotonic() + patience
    try:
        while conn.poll(max(0.0, deadline - time.monotonic())):
            got, scores = conn.recv()
            if got == number:
                return scores if isinstance(scores, list) else None
    except (EOFError, OSError, TypeError, ValueError):
        pass
    return None


def _serve(conn, model) -> None:
    """A helper's loop: a program starts a search (a fresh featurizer; no answer), a numbered list of states asks
    for their scores; None or a closed pipe ends it."""
    _started.clear()  # the parent's helpers are not this process's
    ranker = None
    while True:
        try:
            got = conn.recv()
        except (EOFError, OSError):
            return
        if got is None:
            return
        if isinstance(got, Program):
            try:
                ranker = Ranker(got, model, helpers=0)
            except Exception:  # its next question is answered with the error
                ranker = None
            continue
        number, states = got
        try:
            conn.send((number, ranker.scores(states)))
        except Exception as e:  # sent back as a failure (no featurizer too): the parent ranks this share itself
            conn.send((number, f"{type(e).__name__}: {e}"))
