"""Compiler feedback: prompts build and parse for Fast / Short / Long, the loop runs, training rows build."""

from __future__ import annotations

import pytest

from data_pipeline.feedback_data import build_feedback_rows
from llmopt.feedback import FORMATS, compute_feedback, feedback_loop, parse_feedback
from llmopt.metrics import ir_bleu
from llmopt.model import format as fmt


@pytest.mark.parametrize("form", FORMATS)
def test_feedback_prompt_builds_and_parses(form, harness, example_functions):  # noqa: F811
    ir = example_functions[0]
    oz = harness.oz(ir, want_ir=True)
    text = (fmt.PASSES_OPEN + " sroa instcombine" + fmt.PASSES_CLOSE + fmt.COUNTS_OPEN + "input 31 output 9"
            + fmt.COUNTS_CLOSE + fmt.OPT_IR_OPEN + "\n" + oz.ir + fmt.OPT_IR_CLOSE)
    answer = fmt.parse_answer(text, ["sroa", "instcombine"])
    fb = compute_feedback(ir, answer, harness, form)
    assert fb.passes_valid and fb.instcount_input == 31 and fb.instcount_output_predicted == 9
    rendered = fb.render(form)
    back = parse_feedback(rendered)
    assert back.instcount_output == fb.instcount_output and back.passes_valid
    if form == "fast":
        assert back.ir_parses is None and "BLEU" not in rendered
    else:
        assert back.ir_parses is True and back.bleu == pytest.approx(fb.bleu, abs=1e-3)
    assert (back.compiled_ir is not None) == (form == "long")
    prompt = fmt.build_prompt(ir, [(answer, rendered)])
    assert prompt.endswith(fmt.ANSWER) and fmt.FEEDBACK_OPEN + rendered + fmt.FEEDBACK_CLOSE in prompt
    reply = fmt.build_answer(fmt.Answer(["sroa"], 31, 9, verdict=fmt.RETRY), with_ir=False)
    parsed = fmt.parse_answer(prompt + reply)
    assert parsed.verdict == fmt.RETRY and parsed.passes == ["sroa"]


def test_invalid_pass_list_feedback(harness, example_functions):  # noqa: F811
    answer = fmt.parse_answer("<passes> sroa bogus-pass", ["sroa"])
    fb = compute_feedback(example_functions[0], answer, harness, "short")
    assert not fb.passes_valid and "bogus-pass" in fb.pass_error and not fb.correct
    assert fb.ir_parses is False
    assert ir_bleu("ret i32 0\n", "ret i32 0\n") == pytest.approx(1.0)


def test_feedback_loop_and_training_rows(tiny_lm, harness, example_functions):  # noqa: F811
    ir = example_functions[3]
    result = feedback_loop(tiny_lm, ir, harness, form="fast", rounds=2)
    assert 1 <= len(result.rounds) <= 3 and result.stopped in ("sure", "rounds", "context")
    assert result.rounds[0].answer.passes and result.rounds[0].verdict is None
    row = {"ir": ir, "passes": ["default<Oz>"], "instcount_input": 28, "instcount_best": 14, "optimized_ir": None}
    rows = build_feedback_rows(tiny_lm, [row], harness, form="fast", progress=False)
    assert rows[0]["verdict"] in (fmt.SURE, fmt.RETRY)
    prompt, answer = fmt.build_example(rows[0], with_ir=False)
    assert fmt.FEEDBACK_OPEN in prompt and answer.startswith(fmt.VERDICT_OPEN)
    assert fmt.parse_answer(prompt + answer).passes == ["default<Oz>"]
