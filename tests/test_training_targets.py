"""Which tying pass list a training row teaches: policies, per-epoch variants, config checks."""

import pytest

from llmopt.model import default_model_dir, load_tokenizer
from llmopt.model import format as fmt
from training.config import config_from_dict
from training.data import encode_rows, pick_variant
from training.targets import choose_targets, keep_unimproved, tying_lists, variant_for

O1 = ["default<O1>"]
O1_CSE = ["default<O1>", "early-cse"]
O2 = ["default<O2>"]
OZ = ["default<Oz>"]


def _row(passes, ties, best=10, ir="define i32 @f(i32 %a) {\n  ret i32 %a\n}\n"):
    good = [{"passes": t, "instcount": best} for t in ties] + [{"passes": ["default<Oz>"], "instcount": best + 3}]
    return {"ir": ir, "passes": passes, "instcount_input": 20, "instcount_best": best, "good_lists": good}


def test_tying_lists_keep_own_list_first_and_only_ties():
    row = _row(O1, [O1, O2, O1_CSE])
    assert tying_lists(row) == [tuple(O1), tuple(O2), tuple(O1_CSE)]  # default<Oz> (13 > 10) is not a tie
    assert tying_lists({"passes": O2, "instcount_best": 5}) == [tuple(O2)]  # old datasets: no good_lists


def test_frequent_gives_equivalent_functions_one_label():
    # Two functions where O1 and O2 tie; the autotuner labelled them differently (alphabetical luck).
    rows = [_row(O2, [O2, O1]), _row(O1, [O1, O2]), _row(O1, [O1, O1_CSE])]
    assert choose_targets(rows, "best") == [[O2], [O1], [O1]]
    assert choose_targets(rows, "frequent") == [[O1], [O1], [O1]]  # O1 ties on 3 functions, O2 on 2
    # The shortest ties win before frequency: O1_CSE (2 passes) never beats a 1-pass tie.
    assert choose_targets([_row(O1_CSE, [O1_CSE])] * 5 + [_row(O1, [O1, O1_CSE])], "frequent")[-1] == [O1]


def test_random_variants_change_with_the_epoch_and_are_reproducible():
    assert choose_targets([_row(O1, [O1, O2, O1_CSE])], "random") == [[O1, O2, O1_CSE]]
    picks = {variant_for(3, seed=0, epoch=e, row_index=7) for e in range(20)}
    assert picks == {0, 1, 2}
    assert [variant_for(3, 0, e, 7) for e in range(20)] == [variant_for(3, 0, e, 7) for e in range(20)]
    assert variant_for(1, 0, 5, 7) == 0
    with pytest.raises(ValueError, match="unknown target policy"):
        choose_targets([], "sometimes")


def test_encoded_variants_teach_each_list():
    tok = load_tokenizer(default_model_dir())
    rows = [_row(O1, [O1, O2])]
    examples, skipped = encode_rows(rows, tok, 4096, with_ir=False, targets=choose_targets(rows, "random"))
    assert skipped == 0 and len(examples[0]["variants"]) == 2
    answers = set()
    for epoch in range(12):
        ex = pick_variant(examples[0], 0, epoch, 0)
        answer = tok.decode([t for t, lab in zip(ex["input_ids"], ex["labels"], strict=True) if lab != -100])
        answers.add(tuple(fmt.parse_answer(answer).passes))
    assert answers == {tuple(O1), tuple(O2)}


def test_policies_other_than_best_need_answers_without_ir():
    assert config_from_dict({"target_policy": "frequent", "with_ir": False}).target_policy == "frequent"
    with pytest.raises(ValueError, match="with_ir=false"):
        config_from_dict({"target_policy": "random"})
    with pytest.raises(ValueError, match="target_policy must be"):
        config_from_dict({"target_policy": "all", "with_ir": False})


def _oz_row(ties, oz=10, best=10):
    return {"passes": ties[0], "instcount_input": 20, "instcount_oz": oz, "instcount_best": best,
            "good_lists": [{"passes": t, "instcount": best} for t in ties]}


def test_beyond_oz_never_teaches_the_bare_oz_list_when_another_ties():
    rows = [_oz_row([OZ, O2]), _oz_row([OZ, O2, O1]), _oz_row([OZ])]
    assert choose_targets(rows, "frequent") == [[OZ], [OZ], [OZ]]  # Oz ties on all three
    # -Oz is the backup anyway: teach the list that also reaches the best count; Oz only when alone.
    assert choose_targets(rows, "beyond_oz") == [[O2], [O2], [OZ]]
    # A function some list improves keeps frequent's label.
    better = _oz_row([O1_CSE], oz=12, best=10)
    assert choose_targets([better], "beyond_oz") == choose_targets([better], "frequent") == [[O1_CSE]]


def test_keep_unimproved_keeps_every_improved_row_and_a_seeded_share_of_the_rest():
    improved = [_oz_row([O1], oz=12, best=10 - i % 3) for i in range(50)]
    unimproved = [_oz_row([OZ, O1]) for _ in range(400)]
    rows = [r for pair in zip(improved, unimproved[:50], strict=True) for r in pair] + unimproved[50:]
    kept = keep_unimproved(rows, 0.25, seed=0)
    assert all(any(k is r for k in kept) for r in improved)
    assert 60 <= sum(k["instcount_best"] == k["instcount_oz"] for k in kept) <= 140  # ~100 of 400
    assert [id(r) for r in keep_unimproved(rows, 0.25, seed=0)] == [id(r) for r in kept]  # reproducible
    assert keep_unimproved(rows, 1.0, seed=0) == rows
    # A row some matrix list beats -Oz on is kept whatever its label says.
    marked = [{**r, "ir_hash": f"h{i}"} for i, r in enumerate(unimproved[:20])]
    assert keep_unimproved(marked, 0.0001, seed=0, improved={"h3", "h7"}) == [marked[3], marked[7]]
    with pytest.raises(ValueError, match="keep_unimproved"):
        config_from_dict({"keep_unimproved": 0})
