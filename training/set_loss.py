"""Set-valued targets: teach every good pass list of a function at once, weighted by what it saves.

A function usually has many lists that beat -Oz (data_pipeline/list_matrix.py measures the common
ones).  Teaching one of them (`frequent`, `beyond_oz`) makes the model learn the label distribution;
teaching a random one per epoch (`random`) spreads its mass over lists in proportion to how many of a
function's lists they are.  Neither asks for what Priority Sampling needs: that *some* of the model's
likeliest lists save a lot.  The set loss asks for that directly:

    loss(f) = -log sum_l w(f, l) p(l | f),   w = (count_Oz - count_l) / (count_Oz - count_best)

the log of the expected share of the best saving that one sample from the model reaches.  Its
optimum, even for a model that ignores the input, is a soft set cover: mass goes to lists that save
on many functions, not to the lists that happen to be labelled most often.

`set_weighting="saving"` weighs each function's term by S(f) = count_Oz - count_best (at least 1),
scaled so the mean weight over the training rows is 1: the evaluation sums instructions over
functions, so a function where the best list saves 20 instructions counts 20 times one that saves 1
(the default, "function", weighs every function alike and lets the many 1-instruction wins decide);
"sqrt_saving" (sqrt S, mean 1) sits in between.

`coverage=k` (> 1) asks for k samples instead of one: with q(f) = sum_l w(f, l) p(l | f), the term
becomes

    -log(1 - (1 - q)^k)

the log of the chance that k independent samples reach the share q at least once.  It saturates: a
function whose good lists already hold q ~ 1/k of the mass stops pulling, so mass that the network
cannot tell apart by input goes on to functions not yet covered (what `coreset_cover` does with its k
lists by greedy set cover, here per input and learned).  k = 1 is the loss above.

One forward pass per batch: each function's sequence is its prompt, its main answer (pass list,
counts, EOS, as the other policies teach it), then every other member's pass list; a 4-D attention
mask lets each member see the prompt and itself only, and its positions restart where the main
answer's do.  The pass-list tokens of each member are scored under the set loss; the main answer's
counts and EOS keep the ordinary cross-entropy.  With a single member of weight 1 the loss is exactly
`train.answer_loss`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch

from llmopt.llvm.passes import OZ
from llmopt.model import format as fmt

Member = tuple[list[str], float]  # (pass list, weight in (0, 1])
SET_WEIGHTINGS = ("function", "saving", "sqrt_saving")


def matrix_best(row: dict[str, Any], matrix: dict[str, Any] | None) -> int:
    """The row's best count: its label's, or a matrix list's where one does better (a list the job's
    autotuning never tried on this function, `data_pipeline.list_matrix --frequent`)."""
    hits = ((matrix or {}).get("rows", {}).get(row.get("ir_hash")) or {}).get("hits", [])
    return min([int(row["instcount_best"]), *(int(c) for _, c in hits)])


def function_weights(rows: Sequence[dict[str, Any]], weighting: str,
                     best: Sequence[int] | None = None) -> list[float]:
    """Each row's weight in the set loss (module docstring): 1, or its best saving over -Oz normalized
    to mean 1 over `rows` (`best`: the rows' best counts, default their `instcount_best`)."""
    if weighting not in SET_WEIGHTINGS:
        raise ValueError(f"unknown set weighting {weighting!r}: use {' or '.join(SET_WEIGHTINGS)}")
    if weighting == "function" or not rows:
        return [1.0] * len(rows)
    best = [int(r["instcount_best"]) for r in rows] if best is None else best
    savings = [max(1, int(r["instcount_oz"]) - int(b)) for r, b in zip(rows, best, strict=True)]
    if weighting == "sqrt_saving":
        savings = [math.sqrt(s) for s in savings]
    mean = sum(savings) / len(savings)
    return [s / mean for s in savings]


def target_sets(rows: Sequence[dict[str, Any]], mains: Sequence[list[str]], matrix: dict[str, Any] | None,
                max_members: int) -> list[list[Member]]:
    """Per row, the lists to teach: its main label first (weight 1), then the other lists that beat
    -Oz on it (its stored ties and the matrix's hits), best first, at most `max_members` in all.

    A list is left out when it is a longer copy of a member it does not beat (the best list with a
    no-op pass appended): Priority Sampling would spend samples on equivalent lists.
    """
    lists = [tuple(ls) for ls in (matrix or {}).get("lists", [])]
    rank = {ls: i for i, ls in enumerate(lists)}  # the matrix's order: most often best first
    hits_of = (matrix or {}).get("rows", {})
    out = []
    for row, main in zip(rows, mains, strict=True):
        oz, best = int(row["instcount_oz"]), int(row["instcount_best"])
        counts: dict[tuple[str, ...], int] = {}
        for g in row.get("good_lists") or []:
            if g.get("instcount") is None:  # an objsize dataset: no instruction counts to weigh by
                continue
            counts[tuple(g["passes"])] = min(counts.get(tuple(g["passes"]), oz), int(g["instcount"]))
        for j, c in (hits_of.get(row.get("ir_hash"), {}) or {}).get("hits", []):
            counts[lists[j]] = min(counts.get(lists[j], oz), int(c))
        counts.pop((OZ,), None)
        best = min([best, *counts.values()])
        members: list[Member] = [(list(main), 1.0)]
        if best < oz:
            ordered = sorted((ls for ls, c in counts.items() if c < oz and list(ls) != list(main)),
                             key=lambda ls: (counts[ls], len(ls), rank.get(ls, len(rank)), ls))
            kept: dict[tuple[str, ...], int] = {tuple(main): counts.get(tuple(main), best)}
            for ls in ordered:
                if len(kept) >= max_members:
                    break
                if any(ls[:n] in kept and kept[ls[:n]] <= counts[ls] for n in range(1, len(ls))):
                    continue
                kept[ls] = counts[ls]
                members.append((list(ls), (oz - counts[ls]) / (oz - best)))
            main_count = kept[tuple(main)]
            members[0] = (list(main), max((oz - main_count) / (oz - best), 1e-3))
        out.append(members)
    return out


def encode_set_rows(rows: Sequence[dict[str, Any]], sets: Sequence[list[Member]], tokenizer: Any,
                    max_length: int, weights: Sequence[float] | None = None) -> tuple[list[dict[str, Any]], int]:
    """(examples, skipped): like `data.encode_rows`, plus `members` [(pass-list token ids, log weight)],
    the main answer's first, and the row's `weight` (`function_weights`, default 1); members that would
    overflow `max_length` are dropped (the main never is: a row whose prompt and main answer do not fit
    is skipped)."""
    if not rows:
        return [], 0
    prompts = tokenizer([fmt.build_prompt(r["ir"], fmt.history_from_row(r)) for r in rows],
                        add_special_tokens=False)["input_ids"]
    mains = tokenizer([fmt.build_example({**r, "passes": s[0][0]}, with_ir=False)[1] for r, s in zip(rows, sets,
                                                                                                       strict=True)],
                      add_special_tokens=False)["input_ids"]
    alts_text = [fmt.build_answer(fmt.Answer(passes=ls), with_counts=False, with_ir=False, eos=False)
                 for s in sets for ls, _ in s[1:]]
    alts = tokenizer(alts_text, add_special_tokens=False)["input_ids"] if alts_text else []
    close = tokenizer.convert_tokens_to_ids(fmt.PASSES_CLOSE)
    examples, skipped, at = [], 0, 0
    weights = [1.0] * len(rows) if weights is None else weights
    for p, a, members, weight in zip(prompts, mains, sets, weights, strict=True):
        own = alts[at: at + len(members) - 1]
        at += len(members) - 1
        if len(p) + len(a) > max_length:
            skipped += 1
            continue
        n_pass = a.index(close) + 1  # the main answer's pass-list tokens, through </passes>
        chosen = [(a[:n_pass], math.log(members[0][1]))]
        length = len(p) + len(a)
        for ids, (_, w) in zip(own, members[1:], strict=True):
            if length + len(ids) > max_length:
                break
            chosen.append((ids, math.log(w)))
            length += len(ids)
        examples.append({"input_ids": p + a, "labels": [-100] * len(p) + a, "prompt_len": len(p),
                         "members": chosen, "length": length, "weight": float(weight)})
    return examples, skipped


def collate_sets(examples: Sequence[dict[str, Any]], pad_id: int) -> dict[str, torch.Tensor]:
    """Padded tensors for `set_loss`: ids, positions, the 4-D boolean mask (True: may attend), and
    flat (sequence position, target token, member) triples for every scored token."""
    width = max(e["length"] for e in examples)
    n = len(examples)
    ids = torch.full((n, width), pad_id, dtype=torch.long)
    pos = torch.zeros((n, width), dtype=torch.long)
    mask = torch.zeros((n, 1, width, width), dtype=torch.bool)
    at_pos, at_tok, at_member, ce_pos, ce_tok = [], [], [], [], []
    member_fn, member_logw, answer_tokens = [], [], 0
    fn_weight = [float(e.get("weight", 1.0)) for e in examples]
    for b, e in enumerate(examples):
        p, full = e["prompt_len"], e["input_ids"]
        ids[b, : len(full)] = torch.tensor(full)
        pos[b, : len(full)] = torch.arange(len(full))
        mask[b, 0, : len(full), : len(full)] = torch.tril(torch.ones(len(full), len(full), dtype=torch.bool))
        answer_tokens += len(full) - p
        n_pass = len(e["members"][0][0])
        for j in range(p + n_pass, len(full)):  # counts and EOS of the main answer: ordinary cross-entropy
            ce_pos.append(b * width + j - 1)
            ce_tok.append(full[j])
        start = len(full)
        for m, (tokens, logw) in enumerate(e["members"]):
            member = len(member_fn)
            member_fn.append(b)
            member_logw.append(logw)
            if m == 0:  # the main answer's own pass tokens, already in the sequence
                seg = p
            else:
                seg = start
                k = len(tokens)
                ids[b, seg: seg + k] = torch.tensor(tokens)
                pos[b, seg: seg + k] = torch.arange(p, p + k)
                mask[b, 0, seg: seg + k, :p] = True
                mask[b, 0, seg: seg + k, seg: seg + k] = torch.tril(torch.ones(k, k, dtype=torch.bool))
                start += k
            for i, t in enumerate(tokens):  # token i is predicted at the previous position (the prompt's last)
                at_pos.append(b * width + (p - 1 if i == 0 else seg + i - 1))
                at_tok.append(t)
                at_member.append(member)
        for j in range(start, width):  # padding attends to itself (no fully masked rows)
            mask[b, 0, j, j] = True
    return {"input_ids": ids, "position_ids": pos, "attention_mask": mask,
            "at_pos": torch.tensor(at_pos), "at_tok": torch.tensor(at_tok), "at_member": torch.tensor(at_member),
            "ce_pos": torch.tensor(ce_pos, dtype=torch.long), "ce_tok": torch.tensor(ce_tok, dtype=torch.long),
            "member_fn": torch.tensor(member_fn), "member_logw": torch.tensor(member_logw),
            "fn_weight": torch.tensor(fn_weight), "prompt_len": torch.tensor([e["prompt_len"] for e in examples]),
            "answer_tokens": torch.tensor(answer_tokens)}


def log_coverage(log_q: torch.Tensor, k: int) -> torch.Tensor:
    """log(1 - (1 - q)^k) from log q, finite with finite gradients for every q in (0, 1] (module
    docstring; k = 1 returns log q).  Below q = e^-20 it is log k + log q: the relative error there,
    about (k - 1) q / 2, is 3e-8 at k = 30, and exp(log q) would underflow in the exact form."""
    if k < 1:
        raise ValueError(f"coverage must be >= 1 samples, got {k}")
    if k == 1:
        return log_q
    log_q = log_q.double()
    q = torch.exp(log_q.clamp(min=-20.0, max=0.0)).clamp(max=1.0 - 1e-12)  # sum w p <= 1; float rounding aside
    exact = torch.log(-torch.expm1(k * torch.log1p(-q)))
    return torch.where(log_q < -20.0, math.log(k) + log_q, exact)


def set_loss(model: Any, batch: dict[str, torch.Tensor], prompt_weight: float = 0.0,
             coverage: int = 1, teacher: tuple[torch.Tensor, torch.Tensor] | None = None,
             distill_weight: float = 1.0) -> torch.Tensor:
    """(sum over functions of W(f) * -log sum_l w p(l|f)  +  the counts' cross-entropy) / answer tokens:
    per-token scale, so the learning rates of `answer_loss` carry over (W: `function_weights`, 1 by default).
    `prompt_weight` > 0 adds that times the mean next-token cross-entropy over the prompts' IR
    (`prompt_lm_loss`); `coverage` k > 1 scores k samples, -log(1 - (1 - q)^k) (`log_coverage`).
    `teacher` (rows of the scored positions, the teacher's log-probabilities there: `training.distill.Teacher`)
    adds `distill_weight` times the mean KL from the teacher's distributions (`distill.distill_loss`)."""
    hidden = model.get_decoder()(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                                 position_ids=batch["position_ids"]).last_hidden_state
    flat = hidden.reshape(-1, hidden.shape[-1])
    head = model.get_output_embeddings()
    aux = prompt_weight * prompt_lm_loss(head, hidden, batch) if prompt_weight > 0 else 0.0
    logits = head(flat[batch["at_pos"]]).float()
    lp = torch.log_softmax(logits, dim=-1)
    if teacher is not None:
        from training.distill import distill_loss

        rows, teacher_lp = (t.to(logits.device) for t in teacher)
        aux = aux + distill_weight * distill_loss(logits[rows], teacher_lp)
    token_lp = lp.gather(1, batch["at_tok"][:, None])[:, 0]
    n_members = batch["member_fn"].numel()
    member_lp = torch.zeros(n_members, dtype=token_lp.dtype, device=token_lp.device).index_add(
        0, batch["at_member"], token_lp)
    scores = member_lp + batch["member_logw"].to(member_lp.dtype)
    n_fn = int(batch["member_fn"].max()) + 1
    log_q = torch.stack([torch.logsumexp(scores[batch["member_fn"] == b], dim=0) for b in range(n_fn)])
    total = -(log_coverage(log_q, coverage).to(scores.dtype) * batch["fn_weight"].to(scores.dtype)).sum()
    if batch["ce_pos"].numel():
        logits = head(flat[batch["ce_pos"]]).float()
        total = total + torch.nn.functional.cross_entropy(logits, batch["ce_tok"], reduction="sum")
    return total / batch["answer_tokens"].clamp(min=1) + aux


def prompt_lm_loss(head: Any, hidden: torch.Tensor, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """Mean next-token cross-entropy over the prompt (the unoptimized IR), an auxiliary task.

    Why: the answer is ~30 tokens of a ~1,000-token example, so with a few thousand functions the
    answer-only loss alone says little about what in the IR matters; modelling the IR itself makes
    every prompt token teach (the role the thesis gives to generating the optimized IR, which the set
    loss cannot use: the dataset holds the optimized IR of the best list only)."""
    ids, prompt_len = batch["input_ids"], batch["prompt_len"]
    width = ids.shape[1]
    # position j predicts token j + 1, for every j + 1 inside the prompt
    keep = torch.arange(width - 1, device=ids.device)[None, :] < (prompt_len[:, None] - 1)
    logits = head(hidden[:, :-1][keep]).float()
    return torch.nn.functional.cross_entropy(logits, ids[:, 1:][keep])
