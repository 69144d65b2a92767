"""Priority Sampling (thesis ch. 6, Algorithm 1).

The first sample is greedy decoding (`llmopt.sampling.decoding.greedy_continue`).  At every generation step the best `max_branch` alternative
tokens (after the grammar mask) are pushed, with their prefix, into a priority queue; each next
sample pops the best unexpanded prefix and decodes greedily from there.  Every prefix is pushed
once and a popped prefix ends in a token no earlier sample took at that node, so every sample is
unique; the procedure is deterministic.

Priority of a queued prefix (thesis Table 6.1 ablations):
  * "prefix"    (default) log-probability of the whole prefix, i.e. the most probable unexpanded
                prefix first.  Children are never more probable than their parent, so samples
                come out in non-increasing priority order (a best-first search of the tree).
  * "geometric" mean log-probability per token of the prefix (thesis "PS geometric").
  * "token"     log-probability of the alternative token alone (Algorithm 1 taken literally).

`rerank` (pool size P > 0): draw max(n, P) samples, then order the first P by their mean
log-probability per pass (the whole list's log-probability, end token included, over its length),
most confident first.  The tree walk finds good lists but hands them out by prefix probability, which
favours short and common heads (`default<O1>` first for most functions); per-pass confidence is the
length normalization beam search uses.  It spends model time (P samples), not compilations.

`prefetch` (P > 1): before each pop, the best P queued prefixes that share the working KV cache's path are
scored in one forward (`TreeDecoder.prefetch`), since a forward costs about the same for 1 token or 8 and most
popped prefixes end their list one step later.  The samples are the same up to float rounding of near ties.

`exclude` names pass lists that are walked but never returned (their alternatives are still
queued): with -Oz evaluated anyway as the backup (`llmopt predict`, eval's -Oz backup), a sample
that is the bare `default<Oz>` would spend one of the n compilations on a known answer, so the
`_nooz` variant excludes it and the n samples are the n most probable *other* lists.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Sequence

import torch

from llmopt.sampling.base import Sample
from llmopt.sampling.config import DEFAULTS, PRIORITIES, Priority
from llmopt.sampling.decoding import greedy_continue
from llmopt.sampling.lm import PassListLM, TreeDecoder


class PrioritySampling:
    """Priority Sampling over pass lists; `sample(ir, n)` gives n unique lists, best first.

    max_branch: alternatives pushed per generated token (None: as many as could still be popped).
    priority:   "prefix" | "geometric" | "token" (module docstring).
    grammar:    mask tokens that would not keep the output a valid pass list (thesis "regex").
    reuse_cache: reuse the prompt's and the tree's KV caches (False recomputes; same samples).
    exclude:    pass lists never returned (module docstring), e.g. [["default<Oz>"]].
    rerank:     pool size P: order the first P samples by mean log-probability per pass (0: off).
    prefetch:   queued prefixes scored together before each pop (module docstring; <= 1: off).
    """

    name = "priority"

    def __init__(self, lm: PassListLM, *, max_branch: int | None = DEFAULTS.max_branch,
                 priority: Priority = DEFAULTS.priority, grammar: bool = DEFAULTS.grammar, reuse_cache: bool = True,
                 exclude: Sequence[Sequence[str]] = (), rerank: int = 0, prefetch: int = DEFAULTS.prefetch):
        if priority not in PRIORITIES:
            raise ValueError(f"unknown priority {priority!r}: use prefix, geometric or token")
        if rerank < 0:
            raise ValueError("the rerank pool must be >= 0 (0: off)")
        self.rerank = rerank
        self.prefetch = prefetch
        self.lm = lm
        self.max_branch = max_branch
        self.priority = priority
        self.grammar = grammar
        self.reuse_cache = reuse_cache
        self.exclude = {tuple(p) for p in exclude}
        self.last_decoder: TreeDecoder | None = None

    def _priority(self, logps: list[float]) -> float:
        if self.priority == "prefix":
            return sum(logps)
        if self.priority == "geometric":
            return sum(logps) / len(logps)
        return logps[-1]

    def sample(self, ir: str, n: int, *, prompt: str | None = None) -> list[Sample]:
        """The first `n` Priority Sampling samples for `ir` (or an explicit prompt text); with a rerank
        pool, the first `n` after the pool is reordered (module docstring)."""
        if not self.rerank:
            return self._walk(ir, n, prompt)
        drawn = self._walk(ir, max(n, self.rerank), prompt)
        pool = sorted(drawn[: self.rerank], key=per_pass_logprob, reverse=True)  # stable: ties keep tree order
        return (pool + drawn[self.rerank:])[:n]

    def _walk(self, ir: str, n: int, prompt: str | None) -> list[Sample]:
        """Algorithm 1: the first `n` unique lists of the best-first tree walk."""
        decoder = self.lm.decoder(ir, prompt=prompt, reuse_cache=self.reuse_cache)
        self.last_decoder = decoder
        queue: list[tuple[float, int, tuple[int, ...], tuple[float, ...]]] = []
        counter = itertools.count()  # ties pop in push order: deterministic
        samples: list[Sample] = []
        seen: set[tuple[str, ...]] = set(self.exclude)  # an excluded list is walked, never returned

        def push(tokens: list[int], row: torch.Tensor, chosen: int, lps: list[float]) -> None:
            # Nothing beyond the number of samples still wanted can ever be popped (thesis §6.2).
            k = n - len(samples) - 1 + len(self.exclude)  # an excluded list may still be popped on the way
            if self.max_branch is not None:
                k = min(k, self.max_branch)
            if k <= 0:
                return
            finite = int(torch.isfinite(row).sum())
            top = torch.topk(row, min(k + 1, finite))
            for lp, tok in zip(top.values.tolist(), top.indices.tolist(), strict=True):
                if tok == chosen:
                    continue
                path = lps + [lp]
                heapq.heappush(queue, (-self._priority(path), next(counter), tuple(tokens) + (tok,), tuple(path)))

        prefix: list[int] = []
        prefix_lps: list[float] = []
        score = 0.0  # the root: probability 1
        # Without the grammar many token sequences clean up to the same (or an empty) pass list; bound the
        # tree walks so an untrained model cannot spin for minutes looking for n distinct lists.
        walks_left = (n if self.grammar else 4 * n) + len(self.exclude)
        while len(samples) < n and walks_left > 0:
            walks_left -= 1
            tokens, lps = greedy_continue(decoder, prefix, prefix_lps, self.grammar)
            # Push the alternatives of the new nodes (those past the popped prefix), Algorithm 1 lines 10-15.
            for pos in range(len(prefix), len(tokens)):
                row = decoder.masked_logprobs(tokens[:pos], self.grammar)  # memoized: no model call
                push(tokens[:pos], row, tokens[pos], lps[:pos])
            passes = decoder.passes(tokens)
            key = tuple(passes)
            if key not in seen:  # only ungrammatical decoding can map two token sequences to one list
                seen.add(key)
                samples.append(Sample(passes, score, decoder.text(tokens), logprob=sum(lps)))
            if not queue:
                break
            if self.prefetch > 1 and len(samples) < n:
                ahead = heapq.nsmallest(min(self.prefetch, n - len(samples) + len(self.exclude)), queue)
                decoder.prefetch([entry[2] for entry in ahead if not decoder.finished(entry[2])])
            neg, _, popped, popped_lps = heapq.heappop(queue)
            prefix, prefix_lps, score = list(popped), list(popped_lps), -neg
        return samples


def per_pass_logprob(sample: Sample) -> float:
    """The list's log-probability over its number of passes (the rerank's key)."""
    return (sample.logprob or 0.0) / max(1, len(sample.passes))
