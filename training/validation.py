"""Validation during training (thesis Fig. 4.4): greedy answers on held-out functions, measured by LLVM.

Per call it reports, over `rows` (dataset rows, docs/interfaces.md):
  improvement_over_oz   % fewer instructions than -Oz with the model's pass lists (raw model: a pass
                        list that fails to parse/compile counts as the unoptimized input)
  valid_pass_lists      % of answers whose pass list is well-formed and compiles
  autotuner_improvement % of the dataset's best lists (the ceiling), for reference
  instcount_input_mape / instcount_output_mape   % error of the predicted counts (output vs. the
                        count LLVM measures for the predicted passes)
  ir_parses / ir_exact_match / ir_bleu            generated IR vs. what LLVM produces for the
                        predicted passes (only when generating IR)
The measuring function is injected: anything shaped like `Harness.evaluate_tasks`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from llmopt.metrics import corpus_ir_bleu, improvement, mape, overall_improvement, parse_generated_ir, share
from llmopt.model import format as fmt
from llmopt.model.tokenizer import stop_token_ids

# (list of (ir, passes), want_ir) -> results with .ok, .instcount, .error, .ir
MeasureFn = Callable[[list[tuple[str, list[str]]], bool], Sequence[Any]]


def harness_measure(harness: Any = None) -> MeasureFn:
    """The default measuring function: `llmopt.harness.Harness().evaluate_tasks`."""
    if harness is None:
        from llmopt.harness import Harness

        harness = Harness()
    return lambda tasks, want_ir: harness.evaluate_tasks(tasks, want_ir=want_ir)


def _default_normalize(ir: str) -> str:
    from llmopt.llvm.ir import normalize_ir

    return normalize_ir(ir)


@torch.no_grad()
def generate_answers(model: Any, tokenizer: Any, irs: list[str], *, max_new_tokens: int, batch_size: int = 8,
                     stop_after: fmt.StopAfter = "ir") -> list[str]:
    """Greedy answer texts (special tokens kept) for each IR, batched with left padding."""
    was_training = model.training
    model.eval()
    stops = stop_token_ids(tokenizer, stop_after)
    out: list[str] = []
    tokenizer.padding_side = "left"
    device = next(model.parameters()).device
    for start in range(0, len(irs), batch_size):
        prompts = [fmt.build_prompt(ir) for ir in irs[start:start + batch_size]]
        enc = tokenizer(prompts, add_special_tokens=False, return_tensors="pt", padding=True).to(device)
        gen = model.generate(**enc, do_sample=False, max_new_tokens=max_new_tokens, eos_token_id=stops,
                             pad_token_id=tokenizer.pad_token_id)
        new = gen[:, enc["input_ids"].shape[1]:]
        out += tokenizer.batch_decode(new, skip_special_tokens=False)
    tokenizer.padding_side = "right"
    model.train(was_training)
    # Left/right padding tokens of finished rows are not part of the answer.
    return [text.replace(fmt.PAD, "") for text in out]


@dataclass
class ValidationCallback:
    """Call with (model, tokenizer) to get the metrics dict; `passes` is the model's pass vocabulary."""

    rows: list[dict[str, Any]]
    measure: MeasureFn
    passes: list[str]
    max_new_tokens: int = 768
    batch_size: int = 8
    generate_ir: bool = True
    normalize: Callable[[str], str] = _default_normalize

    def __call__(self, model: Any, tokenizer: Any) -> dict[str, float]:
        rows = self.rows
        texts = generate_answers(model, tokenizer, [r["ir"] for r in rows], max_new_tokens=self.max_new_tokens,
                                 batch_size=self.batch_size, stop_after="ir" if self.generate_ir else "counts")
        answers = [fmt.parse_answer(t, self.passes) for t in texts]
        results = self.measure([(r["ir"], a.passes) for r, a in zip(rows, answers, strict=True)], self.generate_ir)
        got, valid, in_pairs, out_pairs = 0, 0, [], []
        gen_irs, ref_irs = [], []
        for row, ans, res in zip(rows, answers, results, strict=True):
            usable = res.ok and ans.passes_valid
            valid += usable
            got += res.instcount if usable else row["instcount_input"]
            if ans.instcount_input is not None:
                in_pairs.append((ans.instcount_input, row["instcount_input"]))
            if ans.instcount_output is not None and res.ok:
                out_pairs.append((ans.instcount_output, res.instcount))
            if self.generate_ir and res.ok and res.ir is not None:
                gen_irs.append(ans.optimized_ir)
                ref_irs.append(self.normalize(res.ir))
        oz = [r["instcount_oz"] for r in rows]
        n = len(rows)
        metrics: dict[str, float] = {
            "improvement_over_oz": improvement(sum(oz), got),
            "autotuner_improvement": overall_improvement(oz, [r["instcount_best"] for r in rows]),
            "valid_pass_lists": share(valid, n),
            "counts_present": share(len(in_pairs), n),
        }
        for name, pairs in (("instcount_input_mape", in_pairs), ("instcount_output_mape", out_pairs)):
            value = mape(pairs)
            if value is not None:
                metrics[name] = value
        if self.generate_ir and gen_irs:
            parsed = parse_generated_ir(gen_irs, lambda tasks: self.measure(tasks, False))
            metrics["ir_parses"] = share(sum(ok for ok, _, _ in parsed), len(gen_irs))
            texts = [g or "" for g in gen_irs]
            metrics["ir_exact_match"] = share(sum(g.strip() == r.strip() for g, r in zip(texts, ref_irs, strict=True)),
                                              len(gen_irs))
            metrics["ir_bleu"] = corpus_ir_bleu(texts, ref_irs)
        return metrics
