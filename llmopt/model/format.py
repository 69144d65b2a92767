"""The prompt/answer format: one definition for training, inference and evaluation (thesis Fig. 4.1).

A training sequence is plain text made of tagged sections; every tag is one special token::

    <s><ir>
    {normalized input IR}</ir><answer><passes> instcombine simplifycfg</passes><counts>input 31 output 9</counts><opt_ir>
    {optimized IR}</opt_ir></s>

The prompt is everything up to and including ``<answer>``; the loss covers only what follows.
Each pass is written with a leading space and is one token of the vocabulary (see
``llmopt.model.tokenizer``).  ``with_ir=False`` drops the ``<opt_ir>`` section (the ablation of
thesis Fig. 4.18).  At inference, generation stops at ``</passes>`` or ``</counts>``.

Room for compiler feedback (thesis ch. 5): a prompt may carry earlier turns, each an answer plus
what the compiler said about it (``<feedback>...</feedback>``), and an answer may start with a
``<verdict>`` ("I am sure!" / "Let me try again.").  ``build_prompt(ir, history=...)`` and
``Answer.verdict`` are the hooks; the tokens are already in every tokenizer.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

FORMAT_VERSION = 1

BOS, EOS, PAD = "<s>", "</s>", "<pad>"
IR_OPEN, IR_CLOSE = "<ir>", "</ir>"
ANSWER = "<answer>"
PASSES_OPEN, PASSES_CLOSE = "<passes>", "</passes>"
COUNTS_OPEN, COUNTS_CLOSE = "<counts>", "</counts>"
OPT_IR_OPEN, OPT_IR_CLOSE = "<opt_ir>", "</opt_ir>"
FEEDBACK_OPEN, FEEDBACK_CLOSE = "<feedback>", "</feedback>"
VERDICT_OPEN, VERDICT_CLOSE = "<verdict>", "</verdict>"
SURE, RETRY = "I am sure!", "Let me try again."
# Spare special tokens so later tasks (e.g. new feedback forms) need no embedding resize.
RESERVED = tuple(f"<reserved_{i}>" for i in range(8))

SPECIAL_TOKENS: tuple[str, ...] = (
    PAD, BOS, EOS, IR_OPEN, IR_CLOSE, ANSWER, PASSES_OPEN, PASSES_CLOSE, COUNTS_OPEN, COUNTS_CLOSE,
    OPT_IR_OPEN, OPT_IR_CLOSE, FEEDBACK_OPEN, FEEDBACK_CLOSE, VERDICT_OPEN, VERDICT_CLOSE, *RESERVED,
)

StopAfter = Literal["passes", "counts", "ir"]
_STOP_TOKEN = {"passes": PASSES_CLOSE, "counts": COUNTS_CLOSE, "ir": EOS}
_COUNTS = re.compile(r"^\s*input\s+(\d+)\s+output\s+(\d+)\s*$")


def pass_token(name: str) -> str:
    """The text (and token) of one pass in a pass list: the name with a leading space."""
    return " " + name


@dataclass
class Answer:
    """What the model answers: a pass list, then (optionally) counts, optimized IR; a verdict for feedback tasks."""

    passes: list[str]
    instcount_input: int | None = None
    instcount_output: int | None = None
    optimized_ir: str | None = None
    verdict: str | None = None


# The pass-list problems parse_answer reports (ParsedAnswer.pass_errors picks them out of `errors`).
NO_PASSES = "no pass list in the answer"
PASSES_UNTERMINATED = "pass list not terminated"
UNKNOWN_PASS = "unknown pass"


@dataclass
class ParsedAnswer(Answer):
    """An `Answer` read back from model output, with the problems found (empty when it is clean)."""

    errors: list[str] = field(default_factory=list)
    complete: dict[str, bool] = field(default_factory=dict)

    @property
    def error(self) -> str | None:
        return "; ".join(self.errors) if self.errors else None

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def pass_errors(self) -> list[str]:
        """What is wrong with the pass list (missing, not terminated, unknown names); [] when it is valid."""
        return [e for e in self.errors if e in (NO_PASSES, PASSES_UNTERMINATED) or e.startswith(UNKNOWN_PASS)]

    @property
    def passes_valid(self) -> bool:
        """The pass list is present, closed and all vocabulary names (counts and IR may still be wrong)."""
        return not self.pass_errors


def _ir_body(ir: str) -> str:
    # A newline after the opening tag keeps the IR's first line tokenized like every other line.
    return "\n" + ir.strip("\n") + "\n"


def build_answer(answer: Answer, *, with_counts: bool = True, with_ir: bool = True, eos: bool = True) -> str:
    """The answer text for `answer` (what follows `<answer>`); sections missing from `answer` are left out."""
    parts = []
    if answer.verdict is not None:
        parts.append(f"{VERDICT_OPEN}{answer.verdict}{VERDICT_CLOSE}")
    parts.append(PASSES_OPEN + "".join(pass_token(p) for p in answer.passes) + PASSES_CLOSE)
    if with_counts and answer.instcount_input is not None and answer.instcount_output is not None:
        parts.append(f"{COUNTS_OPEN}input {answer.instcount_input} output {answer.instcount_output}{COUNTS_CLOSE}")
    if with_ir and answer.optimized_ir is not None:
        parts.append(OPT_IR_OPEN + _ir_body(answer.optimized_ir) + OPT_IR_CLOSE)
    if eos:
        parts.append(EOS)
    return "".join(parts)


def build_prompt(ir: str, history: Sequence[tuple[Answer, str]] = ()) -> str:
    """The prompt for `ir`; `history` holds earlier (answer, compiler feedback) turns for feedback tasks."""
    parts = [BOS, IR_OPEN, _ir_body(ir), IR_CLOSE]
    for previous, feedback in history:
        parts.append(ANSWER + build_answer(previous, eos=False))
        parts.append(FEEDBACK_OPEN + feedback + FEEDBACK_CLOSE)
    parts.append(ANSWER)
    return "".join(parts)


def answer_from_row(row: Mapping[str, Any]) -> Answer:
    """The target answer of a dataset row (columns of docs/interfaces.md; `verdict` for feedback rows)."""
    return Answer(
        passes=list(row["passes"]),
        instcount_input=row.get("instcount_input"),
        instcount_output=row.get("instcount_best"),
        optimized_ir=row.get("optimized_ir"),
        verdict=row.get("verdict"),
    )


def history_from_row(row: Mapping[str, Any]) -> list[tuple[Answer, str]]:
    """Earlier (answer, feedback) turns of a feedback row (`feedback_history`, see llmopt/feedback.py); [] otherwise."""
    turns = row.get("feedback_history") or []
    return [(Answer(passes=list(t["passes"]), instcount_input=t.get("instcount_input"),
                    instcount_output=t.get("instcount_output"), optimized_ir=t.get("optimized_ir") or None),
             t["feedback"]) for t in turns]


def build_example(row: Mapping[str, Any], *, with_ir: bool = True) -> tuple[str, str]:
    """(prompt, answer) texts for one dataset row; `with_ir=False` is the no-optimized-IR ablation.

    Feedback rows (optional columns `feedback_history`, `verdict`) carry the earlier turns in the prompt.
    """
    return build_prompt(row["ir"], history_from_row(row)), build_answer(answer_from_row(row), with_ir=with_ir)


def _section(text: str, open_tag: str, close_tag: str) -> tuple[str | None, bool]:
    """(body, closed) of the first `open_tag` section in `text`; body None when the tag is absent."""
    start = text.find(open_tag)
    if start < 0:
        return None, False
    start += len(open_tag)
    end = text.find(close_tag, start)
    if end < 0:
        # Unterminated (truncated generation): take what is there up to the next section tag.
        nxt = min((i for t in SPECIAL_TOKENS if (i := text.find(t, start)) >= 0), default=len(text))
        return text[start:nxt], False
    return text[start:end], True


def parse_answer(text: str, vocabulary: Collection[str] | None = None) -> ParsedAnswer:
    """Read an answer back from (possibly garbage) model output; never raises.

    `text` may include the prompt: only what follows the last `<answer>` is read.  Unknown pass
    names are dropped when `vocabulary` is given and reported in `errors`, as are missing or
    malformed sections.  `complete` says which sections were closed properly.
    """
    if ANSWER in text:
        text = text[text.rindex(ANSWER) + len(ANSWER):]
    result = ParsedAnswer(passes=[])
    verdict, closed = _section(text, VERDICT_OPEN, VERDICT_CLOSE)
    if verdict is not None:
        result.verdict = verdict.strip()
        result.complete["verdict"] = closed
    body, closed = _section(text, PASSES_OPEN, PASSES_CLOSE)
    result.complete["passes"] = closed
    if body is None:
        result.errors.append("no pass list in the answer")
    else:
        if not closed:
            result.errors.append(PASSES_UNTERMINATED)
        for name in body.split():
            if vocabulary is not None and name not in vocabulary:
                result.errors.append(f"{UNKNOWN_PASS} {name!r}")
            else:
                result.passes.append(name)
    counts, closed = _section(text, COUNTS_OPEN, COUNTS_CLOSE)
    if counts is not None:
        result.complete["counts"] = closed
        match = _COUNTS.match(counts)
        if match and closed:
            result.instcount_input, result.instcount_output = int(match.group(1)), int(match.group(2))
        else:
            result.errors.append(f"malformed instruction counts {counts[:40]!r}")
    ir, closed = _section(text, OPT_IR_OPEN, OPT_IR_CLOSE)
    if ir is not None:
        result.complete["ir"] = closed
        result.optimized_ir = ir.strip("\n") + "\n" if ir.strip() else ""
        if not closed:
            result.errors.append("optimized IR not terminated")
    return result


def stop_token(stop_after: StopAfter) -> str:
    """The token at which generation stops: after the pass list, the counts, or the whole answer."""
    return _STOP_TOKEN[stop_after]
