"""Sampling strategies on a small real model: Priority Sampling's guarantees, grammar, KV-cache reuse.

The model is an untrained `LlamaForCausalLM` with a real llmopt tokenizer (trained on the example
functions): the properties tested hold for any weights, and a wide initialisation keeps the
next-token distributions peaked so argmax never hinges on rounding (fixtures in conftest.py).
"""

from __future__ import annotations

import pytest

from llmopt.llvm.passes import check_pass_list
from tests.conftest import MAX_PASSES


def test_priority_sampling_unique_grammatical_ordered(tiny_lm, example_functions):
    from llmopt.sampling import GreedyDecoding, PrioritySampling

    for ir in example_functions[:2]:
        samples = PrioritySampling(tiny_lm).sample(ir, 12)
        assert len(samples) == 12
        lists = [tuple(s.passes) for s in samples]
        assert len(set(lists)) == len(lists), "every sample is unique"
        for s in samples:
            assert 1 <= len(s.passes) <= MAX_PASSES
            check_pass_list(s.passes)  # vocabulary passes, at most one meta-pass
            assert s.text.endswith("</passes>")
        scores = [s.score for s in samples]
        assert all(a >= b for a, b in zip(scores, scores[1:], strict=False)), scores
        assert samples[0].passes == GreedyDecoding(tiny_lm).sample(ir, 1)[0].passes
        # Deterministic: the same call gives the same samples.
        assert [s.passes for s in PrioritySampling(tiny_lm).sample(ir, 12)] == [list(x) for x in lists]


def test_priority_sampling_kv_cache_reuse_matches_recompute(tiny_lm, example_functions):
    from llmopt.sampling import PrioritySampling

    ir = example_functions[0]
    cached = PrioritySampling(tiny_lm)
    fresh = PrioritySampling(tiny_lm, reuse_cache=False)
    a, b = cached.sample(ir, 8), fresh.sample(ir, 8)
    assert [s.passes for s in a] == [s.passes for s in b]
    assert [s.score for s in a] == pytest.approx([s.score for s in b], abs=1e-3)
    # Reuse runs the prompt once: far fewer tokens than re-running prompt + prefix per token.
    assert cached.last_decoder.tokens_run < fresh.last_decoder.tokens_run / 3


def test_priority_sampling_exclude_skips_a_list_without_changing_the_order(tiny_lm, example_functions):
    from llmopt.sampling import PrioritySampling
    from llmopt.sampling.registry import strategy_from_name

    ir = example_functions[0]
    plain = [s.passes for s in PrioritySampling(tiny_lm).sample(ir, 9)]
    # Excluding the greedy answer: the next 8 lists, in the same order, and 8 of them.
    skipped = [s.passes for s in PrioritySampling(tiny_lm, exclude=[plain[0]]).sample(ir, 8)]
    assert skipped == plain[1:]
    nooz = strategy_from_name("priority_nooz", lm=tiny_lm).sample(ir, 8)
    assert len(nooz) == 8 and ["default<Oz>"] not in [s.passes for s in nooz]


def test_priority_rerank_reorders_the_pool_by_confidence_per_pass(tiny_lm, example_functions):
    from llmopt.sampling import PrioritySampling
    from llmopt.sampling.priority import per_pass_logprob
    from llmopt.sampling.registry import strategy_from_name

    ir = example_functions[0]
    plain = PrioritySampling(tiny_lm).sample(ir, 12)
    reranked = PrioritySampling(tiny_lm, rerank=8).sample(ir, 12)
    # The pool (the first 8 lists) in order of log p / passes; the lists after it untouched.
    assert sorted(map(tuple, (s.passes for s in reranked[:8]))) == sorted(tuple(s.passes) for s in plain[:8])
    keys = [per_pass_logprob(s) for s in reranked[:8]]
    assert keys == sorted(keys, reverse=True)
    assert [s.passes for s in reranked[:8]] != [s.passes for s in plain[:8]]  # it did reorder them
    assert [s.passes for s in reranked[8:]] == [s.passes for s in plain[8:]]
    # Fewer samples than the pool: still drawn from the whole pool (the best per pass come first).
    assert [s.passes for s in PrioritySampling(tiny_lm, rerank=8).sample(ir, 3)] == [s.passes for s in reranked[:3]]
    by_name = strategy_from_name("priority_rerank8", lm=tiny_lm).sample(ir, 12)
    assert [s.passes for s in by_name] == [s.passes for s in reranked]
    assert strategy_from_name("priority_rerank", lm=tiny_lm).rerank == 30
    with pytest.raises(ValueError):
        PrioritySampling(tiny_lm, rerank=-1)


def test_priority_options_and_nucleus(tiny_lm, example_functions):
    from llmopt.sampling import NucleusSampling, PrioritySampling

    ir = example_functions[1]
    for kwargs in ({"max_branch": 3}, {"priority": "geometric"}, {"priority": "token"}, {"grammar": False}):
        samples = PrioritySampling(tiny_lm, **kwargs).sample(ir, 6)
        assert len({tuple(s.passes) for s in samples}) == len(samples) >= 1
    first = NucleusSampling(tiny_lm, temperature=1.0, seed=3).sample(ir, 5)
    again = NucleusSampling(tiny_lm, temperature=1.0, seed=3).sample(ir, 5)
    assert [s.passes for s in first] == [s.passes for s in again]  # seeded
    for s in first:
        check_pass_list(s.passes)


def test_grammar_processor_masks_hf_scores(tiny_lm):
    import torch

    from llmopt.sampling import PassListGrammar

    grammar: PassListGrammar = tiny_lm.grammar
    oz = grammar.pass_ids["default<Oz>"]
    scores = torch.zeros(1, grammar.vocab_size)
    ids = torch.tensor([[grammar.open_id, oz]])
    masked = grammar(ids, scores)
    assert torch.isinf(masked[0, grammar.pass_ids["default<O2>"]])  # a second meta-pass is illegal
    assert torch.isfinite(masked[0, grammar.pass_ids["instcombine"]])
    assert torch.isfinite(masked[0, grammar.close_id])
    assert torch.isinf(grammar(torch.tensor([[grammar.open_id]]), scores)[0, grammar.close_id])  # not empty
    assert grammar.is_valid([oz, grammar.close_id]) and not grammar.is_valid([oz])


def test_baselines_unique_and_seeded(example_functions):
    from llmopt.sampling import Coreset, RandomSearch

    ir = example_functions[0]
    a = RandomSearch(seed=1).sample(ir, 20)
    assert [s.passes for s in a] == [s.passes for s in RandomSearch(seed=1).sample(ir, 20)]
    assert len({tuple(s.passes) for s in a}) == 20
    for s in a:
        check_pass_list(s.passes)
    core = Coreset([["sroa"], ["default<Oz>"], ["sroa"], ["gvn", "dce"], ["sroa"], ["default<Oz>"]])
    assert [s.passes for s in core.sample(ir, 2)] == [["sroa"], ["default<Oz>"]]


def test_priority_over_a_list_set_ranks_exactly_that_set(tiny_lm, example_functions):
    """`priority_lists`: every sample is one of the given lists, each once, in the order of the model's
    probability of the list (renormalized over the trie), computed here list by list."""
    from llmopt.sampling.registry import strategy_from_name

    passes = [p for p in tiny_lm.passes if not p.startswith("default<")]
    metas = [p for p in tiny_lm.passes if p.startswith("default<")]
    vocabulary = [[metas[0]], [passes[0]], [passes[0], passes[1]], [passes[1], metas[0]], [passes[2], passes[0]],
                  [passes[0]],  # a duplicate: kept once
                  ["no-such-pass"], [metas[0], metas[1]]]  # not valid lists of this model: dropped
    narrowed = tiny_lm.restricted_to(vocabulary)
    assert narrowed.grammar.dropped == 2 and len(narrowed.grammar.lists) == 5
    assert narrowed.model is tiny_lm.model and tiny_lm.grammar is not narrowed.grammar  # shared weights only

    ir = example_functions[0]
    samples = strategy_from_name("priority_lists", lm=tiny_lm, list_vocabulary=vocabulary).sample(ir, 10)
    assert sorted(tuple(s.passes) for s in samples) == sorted(tuple(p) for p in narrowed.grammar.lists)

    decoder = narrowed.decoder(ir)
    grammar = narrowed.grammar
    exact = {}
    for lst in narrowed.grammar.lists:
        ids = [grammar.pass_ids[p] for p in lst] + [grammar.close_id]
        exact[tuple(lst)] = sum(float(decoder.masked_logprobs(ids[:i])[t]) for i, t in enumerate(ids))
    assert [s.logprob for s in samples] == pytest.approx([exact[tuple(s.passes)] for s in samples], abs=1e-4)
    assert [tuple(s.passes) for s in samples] == sorted(exact, key=lambda k: -exact[k])
    with pytest.raises(ValueError, match="list vocabulary"):
        strategy_from_name("priority_lists", lm=tiny_lm)
    with pytest.raises(ValueError, match="none of the lists"):
        tiny_lm.restricted_to([["no-such-pass"]])


def test_read_list_vocabulary_forms(tmp_path):
    import gzip
    import json

    from llmopt.sampling.baselines import read_list_vocabulary

    lists = [["default<Oz>"], ["mem2reg", "instcombine"]]
    (tmp_path / "plain.json").write_text(json.dumps(lists))
    with gzip.open(tmp_path / "matrix.json.gz", "wt") as f:
        json.dump({"lists": lists, "rows": {}}, f)
    assert read_list_vocabulary(tmp_path / "plain.json") == lists
    assert read_list_vocabulary(tmp_path / "matrix.json.gz") == lists
    (tmp_path / "bad.json").write_text(json.dumps({"lists": "mem2reg"}))
    for bad in ("bad.json", "missing.json"):
        with pytest.raises(ValueError, match="list"):
            read_list_vocabulary(tmp_path / bad)
