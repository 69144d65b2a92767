"""Priority Sampling (thesis ch. 6, Algorithm 1), and greedy decoding as its first sample.

The first sample is greedy decoding.  At every generation step the best `max_branch` alternative
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
"""

from __future__ import annotations

import heapq
import itertools
from typing import Literal

import torch

from llmopt.model import format as fmt
from llmopt.sampling.base import Sample
from llmopt.sampling.lm import PassListLM, TreeDecoder

Priority = Literal["prefix", "geometric", "token"]


def greedy_continue(decoder: TreeDecoder, prefix: list[int], logps: list[float], grammar: bool = True
                    ) -> tuple[list[int], list[float]]:
    """Extend `prefix` (token ids after `<passes>`) greedily until the pass list ends.

    `logps` are the per-token log-probabilities of `prefix`; returns (tokens, per-token logps).
    """
    tokens, lps = list(prefix), list(logps)
    while not decoder.finished(tokens):
        row = decoder.masked_logprobs(tokens, grammar)
        chosen = int(torch.argmax(row))
        tokens.append(chosen)
        lps.append(float(row[chosen]))
    return tokens, lps


class PrioritySampling:
    """Priority Sampling over pass lists; `sample(ir, n)` gives n unique lists, best first.

    max_branch: alternatives pushed per generated token (None: as many as could still be popped).
    priority:   "prefix" | "geometric" | "token" (module docstring).
    grammar:    mask tokens that would not keep the output a valid pass list (thesis "regex").
    reuse_cache: reuse the prompt's and the tree's KV caches (False recomputes; same samples).
    """

    name = "priority"

    def __init__(self, lm: PassListLM, *, max_branch: int | None = None, priority: Priority = "prefix",
                 grammar: bool = True, reuse_cache: bool = True):
        if priority not in ("prefix", "geometric", "token"):
            raise ValueError(f"unknown priority {priority!r}: use prefix, geometric or token")
        self.lm = lm
        self.max_branch = max_branch
        self.priority = priority
        self.grammar = grammar
        self.reuse_cache = reuse_cache
        self.last_decoder: TreeDecoder | None = None

    def _priority(self, logps: list[float]) -> float:
        if self.priority == "prefix":
            return sum(logps)
        if self.priority == "geometric":
            return sum(logps) / len(logps)
        return logps[-1]

    def sample(self, ir: str, n: int, *, prompt: str | None = None) -> list[Sample]:
        """The first `n` Priority Sampling samples for `ir` (or an explicit prompt text)."""
        decoder = self.lm.decoder(ir, prompt=prompt, reuse_cache=self.reuse_cache)
        self.last_decoder = decoder
        queue: list[tuple[float, int, tuple[int, ...], tuple[float, ...]]] = []
        counter = itertools.count()  # ties pop in push order: deterministic
        samples: list[Sample] = []
        seen: set[tuple[str, ...]] = set()

        def push(tokens: list[int], row: torch.Tensor, chosen: int, lps: list[float]) -> None:
            # Nothing beyond the number of samples still wanted can ever be popped (thesis §6.2).
            k = n - len(samples) - 1
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
        walks_left = n if self.grammar else 4 * n
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
            neg, _, popped, popped_lps = heapq.heappop(queue)
            prefix, prefix_lps, score = list(popped), list(popped_lps), -neg
        return samples


class GreedyDecoding:
    """Greedy decoding (temperature 0) under the grammar: one sample, the first of Priority Sampling."""

    name = "greedy"

    def __init__(self, lm: PassListLM, *, grammar: bool = True):
        self.lm = lm
        self.grammar = grammar

    def sample(self, ir: str, n: int = 1, *, prompt: str | None = None) -> list[Sample]:
        """[the greedy sample] (greedy never repeats, so n > 1 still gives one sample)."""
        if n < 1:
            return []
        decoder = self.lm.decoder(ir, prompt=prompt)
        tokens, lps = greedy_continue(decoder, [], [], self.grammar)
        return [Sample(decoder.passes(tokens), sum(lps), decoder.text(tokens), logprob=sum(lps))]


class NucleusSampling:
    """Temperature + top-p (nucleus) sampling under the grammar; seeded, duplicates kept.

    The sequence of samples is a function of (seed, ir): the same command gives the same lists.
    Temperature 0 is greedy decoding.
    """

    name = "nucleus"

    def __init__(self, lm: PassListLM, *, temperature: float = 1.2, top_p: float = 0.95, seed: int = 0,
                 grammar: bool = True):
        self.lm = lm
        self.temperature = temperature
        self.top_p = top_p
        self.seed = seed
        self.grammar = grammar

    def sample(self, ir: str, n: int, *, prompt: str | None = None) -> list[Sample]:
        """`n` samples (duplicates possible; predict compiles each distinct list once)."""
        import hashlib

        decoder = self.lm.decoder(ir, prompt=prompt)
        digest = hashlib.sha256((prompt or fmt.build_prompt(ir)).encode()).digest()
        gen = torch.Generator().manual_seed(self.seed * 1_000_003 + int.from_bytes(digest[:4], "little"))
        samples = []
        for _ in range(n):
            tokens: list[int] = []
            lps: list[float] = []
            while not decoder.finished(tokens):
                row = decoder.masked_logprobs(tokens, self.grammar)
                tok = self._draw(row, gen)
                tokens.append(tok)
                lps.append(float(row[tok]))
            samples.append(Sample(decoder.passes(tokens), sum(lps), decoder.text(tokens), logprob=sum(lps)))
        return samples

    def _draw(self, logprobs: torch.Tensor, gen: torch.Generator) -> int:
        """One token from the temperature-scaled, top-p-truncated distribution. logprobs: (vocab,)."""
        if self.temperature <= 0:
            return int(torch.argmax(logprobs))
        probs = torch.softmax(logprobs / self.temperature, dim=-1)
        sorted_p, order = torch.sort(probs, descending=True)
        keep = torch.cumsum(sorted_p, 0) - sorted_p < self.top_p  # smallest set reaching top_p
        sorted_p = torch.where(keep, sorted_p, torch.zeros_like(sorted_p))
        choice = torch.multinomial(sorted_p / sorted_p.sum(), 1, generator=gen)
        return int(order[choice])
