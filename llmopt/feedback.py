"""Compiler feedback for the model (thesis ch. 5): compile its answer, say what happened, ask again.

One round: the model answers (pass list, predicted counts, and for Short/Long the optimized IR);
the compiler applies the pass list; `compute_feedback` compares prediction and reality:

  * is the pass list valid (vocabulary, at most one meta-pass, properly terminated)?
  * predicted vs real instruction counts before and after,
  * (Short/Long) does the generated IR parse (the error if not), its instruction count, and the
    BLEU score between generated and compiled IR (sacrebleu, 0..1),
  * (Long) the compiled IR itself.

Formats (thesis Fig. 5.4): Fast = pass list + counts only, no IR generation (generation stops at
`</counts>`, ~10x faster); Short = metrics + errors; Long = Short + compiled IR.  The next prompt
is `build_prompt(ir, history=[(answer, feedback text), ...])`, and the model's answer starts with
`<verdict>I am sure!</verdict>` or `<verdict>Let me try again.</verdict>`; the loop stops at
"I am sure!" or after `rounds` rounds.

Training a feedback model needs a dataset of such turns: `data_pipeline/feedback_data.py` builds it
with this loop's `generate_answer` and `compute_feedback` (`llmopt feedback-data`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from llmopt.metrics import ir_bleu, parse_generated_ir
from llmopt.model import format as fmt
from llmopt.sampling.base import PromptTooLongError, Sample, distinct

FeedbackFormat = Literal["fast", "short", "long"]
FORMATS: tuple[str, ...] = ("fast", "short", "long")


@dataclass
class Feedback:
    """What the compiler says about one answer."""

    passes_valid: bool
    pass_error: str | None
    instcount_input_predicted: int | None
    instcount_input: int | None
    instcount_output_predicted: int | None
    instcount_output: int | None            # real count after the (valid part of the) pass list
    ir_parses: bool | None = None           # Short/Long only
    ir_error: str | None = None
    ir_instcount: int | None = None         # instructions of the generated IR
    bleu: float | None = None               # generated vs compiled IR, 0..1
    compiled_ir: str | None = None          # Long only

    @property
    def correct(self) -> bool:
        """The thesis' "I am sure!" criterion: a valid list whose output count was predicted exactly."""
        return self.passes_valid and self.instcount_output is not None \
            and self.instcount_output_predicted == self.instcount_output

    def render(self, form: FeedbackFormat) -> str:
        """The feedback text placed between `<feedback>` and `</feedback>`."""
        def num(x: int | None) -> str:
            return "?" if x is None else str(x)

        lines = [f"pass list: {'valid' if self.passes_valid else 'invalid: ' + (self.pass_error or '')}",
                 f"instructions before: predicted {num(self.instcount_input_predicted)}, "
                 f"real {num(self.instcount_input)}",
                 f"instructions after: predicted {num(self.instcount_output_predicted)}, "
                 f"real {num(self.instcount_output)}"]
        if form in ("short", "long"):
            if self.ir_parses:
                lines.append(f"generated IR: parses, {num(self.ir_instcount)} instructions")
            else:
                lines.append(f"generated IR: does not parse: {self.ir_error or 'missing'}")
            lines.append(f"BLEU generated vs compiled IR: {self.bleu if self.bleu is not None else 0.0:.3f}")
        if form == "long":
            lines.append("compiled IR:\n" + (self.compiled_ir or "").strip("\n"))
        return "\n".join(lines) + "\n"


_LINE = {
    "pass list": re.compile(r"^pass list: (valid|invalid: (.*))$"),
    "before": re.compile(r"^instructions before: predicted (\S+), real (\S+)$"),
    "after": re.compile(r"^instructions after: predicted (\S+), real (\S+)$"),
    "ir": re.compile(r"^generated IR: (?:parses, (\S+) instructions|does not parse: (.*))$"),
    "bleu": re.compile(r"^BLEU generated vs compiled IR: ([0-9.]+)$"),
}


def parse_feedback(text: str) -> Feedback:
    """Read a rendered feedback text back (inverse of `Feedback.render`); raises ValueError if malformed."""
    def num(x: str) -> int | None:
        return None if x == "?" else int(x)

    lines = text.split("\n")
    m = [_LINE["pass list"].match(lines[0]), _LINE["before"].match(lines[1]), _LINE["after"].match(lines[2])]
    if not all(m):
        raise ValueError(f"malformed feedback: {text[:80]!r}")
    fb = Feedback(m[0].group(1) == "valid", m[0].group(2), num(m[1].group(1)), num(m[1].group(2)),
                  num(m[2].group(1)), num(m[2].group(2)))
    rest = lines[3:]
    if rest and (ir := _LINE["ir"].match(rest[0])):
        fb.ir_parses = ir.group(1) is not None
        fb.ir_instcount = num(ir.group(1)) if ir.group(1) else None
        fb.ir_error = ir.group(2)
        if len(rest) > 1 and (b := _LINE["bleu"].match(rest[1])):
            fb.bleu = float(b.group(1))
        if len(rest) > 2 and rest[2] == "compiled IR:":
            fb.compiled_ir = "\n".join(rest[3:]).strip("\n") + "\n"
    return fb


def compute_feedback(ir: str, answer: fmt.ParsedAnswer, harness: Any, form: FeedbackFormat = "fast") -> Feedback:
    """Compile `answer.passes` on `ir` with the harness and compare with what the model predicted."""
    from llmopt.llvm.passes import UnknownPassError, check_pass_list

    error = "; ".join(answer.pass_errors) or (None if answer.passes else "empty pass list")
    try:
        check_pass_list(answer.passes, harness.version)
    except UnknownPassError as err:
        error = str(err)
    noop, result = harness.evaluate_many(ir, [[], answer.passes], want_ir=form != "fast")
    if not result.ok:
        error = error or result.error
    fb = Feedback(error is None, error, answer.instcount_input, noop.instcount if noop.ok else None,
                  answer.instcount_output, result.instcount if result.ok else None)
    if form != "fast":
        generated = answer.optimized_ir or ""
        fb.ir_parses, fb.ir_instcount, ir_error = parse_generated_ir([answer.optimized_ir], harness.evaluate_tasks)[0]
        fb.ir_error = None if ir_error is None else (ir_error.splitlines() or [""])[0][:200]
        fb.bleu = ir_bleu(generated, result.ir) if result.ok and result.ir and generated.strip() else 0.0
        if form == "long":
            fb.compiled_ir = result.ir if result.ok else ""
    return fb


@dataclass
class Round:
    """One model answer and what the compiler said about it."""

    answer: fmt.ParsedAnswer
    text: str
    feedback: Feedback
    verdict: str | None = None   # the model's verdict before this answer (None in round 0)


@dataclass
class FeedbackResult:
    rounds: list[Round] = field(default_factory=list)
    stopped: str = "rounds"      # "sure", "rounds", "context"

    @property
    def pass_lists(self) -> list[list[str]]:
        return [r.answer.passes for r in self.rounds]


def choose_verdict(lm: Any, prompt: str) -> str:
    """The more probable of "I am sure!" / "Let me try again." after `prompt` (text ending in `<answer>`)."""
    import torch

    base = lm.tokenizer(prompt, add_special_tokens=False)["input_ids"]
    best, best_lp = fmt.RETRY, float("-inf")
    for verdict in (fmt.SURE, fmt.RETRY):
        tail = lm.tokenizer(fmt.VERDICT_OPEN + verdict + fmt.VERDICT_CLOSE, add_special_tokens=False)["input_ids"]
        ids = base + tail
        if len(ids) > lm.context_length:
            raise PromptTooLongError("feedback prompt does not fit the model context")
        with torch.no_grad():
            logits = lm.model(input_ids=torch.tensor([ids])).logits[0].float()
        lp = torch.log_softmax(logits[len(base) - 1:-1], dim=-1)
        total = float(lp[torch.arange(len(tail)), torch.tensor(tail)].sum())
        if total > best_lp:
            best, best_lp = verdict, total
    return best


def generate_answer(lm: Any, ir: str, history: list[tuple[fmt.Answer, str]] = (), *, form: FeedbackFormat = "fast",
                    verdict: str | None = None, max_ir_tokens: int = 1024) -> tuple[fmt.ParsedAnswer, str]:
    """Greedy answer (grammar-constrained pass list, then counts, then IR for Short/Long) and its text."""
    from llmopt.sampling.decoding import continue_answer, greedy_continue

    prompt = fmt.build_prompt(ir, history)
    if verdict is not None:
        prompt += fmt.VERDICT_OPEN + verdict + fmt.VERDICT_CLOSE
    decoder = lm.decoder(prompt=prompt)
    tokens, _ = greedy_continue(decoder, [], [])
    text = decoder.text(tokens)
    if tokens and tokens[-1] == lm.grammar.close_id:
        stop: fmt.StopAfter = "counts" if form == "fast" else "ir"
        text += continue_answer(lm, decoder.prompt_ids + tokens, stop, 24 if form == "fast" else max_ir_tokens)
    answer = fmt.parse_answer(text.replace(fmt.PAD, ""), lm.passes)
    answer.verdict = verdict
    return answer, text


def as_turn(answer: fmt.ParsedAnswer, form: FeedbackFormat) -> fmt.Answer:
    """The answer as a history turn: Fast feedback never shows the generated IR; Short/Long keep it."""
    return fmt.Answer(answer.passes, answer.instcount_input, answer.instcount_output,
                      answer.optimized_ir if form != "fast" else None)


def feedback_loop(lm: Any, ir: str, harness: Any, *, form: FeedbackFormat = "fast", rounds: int = 2
                  ) -> FeedbackResult:
    """Round 0 answers the plain prompt; each next round sees all earlier answers with feedback.

    The loop stops when the model says "I am sure!", after `rounds` feedback rounds, or when the
    prompt outgrows the context.
    """
    result = FeedbackResult()
    history: list[tuple[fmt.Answer, str]] = []
    try:
        answer, text = generate_answer(lm, ir, form=form)
        result.rounds.append(Round(answer, text, compute_feedback(ir, answer, harness, form)))
        for _ in range(rounds):
            last = result.rounds[-1]
            history.append((as_turn(last.answer, form), last.feedback.render(form)))
            verdict = choose_verdict(lm, fmt.build_prompt(ir, history))
            if verdict == fmt.SURE:
                result.stopped = "sure"
                break
            answer, text = generate_answer(lm, ir, history, form=form, verdict=verdict)
            result.rounds.append(Round(answer, text, compute_feedback(ir, answer, harness, form), verdict))
    except PromptTooLongError:
        result.stopped = "context"
    return result


class FeedbackStrategy:
    """A strategy: `base` samples, followed by the distinct new lists of a feedback loop (so up to n + rounds)."""

    name = "feedback"
    compiles_while_sampling = True  # its retries need the compiler's answer (callers must not share the harness)

    def __init__(self, lm: Any, harness: Any, *, form: FeedbackFormat = "fast", rounds: int = 2, base: Any = None):
        self.lm, self.harness, self.form, self.rounds, self.base = lm, harness, form, rounds, base
        self.last: FeedbackResult | None = None

    def sample(self, ir: str, n: int) -> list[Sample]:
        samples = list(self.base.sample(ir, n)) if self.base is not None else []
        self.last = feedback_loop(self.lm, ir, self.harness, form=self.form, rounds=self.rounds)
        have = {tuple(p) for p in distinct(samples)}
        for r in self.last.rounds:
            if r.answer.passes and tuple(r.answer.passes) not in have:
                have.add(tuple(r.answer.passes))
                samples.append(Sample(list(r.answer.passes), None, r.text))
        return samples
