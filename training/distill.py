"""Knowledge distillation: a small model learns a teacher's next-token distributions over pass lists.

Why: the shipped default is an ensemble (a tiny and a base model decoding through the mixture of their
distributions, `llmopt.sampling.ensemble`): better Priority Sampling than either member, at 3x the tiny model's
CPU cost (issue 14's batch speed target).  A student of the tiny model's size that decodes like the ensemble
would have both.  The set loss (`training.set_loss`) teaches which lists win; the teacher adds how the mass
spreads over the other passes at every step of those lists, which is what orders Priority Sampling's samples.

At every scored pass-list position of the set loss's batch (each member list, teacher-forced; the position that
predicts `<passes>` itself is left out), the teacher gives log p_T(next | prompt, prefix) over the tokens the
pass-list grammar allows (`TreeDecoder.masked_logprobs`, what Priority Sampling walks), and the student pays

    KL(p_T || p_S),   p_S: the student's softmax over the same allowed tokens,

averaged over those positions and added to the set loss times `distill_weight` (`set_loss(..., teacher=)`).
The teacher runs on the trainer's CPU per batch (its prompts are encoded once per example, its KV caches shared
by the members' common prefixes), so there is nothing to precompute or store.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch


class Teacher:
    """A pass-list model (or ensemble) answering distillation targets for set-loss examples."""

    def __init__(self, lm: Any):
        self.lm = lm

    @classmethod
    def load(cls, path: str, student_tokenizer: Any) -> Teacher:
        """`PassListLM.load(path)` with the trainer's torch threads (load would otherwise set 1); raises
        ValueError unless the teacher's tokenizer is the student's (token ids must name the same passes)."""
        from llmopt.sampling.lm import PassListLM

        lm = PassListLM.load(path, threads=torch.get_num_threads())
        if lm.tokenizer.get_vocab() != student_tokenizer.get_vocab():
            raise ValueError(f"distill_from {path}: its tokenizer is not the student's (start the student from a "
                             "model with the teacher's tokenizer, e.g. init_from one of its members)")
        return cls(lm)

    def targets(self, examples: Sequence[dict[str, Any]]) -> tuple[torch.Tensor, torch.Tensor]:
        """(rows, log-probabilities): the indices into the batch's scored positions (`collate_sets`'s `at_pos`
        order: example, member, token) that get a target, and the teacher's masked log-probabilities there,
        shape (len(rows), vocab), -inf on tokens the grammar forbids."""
        rows: list[int] = []
        targets: list[torch.Tensor] = []
        at = 0
        open_id = self.lm.open_id
        for e in examples:
            decoder = self.lm.decoder_for_ids(list(e["input_ids"][: e["prompt_len"]]) + [open_id])
            for tokens, _ in e["members"]:
                if not tokens or tokens[0] != open_id:
                    raise ValueError("a set-loss member must start with <passes> (training.set_loss.encode_set_rows)")
                decoder.logprobs(tokens[1:-1])  # one forward over the list memoizes every prefix below
                for i in range(1, len(tokens)):  # token i follows the answer prefix tokens[1:i]
                    lp = decoder.masked_logprobs(tokens[1:i])
                    if torch.isfinite(lp).any():  # a prefix the grammar forbids has no distribution to teach
                        rows.append(at + i)
                        targets.append(lp)
                at += len(tokens)
            decoder.release_cache()
        stacked = torch.stack(targets) if targets else torch.empty(0, 0)  # one model's (or mixture's) vocab width
        return torch.tensor(rows, dtype=torch.long), stacked


def distill_loss(student_logits: torch.Tensor, teacher_lp: torch.Tensor) -> torch.Tensor:
    """Mean over rows of KL(p_T || p_S), p_S the softmax of `student_logits` restricted to the tokens where
    `teacher_lp` is finite (the grammar's allowed tokens), both over the first teacher_lp.shape[1] columns."""
    if teacher_lp.numel() == 0:
        return student_logits.sum() * 0.0
    allowed = torch.isfinite(teacher_lp)
    logits = student_logits[:, : teacher_lp.shape[1]].float().masked_fill(~allowed, float("-inf"))
    student_lp = torch.log_softmax(logits, dim=-1)
    p_t = teacher_lp.exp()
    terms = torch.where(allowed, p_t * (teacher_lp - student_lp), torch.zeros_like(p_t))
    return terms.sum(dim=-1).mean()
