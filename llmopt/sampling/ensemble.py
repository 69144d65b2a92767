"""Several pass-list models decoding as one: the mixture of their next-token distributions.

Why: models of different sizes are good at different budgets (issue 14: the tiny shipped model's first samples
are its best, a `base` model's reach at 30 samples is the best of any model).  Averaging probabilities is the
plain ensemble of language models: a token either member is confident in stays near the top, and Priority
Sampling's tree walk, greedy decoding and nucleus sampling all run unchanged over the mixture, because they only
ask a decoder for "log p(next token | prompt, prefix)".

    lm = PassListLM.load("modelA,modelB")   # or EnsembleLM([PassListLM.load(a), PassListLM.load(b)])

The members must share the tokenizer and the pass vocabulary (the same `llmopt.json` passes), so a token id
means the same pass in every member; each member keeps its own KV caches.  What needs one model (the free
continuation after the pass list: feedback answers, eval's code quality) uses the first member.

A gate makes the ensemble a cascade (`gate=0.3`, or `"gate": 0.3` in an ensemble directory's `llmopt.json`): the
first member alone answers a prompt when its greedy pass list has probability >= gate, the mixture only when it
is unsure.  Why: the mixture costs every member's forward passes, and where the first (cheapest) member is
confident the mixture rarely finds more (issue 14, `docs/results/cascade-validation/`: with the tiny model first
and gate 0.3 the base member runs on a third of the functions and the cascade saves more than the mixture at 1
and 3 samples).  The gate's greedy decode is memoized in the first member's decoder, which the mixture then
reuses, so a confident prompt costs exactly what the first member alone costs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from llmopt.sampling.decoding import greedy_continue
from llmopt.sampling.lm import PassListLM, TreeDecoder


class EnsembleLM(PassListLM):
    """The members' mixture with weights `weights` (default: equal); a drop-in `PassListLM`.

    `gate` (None: off), a probability in (0, 1): the first member alone decodes a prompt on which its greedy pass
    list (grammar-masked, as greedy decoding scores it) has at least this probability (module docstring).  A
    member that is itself an ensemble gives its members to the mixture; its own gate does not carry over.
    """

    def __init__(self, members: Sequence[PassListLM], weights: Sequence[float] | None = None,
                 gate: float | None = None):
        members, weights = _flatten(members, weights)  # e.g. "--model llmopt/model/default,mine"
        if len(members) < 2:
            raise ValueError("an ensemble needs at least two models")
        if gate is not None and not 0 < gate < 1:
            raise ValueError(f"the gate is a probability strictly between 0 and 1, not {gate}")
        self.gate = gate
        first = members[0]
        for other in members[1:]:
            if other.passes != first.passes or other.tokenizer.get_vocab() != first.tokenizer.get_vocab():
                raise ValueError(f"{other.path} and {first.path} do not share the tokenizer and the pass vocabulary: "
                                 "their token ids cannot be averaged")
        self.members = members
        self.log_weights = torch.tensor([math.log(w / sum(weights)) for w in weights])
        # Everything but decoding is the first member's (shared tokenizer and grammar, see the module docstring).
        self.model, self.prefill_model, self.tokenizer = first.model, first.prefill_model, first.tokenizer
        self.grammar, self.passes, self.max_passes = first.grammar, first.passes, first.max_passes
        self.open_id, self.stop_ids = first.open_id, first.stop_ids
        self.context_length = min(m.context_length for m in members)  # a prompt must fit every member
        self.path = ",".join(str(m.path) for m in members)

    @classmethod
    def load_members(cls, paths: Sequence[str], weights: Sequence[float] | None = None, gate: float | None = None,
                     **options) -> EnsembleLM:
        """Load each directory with `PassListLM.load(path, **options)`; `weights`, `gate` as in the constructor."""
        return cls([PassListLM.load(p, **options) for p in paths], weights, gate)

    def decoder_for_ids(self, ids: list[int], *, reuse_cache: bool = True) -> TreeDecoder:
        """The mixture's `EnsembleDecoder`, or with a gate the first member's decoder alone when it is confident.

        `decoder` (inherited) checks the prompt against `context_length`, the shortest member's.  The first
        member's part is a `TreeDecoder` over this ensemble, which runs the first member's model (`self.model`)
        under the ensemble's grammar (narrowed by `restricted_to`, if it was)."""
        first = TreeDecoder(self, ids, reuse_cache=reuse_cache)
        if self.gate is not None and self._first_is_confident(first, self.gate):
            return first
        rest = [TreeDecoder(m, ids, reuse_cache=reuse_cache) for m in self.members[1:]]
        return EnsembleDecoder(self, [first, *rest])

    @staticmethod
    def _first_is_confident(first: TreeDecoder, gate: float) -> bool:
        """True when the first member's greedy list has probability >= `gate` (its rows stay memoized)."""
        _, logps = greedy_continue(first, [], [], grammar=True)
        return sum(logps) >= math.log(gate)


def _flatten(members: Sequence[PassListLM], weights: Sequence[float] | None
             ) -> tuple[list[PassListLM], list[float]]:
    """Single models and their weights: a member that is itself an ensemble gives its members, each with its share
    of that member's weight (a mixture of mixtures is one mixture)."""
    weights = list(weights) if weights is not None else [1.0] * len(members)
    if len(weights) != len(members) or min(weights, default=1.0) <= 0:
        raise ValueError("give one positive weight per member")
    flat: list[tuple[PassListLM, float]] = []
    for member, weight in zip(members, weights, strict=True):
        if isinstance(member, EnsembleLM):
            flat += [(m, weight * float(share)) for m, share in zip(member.members, member.log_weights.exp(),
                                                                    strict=True)]
        else:
            flat.append((member, weight))
    return [m for m, _ in flat], [w for _, w in flat]


class EnsembleDecoder(TreeDecoder):
    """A `TreeDecoder` whose next-token log-probabilities are log sum_i w_i p_i (one member decoder each)."""

    def __init__(self, lm: EnsembleLM, parts: Sequence[TreeDecoder]):  # no super().__init__: it would encode a prompt
        self.lm = lm
        self.parts = list(parts)
        self.prompt_ids = self.parts[0].prompt_ids
        self.reuse_cache = self.parts[0].reuse_cache
        self.memo: dict[tuple[int, ...], torch.Tensor] = {}

    @property
    def tokens_run(self) -> int:
        """Tokens processed by all members together (the decode's cost)."""
        return sum(p.tokens_run for p in self.parts)

    def logprobs(self, tokens: Sequence[int]) -> torch.Tensor:
        key = tuple(tokens)
        hit = self.memo.get(key)
        if hit is None:
            rows = [p.logprobs(key) for p in self.parts]
            width = min(r.shape[0] for r in rows)  # output embeddings may be padded differently
            stacked = torch.stack([r[:width] for r in rows]) + self.lm.log_weights[:, None]
            hit = self.memo[key] = torch.logsumexp(stacked, dim=0)
        return hit

    def prefetch(self, prefixes: Sequence[Sequence[int]]) -> None:
        for part in self.parts:
            part.prefetch(prefixes)

    def release_cache(self) -> None:
        for part in self.parts:
            part.release_cache()
        self.reuse_cache = False
