"""Model-seeded search: greedy steps from verified seeds, through the real harness."""

from pathlib import Path

import pytest

from llmopt.llvm.passes import META_PASSES, OZ, vocabulary
from llmopt.llvm.subprocess_opt import count_instructions_text, run_opt
from llmopt.sampling.polish import Polisher, model_order

DATA = Path(__file__).resolve().parent / "data"


@pytest.mark.parametrize("name", ["coverage", "httptools"])
def test_polish_beats_its_seed_and_the_answer_reproduces_with_opt(harness, name):
    ir = (DATA / f"greedy_helps_{name}.ll").read_text()
    (oz,) = harness.evaluate_many(ir, [[OZ]])
    result = Polisher(harness.evaluate_many, vocabulary(harness.version), budget=300).polish(ir, [([OZ], oz.instcount)])
    assert result.score < oz.instcount  # datagen found a one-pass extension of -Oz that helps here
    assert 0 < result.compilations <= 300 and len(result.tried) == result.compilations
    assert sum(count_instructions_text(run_opt(ir, result.passes)).values()) == result.score


def test_budget_and_seed_order_are_respected(harness):
    ir = (DATA / "greedy_helps_coverage.ll").read_text()
    counts = {tuple(p): r.instcount for p, r in zip([[OZ], ["sroa"]], harness.evaluate_many(ir, [[OZ], ["sroa"]]),
                                                     strict=True)}
    pol = Polisher(harness.evaluate_many, vocabulary(harness.version), budget=20)
    result = pol.polish(ir, [(["sroa"], counts[("sroa",)]), ([OZ], counts[(OZ,)])])
    assert result.compilations == 20
    # The better seed (-Oz) is polished first: every list tried extends or shortens it.
    assert all(ls[:1] == [OZ] or ls == [] for ls, _ in result.tried)
    with pytest.raises(ValueError):
        pol.polish(ir, [])


def test_neighbours_add_a_meta_pass_only_to_lists_without_one():
    pol = Polisher(lambda ir, lists: [], vocabulary(), budget=10)
    after_oz = pol.neighbours([OZ])
    assert not any(p in META_PASSES for ls in after_oz for p in ls[1:])
    assert [OZ, "default<O2>"] not in after_oz and ["sroa", "default<O2>"] in pol.neighbours(["sroa"])
    assert ["gvn"] in pol.neighbours(["sroa", "gvn"]) and ["sroa"] in pol.neighbours(["sroa", "gvn"])


def test_predict_polish_improves_a_weak_strategy_and_says_so(harness):
    from llmopt.predict import predict_function
    from llmopt.sampling.baselines import Coreset

    ir = (DATA / "greedy_helps_coverage.ll").read_text()
    only_oz = Coreset([[OZ]])  # a strategy that can only propose -Oz
    plain = predict_function(ir, only_oz, 1, harness)
    polished = predict_function(ir, only_oz, 1, harness, polish=300)
    assert plain.passes == [OZ] and plain.source in ("model", "oz-backup")
    assert polished.instcount_result < plain.instcount_result and polished.source == "polish"
    assert plain.compilations < polished.compilations <= plain.compilations + 300 + 1
    assert polished.candidates[-1].passes == polished.passes  # the polished list is shown among the candidates


def test_model_guided_steps_try_the_models_likeliest_passes(tiny_lm, example_functions):
    from llmopt.sampling.priority import PrioritySampling

    ps = PrioritySampling(tiny_lm)
    ps.sample(example_functions[0], 3)
    decoder = ps.last_decoder
    order = model_order(decoder)
    ranked = order([OZ])
    row = decoder.masked_logprobs([tiny_lm.grammar.pass_ids[OZ]])
    scores = [float(row[tiny_lm.grammar.pass_ids[p]]) for p in ranked]
    assert scores == sorted(scores, reverse=True) and len(ranked) > 4
    assert not any(p in META_PASSES for p in ranked)  # the grammar: one meta-pass per list
    append_only = Polisher(lambda ir, lists: [], vocabulary(), budget=10, order=order, width=4, insert_width=0)
    assert append_only.neighbours([OZ]) == [[OZ, p] for p in ranked[:4]]  # no removal from a one-pass list
    grown = append_only.neighbours(["sroa", "gvn"])
    assert len(grown) == 4 + 2 and grown[-2:] == [["gvn"], ["sroa"]]
    # Insertions: before pass i, the model's likeliest passes after the list's first i passes, best
    # rank first across positions; a list with a meta-pass gets no second one.
    pol = Polisher(lambda ir, lists: [], vocabulary(), budget=10, order=order, width=4, insert_width=2)
    first = [p for p in order([]) if p not in META_PASSES][:2]
    assert pol.neighbours([OZ]) == [[OZ, p] for p in ranked[:4]] + [[p, OZ] for p in first]
    first, after_sroa = order([])[:2], order(["sroa"])[:2]  # meta-passes allowed: the list has none
    inserted = pol.neighbours(["sroa", "gvn"])[6:]
    assert inserted == [[first[0], "sroa", "gvn"], ["sroa", after_sroa[0], "gvn"],
                        [first[1], "sroa", "gvn"], ["sroa", after_sroa[1], "gvn"]]
    # Without its KV cache the decoder still answers, the same as a fresh one.
    fresh = model_order(tiny_lm.decoder(example_functions[0]))(["sroa", "gvn", "dse"])
    decoder.release_cache()
    assert order(["sroa", "gvn", "dse"]) == fresh
