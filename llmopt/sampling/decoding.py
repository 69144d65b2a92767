"""Token-by-token decoding over the pass-list tree: the rules (grammar mask, greedy pick, nucleus draw) and the
greedy and nucleus strategies built from them; `continue_answer` lets the model write the rest of an answer.

The grammar mask is `TreeDecoder.masked_logprobs` (any strategy can ask for it); `greedy_continue` is
the one grammar-aware greedy continuation (greedy decoding, every Priority Sampling walk, feedback
answers); `draw_nucleus` is temperature + top-p.
"""

from __future__ import annotations

import torch

from llmopt.model import format as fmt
from llmopt.sampling.base import Sample
from llmopt.sampling.config import DEFAULTS
from llmopt.sampling.lm import PassListLM, TreeDecoder


def greedy_continue(decoder: TreeDecoder, prefix: list[int], logps: list[float], grammar: bool = DEFAULTS.grammar
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


def continue_answer(lm: PassListLM, ids: list[int], stop_after: fmt.StopAfter, max_new_tokens: int) -> str:
    """Free greedy continuation of token `ids` (prompt + answer so far) to the end of the `stop_after` section.

    After the grammar-constrained pass list the model writes the counts and the optimized IR on its
    own (feedback answers, eval's code quality); returns the decoded new text ("" when there is no room).
    """
    from llmopt.model.tokenizer import stop_token_ids

    room = lm.context_length - len(ids)
    if room <= 0:
        return ""
    with torch.no_grad():
        out = lm.model.generate(torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                                do_sample=False, max_new_tokens=min(max_new_tokens, room),
                                eos_token_id=stop_token_ids(lm.tokenizer, stop_after),
                                pad_token_id=lm.tokenizer.pad_token_id)
    return lm.tokenizer.decode(out[0, len(ids):].tolist(), skip_special_tokens=False)


def draw_nucleus(logprobs: torch.Tensor, temperature: float, top_p: float, gen: torch.Generator) -> int:
    """One token from the temperature-scaled, top-p-truncated distribution (temperature 0: argmax). logprobs: (vocab,)."""
    if temperature <= 0:
        return int(torch.argmax(logprobs))
    probs = torch.softmax(logprobs / temperature, dim=-1)
    sorted_p, order = torch.sort(probs, descending=True)
    keep = torch.cumsum(sorted_p, 0) - sorted_p < top_p  # smallest set reaching top_p
    sorted_p = torch.where(keep, sorted_p, torch.zeros_like(sorted_p))
    choice = torch.multinomial(sorted_p / sorted_p.sum(), 1, generator=gen)
    return int(order[choice])


class GreedyDecoding:
    """Greedy decoding (temperature 0) under the grammar: one sample, the first of Priority Sampling."""

    name = "greedy"

    def __init__(self, lm: PassListLM, *, grammar: bool = DEFAULTS.grammar):
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

    def __init__(self, lm: PassListLM, *, temperature: float = DEFAULTS.temperature, top_p: float = DEFAULTS.top_p,
                 seed: int = DEFAULTS.seed, grammar: bool = DEFAULTS.grammar):
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
                tok = draw_nucleus(row, self.temperature, self.top_p, gen)
                tokens.append(tok)
                lps.append(float(row[tok]))
            samples.append(Sample(decoder.passes(tokens), sum(lps), decoder.text(tokens), logprob=sum(lps)))
        return samples
