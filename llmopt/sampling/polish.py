"""Model-seeded search: refine the model's best verified pass lists with a few greedy steps.

The model proposes good starting points; the in-process harness compiles thousands of lists per
second, so a local search around them is cheap.  A step from the current list L tries one-pass
extensions `L + [p]` (a meta-pass such as `default<O2>` only when L has none) and every one-pass
removal, moves to the best if it lowers the count, and stops when nothing does or the budget of
compilations is spent.  Seeds are polished best first while budget remains.

Which extensions a step tries: all of them (~120 compilations a step, so a budget of 100 cannot
finish one), or, model-guided (`model_order`), the `width` passes the model itself finds likeliest
after L -- the language model is asked "what comes next?" about a list it never generated.  Guided
steps also insert inside the list: before pass i, the `insert_width` passes the model likes best after
L[:i] (the autotuner's labels put e.g. `instcombine` between `iroutliner` and `jump-threading`; an
append-only walk cannot reach them from a list that already ends in the wrong pass).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from llmopt.llvm.passes import META_PASSES

Order = Callable[[list[str]], Sequence[str]]  # passes in the order a step should try them after a list
Measure = Callable[[str, list[list[str]]], list[Any]]  # Harness.evaluate_many: results with .ok, .instcount
Score = Any  # what is minimized: an int (instructions) or a tuple such as (bytes, instructions)


def instcount_score(result: Any) -> Score | None:
    return result.instcount if result.ok else None


def rank(score: Score, passes: Sequence[str]) -> tuple[Score, int]:
    """Lower score first, then the shorter list (the autotuner's order)."""
    return score, len(passes)


@dataclass
class Polished:
    """What polishing found: the best list, its score, and how many lists it compiled."""

    passes: list[str]
    score: Score
    compilations: int = 0
    tried: list[tuple[list[str], Score | None]] = field(default_factory=list)  # in compile order
    improved: bool = False  # better than the best seed


MODEL_WIDTH = 8  # extensions a model-guided step tries at the end of the list (+ the removals)
INSERT_WIDTH = 2  # ... and before each pass of it: ~20 compilations a step for a list of 4


def model_order(decoder: Any) -> Order:
    """Passes by the model's log p(pass | IR, list) under the pass-list grammar (`decoder`: the
    `TreeDecoder` of the IR, e.g. Priority Sampling's `last_decoder`, whose memo already holds the
    rows after every sampled list)."""
    import torch

    grammar = decoder.lm.grammar

    def order(passes: list[str]) -> list[str]:
        if any(p not in grammar.pass_ids for p in passes):
            return []
        row = decoder.masked_logprobs([grammar.pass_ids[p] for p in passes])
        legal = int(torch.isfinite(row).sum())  # the grammar's -inf tokens sort last
        ranked = torch.argsort(row, descending=True)[:legal].tolist()
        return [grammar.name_of[t] for t in ranked if t in grammar.name_of]

    return order


class Polisher:
    """Greedy steps from verified lists (module docstring); `order` + `width`: model-guided extensions."""

    def __init__(self, measure: Measure, vocabulary: Sequence[str], budget: int = 300, max_steps: int = 8,
                 max_len: int = 24, score: Callable[[Any], Score | None] = instcount_score,
                 order: Order | None = None, width: int = MODEL_WIDTH, insert_width: int = INSERT_WIDTH):
        if budget < 0 or max_steps < 0 or width < 1 or insert_width < 0:
            raise ValueError("polish budget, steps and insert width must be >= 0, the width >= 1")
        self.measure, self.score = measure, score
        self.plain = [p for p in vocabulary if p not in META_PASSES]
        self.budget, self.max_steps, self.max_len = budget, max_steps, max_len
        self.order, self.width, self.insert_width = order, width, insert_width

    def neighbours(self, passes: list[str]) -> list[list[str]]:
        """One-pass extensions at the end (a meta-pass only into a list without one; the model's `width`
        likeliest when guided), one-pass removals, then (guided only) the model's `insert_width`
        likeliest insertions before each pass, best-ranked first across positions."""
        has_meta = any(p in META_PASSES for p in passes)
        allowed = self.plain + ([] if has_meta else list(META_PASSES))
        legal = set(allowed)
        if self.order is not None:
            allowed = [p for p in self.order(passes) if p in legal][: self.width]
        full = len(passes) >= self.max_len
        grow = [] if full else [passes + [p] for p in allowed]
        shrink = [passes[:i] + passes[i + 1:] for i in range(len(passes))] if len(passes) > 1 else []
        return grow + shrink + ([] if full else self._insertions(passes, legal))

    def _insertions(self, passes: list[str], legal: set[str]) -> list[list[str]]:
        if self.order is None or not self.insert_width:
            return []
        ranked = [[p for p in self.order(passes[:i]) if p in legal][: self.insert_width] for i in range(len(passes))]
        return [passes[:i] + [choices[k]] + passes[i:]
                for k in range(self.insert_width) for i, choices in enumerate(ranked) if k < len(choices)]

    def polish(self, ir: str, seeds: Sequence[tuple[list[str], Score]],
               known: dict[tuple[str, ...], Score | None] | None = None) -> Polished:
        """Refine `seeds` ((pass list, verified score), any order) on `ir` within the budget; `known`
        holds lists measured before (not compiled again)."""
        if not seeds:
            raise ValueError("polish needs at least one verified seed list")
        known = {**(known or {}), **{tuple(p): n for p, n in seeds}}
        ordered = sorted(seeds, key=lambda s: rank(s[1], s[0]))
        best = Polished(list(ordered[0][0]), ordered[0][1])
        for passes, count in ordered:
            if best.compilations >= self.budget:
                break
            current, current_n = list(passes), count
            for _ in range(self.max_steps):
                fresh = [ls for ls in self.neighbours(current) if tuple(ls) not in known]
                fresh = fresh[: self.budget - best.compilations]
                if not fresh:
                    break
                results = self.measure(ir, fresh)
                best.compilations += len(fresh)
                for ls, r in zip(fresh, results, strict=True):
                    n = self.score(r)
                    known[tuple(ls)] = n
                    best.tried.append((ls, n))
                scored = [(rank(n, ls), ls, n) for ls, n in ((ls, known[tuple(ls)]) for ls in fresh) if n is not None]
                if not scored or min(scored)[0] >= rank(current_n, current):
                    break
                _, current, current_n = min(scored)
            if rank(current_n, current) < rank(best.score, best.passes):
                best.passes, best.score, best.improved = list(current), current_n, True
        return best

    def polish_best(self, ir: str, measured: dict[tuple[str, ...], Any], n_seeds: int = 3) -> Polished | None:
        """Polish from the `n_seeds` best of `measured` ({pass list: harness result}); None if none compiled.
        Every measured list counts as known, so none is compiled again."""
        known = {k: self.score(r) for k, r in measured.items()}
        seeds = sorted(((list(k), sc) for k, sc in known.items() if k and sc is not None),
                       key=lambda s: rank(s[1], s[0]))[:n_seeds]
        return self.polish(ir, seeds, known) if seeds else None


class PolishAfter:
    """A strategy: `inner`'s first `seeds` samples, then the lists a polish of them compiles, in that order.

    Sample k of the result is the k-th compilation, so an evaluation's curve at k samples is the
    improvement reached after k compilations (Priority Sampling + polish against plain search).  Walks
    start from every sample, best first, while the budget lasts.
    -Oz, which every evaluation measures as its baseline anyway, may seed the polish too.
    """

    compiles_while_sampling = True  # the polish steps need counts (callers must not share the harness)

    def __init__(self, inner: Any, measure: Measure, vocabulary: Sequence[str], seeds: int = 10,
                 score: Callable[[Any], Score | None] = instcount_score, name: str | None = None):
        self.inner, self.measure, self.vocabulary, self.seeds, self.score = inner, measure, vocabulary, seeds, score
        self.name = name or f"{getattr(inner, 'name', 'model')}_polish{seeds}"

    def sample(self, ir: str, n: int) -> list[Any]:
        from llmopt.llvm.passes import OZ
        from llmopt.sampling.base import Sample, distinct

        drawn = self.inner.sample(ir, min(n, self.seeds))
        lists = distinct(drawn)
        if n <= len(drawn) or not lists:
            return drawn[:n]
        measured = dict(zip(map(tuple, lists + [[OZ]]), self.measure(ir, lists + [[OZ]]), strict=True))
        decoder = getattr(self.inner, "last_decoder", None)  # Priority Sampling's: guide the steps
        polisher = Polisher(self.measure, self.vocabulary, budget=n - len(drawn), score=self.score,
                            order=model_order(decoder) if decoder is not None else None)
        # Every sample may seed a walk (best first): the budget is spent while a walk can still start,
        # instead of stopping once the best three converge.
        found = polisher.polish_best(ir, measured, n_seeds=len(measured))
        return drawn + [Sample(list(ls), None, "polish") for ls, _ in found.tried] if found else drawn
