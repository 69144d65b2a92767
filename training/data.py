"""Dataset rows (`llmopt.dataset.read_rows`) -> token ids with answer-only labels -> padded batches.

Batches are a pure function of (seed, step): resuming at step k sees exactly the batches an
uninterrupted run would have seen, with no sampler state to checkpoint.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from llmopt.model import format as fmt


def encode_rows(rows: list[dict[str, Any]], tokenizer: Any, max_length: int, *, with_ir: bool = True,
                targets: list[list[list[str]]] | None = None) -> tuple[list[dict[str, Any]], int]:
    """(examples, number skipped because prompt + answer exceed `max_length`).

    `targets` (training/targets.py) gives each row the pass lists to teach; a row with several keeps
    them as `variants` [(input_ids, labels), ...], one of which `pick_variant` takes per epoch.
    """
    targets = targets or [[list(r["passes"])] for r in rows]
    answers_of = [[fmt.build_example({**r, "passes": t}, with_ir=with_ir)[1] for t in ts]
                  for r, ts in zip(rows, targets, strict=True)]
    if not rows:
        return [], 0
    # One batched call each: the Rust tokenizer parallelises it.
    prompts = tokenizer([fmt.build_prompt(r["ir"], fmt.history_from_row(r)) for r in rows],
                        add_special_tokens=False)["input_ids"]
    flat = tokenizer([a for answers in answers_of for a in answers], add_special_tokens=False)["input_ids"]
    examples, skipped, at = [], 0, 0
    for p, answers in zip(prompts, answers_of, strict=True):
        variants = [(p + a, [-100] * len(p) + a) for a in flat[at: at + len(answers)]
                    if len(p) + len(a) <= max_length]
        at += len(answers)
        if not variants:
            skipped += 1
            continue
        example: dict[str, Any] = {"input_ids": variants[0][0], "labels": variants[0][1]}
        if len(variants) > 1:
            example["variants"] = variants
        examples.append(example)
    return examples, skipped


def pick_variant(example: dict[str, Any], seed: int, epoch: int, index: int) -> dict[str, list[int]]:
    """The (input_ids, labels) an epoch teaches for `example` (itself when it has one target)."""
    from training.targets import variant_for

    variants = example.get("variants")
    if not variants:
        return example
    ids, labels = variants[variant_for(len(variants), seed, epoch, index)]
    return {"input_ids": ids, "labels": labels}


def collate(examples: list[dict[str, list[int]]], pad_id: int) -> dict[str, torch.Tensor]:
    """Right-padded tensors; padding is masked from attention and loss."""
    width = max(len(e["input_ids"]) for e in examples)
    ids = torch.full((len(examples), width), pad_id, dtype=torch.long)
    labels = torch.full((len(examples), width), -100, dtype=torch.long)
    mask = torch.zeros((len(examples), width), dtype=torch.long)
    for i, e in enumerate(examples):
        n = len(e["input_ids"])
        ids[i, :n] = torch.tensor(e["input_ids"])
        labels[i, :n] = torch.tensor(e["labels"])
        mask[i, :n] = 1
    return {"input_ids": ids, "labels": labels, "attention_mask": mask}


class BatchSchedule:
    """Micro-batches of example indices per epoch: shuffled, then grouped by length to cut padding.

    Within a chunk of 32 micro-batches, examples are sorted by length and cut into batches whose
    order is then shuffled, so batches are homogeneous in length but not in content.
    """

    def __init__(self, lengths: list[int], batch_size: int, seed: int, group: int = 32):
        if not lengths:
            raise ValueError("no training examples (is the dataset empty, or every example longer than the context?)")
        self.lengths = np.asarray(lengths)
        self.batch_size = min(batch_size, len(lengths))
        self.seed = seed
        self.group = group
        self._epochs: dict[int, list[np.ndarray]] = {}
        self.per_epoch = len(lengths) // self.batch_size

    def _epoch(self, epoch: int) -> list[np.ndarray]:
        if epoch not in self._epochs:
            rng = np.random.default_rng([self.seed, epoch])
            order = rng.permutation(len(self.lengths))[: self.per_epoch * self.batch_size]
            batches = []
            chunk = self.batch_size * self.group
            for start in range(0, len(order), chunk):
                part = order[start:start + chunk]
                part = part[np.argsort(self.lengths[part], kind="stable")]
                batches += [part[i:i + self.batch_size] for i in range(0, len(part), self.batch_size)]
            self._epochs = {epoch: [batches[i] for i in rng.permutation(len(batches))]}
        return self._epochs[epoch]

    def epoch_of(self, index: int) -> int:
        return index // self.per_epoch

    def batch(self, index: int) -> np.ndarray:
        """Example indices of global micro-batch `index`."""
        epoch, offset = divmod(index, self.per_epoch)
        return self._epoch(epoch)[offset]
