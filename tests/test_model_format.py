"""The prompt/answer format: build + parse round trip, garbage tolerance, feedback hooks."""

from llmopt.model import format as fmt
from llmopt.model.format import Answer, build_answer, build_example, build_prompt, parse_answer

IR = "define i32 @f(i32 %0) {\n%2 = add i32 %0, 1\nret i32 %2\n}\n"
OPT = "define i32 @f(i32 %0) {\nret i32 %0\n}\n"
VOCAB = {"instcombine", "simplifycfg", "default<Oz>", "mem2reg"}


def test_build_parse_round_trip():
    answer = Answer(["mem2reg", "default<Oz>", "instcombine"], 3, 1, OPT)
    prompt, text = build_prompt(IR), build_answer(answer)
    assert prompt.startswith(fmt.BOS + fmt.IR_OPEN) and prompt.endswith(fmt.ANSWER)
    assert text.startswith(fmt.PASSES_OPEN) and text.endswith(fmt.EOS)
    parsed = parse_answer(prompt + text, VOCAB)
    assert parsed.ok, parsed.errors
    assert parsed.passes == answer.passes
    assert (parsed.instcount_input, parsed.instcount_output) == (3, 1)
    assert parsed.optimized_ir == OPT


def test_example_from_row_and_ablation():
    row = {"ir": IR, "passes": ["instcombine"], "instcount_input": 2, "instcount_best": 1, "optimized_ir": OPT}
    prompt, answer = build_example(row)
    assert fmt.OPT_IR_OPEN in answer and IR.strip() in prompt
    _, short = build_example(row, with_ir=False)
    assert fmt.OPT_IR_OPEN not in short and fmt.COUNTS_CLOSE in short
    assert parse_answer(short).passes == ["instcombine"]


def test_parse_tolerates_garbage():
    assert parse_answer("").errors == ["no pass list in the answer"]
    truncated = parse_answer("<passes> instcombine simplifycfg", VOCAB)
    assert truncated.passes == ["instcombine", "simplifycfg"] and not truncated.complete["passes"]
    bad = parse_answer("<passes> instcombine frobnicate</passes><counts>input x output</counts><opt_ir>\ndefine", VOCAB)
    assert bad.passes == ["instcombine"]
    assert any("frobnicate" in e for e in bad.errors) and any("counts" in e for e in bad.errors)
    assert bad.complete == {"passes": True, "counts": True, "ir": False} and bad.optimized_ir.startswith("define")
    # Stop at </passes> (inference): the pass list alone is a clean answer.
    assert parse_answer("<passes> default<Oz></passes>", VOCAB).ok


def test_feedback_history_and_verdict():
    first = Answer(["instcombine"], 3, 2)
    prompt = build_prompt(IR, history=[(first, "instcount 2 but the best is 1")])
    assert prompt.count(fmt.ANSWER) == 2 and fmt.FEEDBACK_OPEN in prompt
    retry = build_answer(Answer(["mem2reg", "instcombine"], 3, 1, verdict=fmt.RETRY), with_ir=False)
    parsed = parse_answer(prompt + retry, VOCAB)  # reads the last answer only
    assert parsed.verdict == fmt.RETRY and parsed.passes == ["mem2reg", "instcombine"] and parsed.ok
