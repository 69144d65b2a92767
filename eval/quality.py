"""Generated-code quality (thesis Fig. 4.4, 4.11): decode whole answers and check the model's optimized IR.

For up to `--quality-limit` functions the model answers greedily to the end: the pass list is the
grammar-constrained greedy answer (what `greedy` evaluates), then the model continues freely with
the counts and the optimized IR.  The pass list is compiled (want_ir) to get the reference IR; the generated IR is
compared with it (exact match, BLEU) and parsed by LLVM (does it compile?); its parse errors are
sorted into the categories of thesis Fig. 4.11.  Per-function results go to `DIR/quality.jsonl`
(resumable).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from typing import Any

from tqdm import tqdm

from eval.inputs import Function
from eval.store import BASELINE, JsonlStore
from llmopt.llvm.ir import normalize_ir
from llmopt.metrics import corpus_ir_bleu, mape, parse_generated_ir, share
from llmopt.model import format as fmt
from llmopt.sampling.base import PromptTooLongError

QUALITY = "quality.jsonl"

# (category, pattern on the LLVM parser's message) in order; thesis Fig. 4.11.
ERROR_CATEGORIES: tuple[tuple[str, str], ...] = (
    ("instruction forward referenced", r"forward referenc|does not dominate"),
    ("undefined function", r"undefined value '@|undefined function"),
    ("undefined value", r"undefined value|use of undefined"),
    ("invalid redefinition", r"redefinition|multiple definition|already defined"),
    ("invalid value for constant", r"invalid value for constant|constant expression|invalid constant"),
    ("type error", r"defined with type|expected type|type mismatch|invalid cast|type of|types|invalid type"),
    ("index error", r"index|out of range"),
    ("syntax error", r"expected|unexpected|invalid token|syntax|unterminated|lexer"),
)


def error_category(message: str | None) -> str:
    """Thesis Fig. 4.11 category of an LLVM parse/verify error message; 'other' when none matches."""
    if not message:
        return "other"
    text = message.lower()
    for name, pattern in ERROR_CATEGORIES:
        if re.search(pattern, text):
            return name
    return "other"


def generate_full(lm: Any, ir: str, max_new_tokens: int, passes: list[str] | None = None) -> str | None:
    """Greedy answer text for `ir` up to `</s>` (special tokens kept); None if the prompt does not fit.

    With `passes`, the answer starts with that pass list (the grammar-constrained greedy answer) and
    the model continues with the counts and the optimized IR; without, it decodes the answer freely.
    """
    from llmopt.sampling.decoding import continue_answer

    forced = "" if passes is None else fmt.build_answer(fmt.Answer(passes), with_counts=False, with_ir=False,
                                                        eos=False)
    ids = lm.tokenizer(fmt.build_prompt(ir) + forced, add_special_tokens=False)["input_ids"]
    if lm.context_length - len(ids) < 16:
        return None
    return forced + continue_answer(lm, ids, "ir", max_new_tokens).replace(fmt.PAD, "")


def score_answer(fn: Function, text: str, passes_vocab: Sequence[str], harness: Any, instcount_input: int) -> dict:
    """Per-function quality record of one generated answer."""
    ans = fmt.parse_answer(text, passes_vocab)
    rec: dict[str, Any] = {"fid": fn.fid, "passes": ans.passes, "valid": ans.passes_valid,
                           "pred_input": ans.instcount_input, "pred_output": ans.instcount_output,
                           "true_input": instcount_input, "true_output": None, "has_ir": bool(ans.optimized_ir),
                           "gen_ir": ans.optimized_ir or "", "ref_ir": None, "parses": False, "error": None}
    res = harness.evaluate_tasks([(fn.ir, ans.passes)], want_ir=True)[0]
    if res.ok:
        rec["true_output"] = res.instcount
        rec["ref_ir"] = normalize_ir(res.ir or "")
    parses, _, error = parse_generated_ir([ans.optimized_ir], harness.evaluate_tasks)[0]
    rec["parses"], rec["error"] = parses, None if error is None else error[:300]
    return rec


def summarize_quality(records: Sequence[dict], inputs: dict[str, str]) -> dict:
    """Aggregate Fig. 4.4 / 4.11 metrics from per-function quality records."""
    n = len(records)
    compared = [r for r in records if r["ref_ir"] is not None]
    gen = [r["gen_ir"] for r in compared]
    ref = [r["ref_ir"] for r in compared]

    errors: dict[str, int] = {}
    for r in records:
        if not r["parses"] and r["has_ir"]:
            cat = error_category(r["error"])
            errors[cat] = errors.get(cat, 0) + 1
    return {
        "n_functions": n,
        "has_ir_pct": share(sum(r["has_ir"] for r in records), n),
        "parses_pct": share(sum(r["parses"] for r in records), n),
        "exact_match_pct": share(sum(g.strip() == f.strip() for g, f in zip(gen, ref, strict=True)), len(gen)),
        "bleu": corpus_ir_bleu(gen, ref),
        "copy_input_bleu": corpus_ir_bleu([inputs[r["fid"]] for r in compared], ref),
        "instcount_input_mape": mape([(r["pred_input"], r["true_input"]) for r in records
                                      if r["pred_input"] is not None]),
        "instcount_output_mape": mape([(r["pred_output"], r["true_output"]) for r in records
                                       if r["pred_output"] is not None and r["true_output"] is not None]),
        "valid_pass_lists_pct": share(sum(bool(r["valid"]) for r in records), n),
        "parse_errors": dict(sorted(errors.items(), key=lambda kv: -kv[1])),
    }


def run_quality(functions: Sequence[Function], factory: Any, harness: Any, cfg: Any) -> dict:
    """Decode, score and summarize up to `cfg.quality_limit` functions (the first by fid: seeded, stable)."""
    store = JsonlStore(cfg.out / QUALITY)
    done = {r["fid"]: r for r in store.read()}
    base = {r["fid"]: r for r in JsonlStore(cfg.out / BASELINE).read()}
    chosen = list(functions)[: cfg.quality_limit]
    todo = [fn for fn in chosen if fn.fid not in done]
    lm = factory.lm if todo else None
    greedy = factory.build("greedy") if todo else None
    for fn in tqdm(todo, desc="          quality", unit="fn", disable=not cfg.progress, file=sys.stderr):
        try:
            passes = greedy.sample(fn.ir, 1)[0].passes  # type: ignore[union-attr]
        except PromptTooLongError:
            passes = None
        text = generate_full(lm, fn.ir, cfg.quality_max_new_tokens, passes) if passes is not None else None
        if text is None:
            rec = {"fid": fn.fid, "skipped": "prompt too long"}
        else:
            rec = score_answer(fn, text, lm.passes, harness, base[fn.fid]["instcount_input"])
        store.append([rec])
        done[fn.fid] = rec
    records = [done[fn.fid] for fn in chosen if fn.fid in done and "skipped" not in done[fn.fid]]
    summary = summarize_quality(records, {fn.fid: fn.ir for fn in chosen})
    summary["skipped_too_long"] = sum(1 for fn in chosen if "skipped" in done.get(fn.fid, {}))
    return summary
