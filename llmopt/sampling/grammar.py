"""The pass-list grammar as a logits processor any strategy can use (thesis ch. 6 "regular expression").

Inside `<passes>...</passes>` the only legal tokens are the vocabulary's pass tokens (each pass is
one token, `llmopt.model.tokenizer.pass_token_ids`), at most one meta-pass (`default<O?>`), and the
end token `</passes>`; a list holds at least `min_passes` and at most `max_passes` passes.  The
state is a function of the pass tokens generated so far, so checking it is O(1) per step with four
precomputed masks (a finite-state machine, as in Willard & Louf's regex-guided generation).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from llmopt.model import format as fmt
from llmopt.model.tokenizer import pass_token_ids, special_token_id
from llmopt.sampling.config import DEFAULTS

META_PREFIX = "default<"


class PassListGrammar:
    """Masks logits so that generation inside `<passes>` stays a valid pass list.

    Two ways to call it:
      * `mask(pass_tokens) -> BoolTensor[vocab]`: legal next tokens given the token ids generated
        after `<passes>` (what the strategies in this package use);
      * `grammar(input_ids, scores) -> scores`: the HF `LogitsProcessor` signature, with
        input_ids (batch, seq) and scores (batch, vocab); rows outside a pass list are untouched.
    """

    def __init__(self, tokenizer: Any, passes: Sequence[str], vocab_size: int | None = None,
                 max_passes: int = DEFAULTS.max_passes, min_passes: int = 1):
        self.pass_ids = pass_token_ids(tokenizer, list(passes))
        self.name_of = {i: name for name, i in self.pass_ids.items()}
        self.open_id = special_token_id(tokenizer, fmt.PASSES_OPEN)
        self.close_id = special_token_id(tokenizer, fmt.PASSES_CLOSE)
        self.meta_ids = {i for name, i in self.pass_ids.items() if name.startswith(META_PREFIX)}
        self.max_passes = max_passes
        self.min_passes = min_passes
        self.vocab_size = vocab_size or len(tokenizer)
        size = self.vocab_size
        all_passes = torch.zeros(size, dtype=torch.bool)
        all_passes[list(self.pass_ids.values())] = True
        no_meta = all_passes.clone()
        no_meta[list(self.meta_ids)] = False
        close = torch.zeros(size, dtype=torch.bool)
        close[self.close_id] = True
        # (meta used?, may close?) -> mask; plus "must close" when the list is full.
        self._masks = {(False, False): all_passes, (True, False): no_meta,
                       (False, True): all_passes | close, (True, True): no_meta | close}
        self._close = close

    def mask(self, pass_tokens: Sequence[int]) -> torch.Tensor:
        """Legal next tokens (BoolTensor of shape (vocab,)) after `pass_tokens` (ids after `<passes>`)."""
        n = len(pass_tokens)
        if n >= self.max_passes:
            return self._close
        meta = any(t in self.meta_ids for t in pass_tokens)
        return self._masks[(meta, n >= self.min_passes)]

    def is_valid(self, pass_tokens: Sequence[int]) -> bool:
        """True when `pass_tokens` is a complete, legal pass list ending with `</passes>`."""
        if not pass_tokens or pass_tokens[-1] != self.close_id:
            return False
        body = pass_tokens[:-1]
        return (all(t in self.name_of for t in body) and self.min_passes <= len(body) <= self.max_passes
                and sum(t in self.meta_ids for t in body) <= 1)

    def passes_of(self, pass_tokens: Sequence[int]) -> list[str]:
        """Pass names of the pass tokens in `pass_tokens` (others, e.g. `</passes>`, are skipped)."""
        return [self.name_of[t] for t in pass_tokens if t in self.name_of]

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        """HF LogitsProcessor: input_ids (batch, seq), scores (batch, vocab) -> masked scores."""
        scores = scores.clone()
        for row in range(input_ids.shape[0]):
            ids = input_ids[row].tolist()
            if self.open_id not in ids:
                continue
            start = len(ids) - 1 - ids[::-1].index(self.open_id)
            tail = ids[start + 1:]
            if self.close_id in tail:
                continue  # the pass list is finished: the grammar says nothing about what follows
            legal = self.mask(tail).to(scores.device)
            width = min(scores.shape[1], legal.shape[0])
            scores[row, :width] = scores[row, :width].masked_fill(~legal[:width], float("-inf"))
            scores[row, width:] = float("-inf")
        return scores


class ListSetGrammar(PassListGrammar):
    """The pass-list grammar narrowed to a fixed set of lists: the legal next tokens are a trie's children.

    Priority Sampling under it returns the set's lists in the model's order for *this* function, best
    first and exactly (a best-first walk of the trie by prefix probability); with a set of lists known
    to win somewhere (the training labels, the autotuner's broadcast lists) every sample is one of
    them, and the model's job is only the ranking.  Lists with a pass the model does not know are
    dropped (`dropped` counts them).
    """

    def __init__(self, tokenizer: Any, passes: Sequence[str], lists: Sequence[Sequence[str]],
                 vocab_size: int | None = None, max_passes: int = DEFAULTS.max_passes, min_passes: int = 1):
        super().__init__(tokenizer, passes, vocab_size, max_passes, min_passes)
        children: dict[tuple[int, ...], set[int]] = {}
        self.lists: list[list[str]] = []
        self.dropped = 0
        seen: set[tuple[str, ...]] = set()
        for passes_ in lists:
            ids = [self.pass_ids.get(p, -1) for p in passes_] + [self.close_id]
            if not self.is_valid(ids):  # an unknown pass, two meta-passes, too long or empty
                self.dropped += 1
                continue
            if tuple(passes_) in seen:
                continue
            seen.add(tuple(passes_))
            self.lists.append(list(passes_))
            for i, tok in enumerate(ids):
                children.setdefault(tuple(ids[:i]), set()).add(tok)
        if not self.lists:
            raise ValueError("ListSetGrammar: none of the lists is a valid pass list of this model")
        self._trie: dict[tuple[int, ...], torch.Tensor] = {}
        for prefix, toks in children.items():
            legal = torch.zeros(self.vocab_size, dtype=torch.bool)
            legal[sorted(toks)] = True
            self._trie[prefix] = legal

    def mask(self, pass_tokens: Sequence[int]) -> torch.Tensor:
        """Legal next tokens after `pass_tokens`: the trie's children (the full grammar off the trie)."""
        legal = self._trie.get(tuple(pass_tokens))
        return legal if legal is not None else super().mask(pass_tokens)
