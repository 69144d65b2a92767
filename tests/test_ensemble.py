"""Two models decoding as one (`llmopt.sampling.ensemble`): the mixture of their next-token distributions.

The members are untrained Llamas on the real tokenizer of conftest's `tiny_model_dir`: the fixture's model and a
copy with other weights (seeded), so the two distributions differ at every node.
"""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from tests.conftest import MAX_PASSES


@pytest.fixture(scope="module")
def other_model_dir(tiny_model_dir, tmp_path_factory):
    """`tiny_model_dir`'s tokenizer and passes with other (seeded) weights."""
    from transformers import LlamaForCausalLM

    out = tmp_path_factory.mktemp("other_model")
    shutil.copytree(tiny_model_dir, out, dirs_exist_ok=True)
    config = LlamaForCausalLM.from_pretrained(str(tiny_model_dir)).config
    torch.manual_seed(1)
    LlamaForCausalLM(config).save_pretrained(str(out))
    return out


def test_a_comma_joined_path_decodes_the_mixture_of_the_members(tiny_model_dir, other_model_dir, example_functions):
    from llmopt.sampling import PassListLM, PrioritySampling
    from llmopt.sampling.ensemble import EnsembleLM

    ensemble = PassListLM.load(f"{tiny_model_dir},{other_model_dir}", max_passes=MAX_PASSES)
    assert isinstance(ensemble, EnsembleLM) and len(ensemble.members) == 2
    a, b = (PassListLM.load(d, max_passes=MAX_PASSES) for d in (tiny_model_dir, other_model_dir))
    ir = example_functions[0]
    strategy = PrioritySampling(ensemble)
    samples = strategy.sample(ir, 6)
    decoder = strategy.last_decoder
    alone = [m.decoder(ir, reuse_cache=False) for m in (a, b)]
    prefixes = sorted(decoder.memo, key=len)
    assert len(prefixes) > 3 and len(prefixes[-1]) > 2
    for prefix in prefixes[:2] + prefixes[-2:]:
        rows = [d.logprobs(prefix) for d in alone]
        assert not torch.allclose(rows[0], rows[1], atol=1e-2), "the members must disagree for the test to mean much"
        mixture = torch.log((rows[0].exp() + rows[1].exp()) / 2)
        assert torch.allclose(decoder.memo[prefix], mixture, atol=1e-4)
    assert len({tuple(s.passes) for s in samples}) == 6
    assert decoder.tokens_run > 0 and decoder.tokens_run == sum(p.tokens_run for p in decoder.parts)


def test_a_model_mixed_with_itself_samples_as_it_does_alone(tiny_lm, example_functions):
    from llmopt.sampling import GreedyDecoding, PrioritySampling
    from llmopt.sampling.ensemble import EnsembleLM

    twice = EnsembleLM([tiny_lm, tiny_lm])
    for ir in example_functions[:2]:
        assert ([s.passes for s in PrioritySampling(twice).sample(ir, 8)]
                == [s.passes for s in PrioritySampling(tiny_lm).sample(ir, 8)])
        assert GreedyDecoding(twice).sample(ir)[0].passes == GreedyDecoding(tiny_lm).sample(ir)[0].passes


def test_members_must_share_the_pass_vocabulary(tiny_model_dir, other_model_dir, tmp_path):
    from llmopt.sampling import PassListLM

    shutil.copytree(other_model_dir, tmp_path / "m", dirs_exist_ok=True)
    meta = json.loads((tmp_path / "m" / "llmopt.json").read_text())
    meta["passes"] = meta["passes"][:-1]
    (tmp_path / "m" / "llmopt.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="do not share"):
        PassListLM.load(f"{tiny_model_dir},{tmp_path / 'm'}", max_passes=MAX_PASSES)


def test_an_ensemble_directory_names_its_members(tiny_model_dir, other_model_dir, tmp_path, example_functions):
    """The shipped model's form: `llmopt.json` with `members`; tokenizer and metadata are the first member's."""
    from llmopt.model.loading import ensemble_members, load_meta, load_model
    from llmopt.model.tokenizer import load_tokenizer
    from llmopt.sampling import PassListLM, PrioritySampling

    for name, source in (("a", tiny_model_dir), ("b", other_model_dir)):
        shutil.copytree(source, tmp_path / "ens" / name)
    (tmp_path / "ens" / "llmopt.json").write_text(json.dumps({"members": ["a", "b"]}))
    directory = tmp_path / "ens"
    assert ensemble_members(directory) == [directory / "a", directory / "b"]
    assert ensemble_members(tiny_model_dir) is None
    lm = PassListLM.load(directory, max_passes=MAX_PASSES)
    joined = PassListLM.load(f"{tiny_model_dir},{other_model_dir}", max_passes=MAX_PASSES)
    assert lm.path == str(directory) and [m.path for m in lm.members] == [str(directory / "a"), str(directory / "b")]
    ir = example_functions[1]
    assert ([s.passes for s in PrioritySampling(lm).sample(ir, 5)]
            == [s.passes for s in PrioritySampling(joined).sample(ir, 5)])
    assert load_meta(directory).passes == load_meta(tiny_model_dir).passes
    assert load_tokenizer(directory).get_vocab() == load_tokenizer(tiny_model_dir).get_vocab()
    with pytest.raises(ValueError, match="ensemble"):
        load_model(directory)
    # `weights` in the manifest: the mixture leans to the first member.
    (directory / "llmopt.json").write_text(json.dumps({"members": ["a", "b"], "weights": [3, 1]}))
    weighted = PassListLM.load(directory, max_passes=MAX_PASSES).decoder(ir, reuse_cache=False)
    rows = [m.decoder(ir, reuse_cache=False).logprobs([]) for m in joined.members]
    assert torch.allclose(weighted.logprobs([]), torch.log(0.75 * rows[0].exp() + 0.25 * rows[1].exp()), atol=1e-4)


def test_int8_loads_a_member_stored_in_bfloat16(tiny_model_dir, tmp_path, example_functions):
    """The shipped `base` member is stored in bfloat16; `--int8` quantizes float32 layers, so it upcasts first."""
    from llmopt.sampling import PassListLM, PrioritySampling
    from training.device_export import copy_bf16

    copy_bf16(tiny_model_dir, tmp_path / "bf16")
    plain = PassListLM.load(tmp_path / "bf16", max_passes=MAX_PASSES)
    assert plain.model.lm_head.weight.dtype == torch.bfloat16
    lm = PassListLM.load(f"{tiny_model_dir},{tmp_path / 'bf16'}", int8=True, max_passes=MAX_PASSES)
    assert lm.members[1].model.lm_head.weight.dtype == torch.float32
    assert len(PrioritySampling(lm).sample(example_functions[0], 4)) == 4


def test_training_refuses_to_start_from_an_ensemble_directory(tiny_model_dir, tmp_path):
    import dataclasses

    from training.config import TrainConfig
    from training.train import build_model

    shutil.copytree(tiny_model_dir, tmp_path / "ens" / "a")
    (tmp_path / "ens" / "llmopt.json").write_text(json.dumps({"members": ["a"]}))
    cfg = dataclasses.replace(TrainConfig(), init_from=str(tmp_path / "ens"))
    with pytest.raises(ValueError, match="start from one of its members"):
        build_model(cfg, [], None, tmp_path / "out")


def test_an_ensemble_inside_an_ensemble_is_flattened(tiny_model_dir, other_model_dir, example_functions):
    """`--model llmopt/model/default,mine` mixes the shipped ensemble's members with `mine`: one flat mixture."""
    from llmopt.sampling import PassListLM
    from llmopt.sampling.ensemble import EnsembleLM

    a, b = (PassListLM.load(d, max_passes=MAX_PASSES) for d in (tiny_model_dir, other_model_dir))
    nested = EnsembleLM([EnsembleLM([a, b]), a])
    assert [m.path for m in nested.members] == [a.path, b.path, a.path]
    assert nested.log_weights.exp().tolist() == pytest.approx([0.25, 0.25, 0.5])
    ir = example_functions[0]
    rows = [m.decoder(ir, reuse_cache=False).logprobs([]) for m in (a, b)]
    mixture = torch.log(0.75 * rows[0].exp() + 0.25 * rows[1].exp())
    assert torch.allclose(nested.decoder(ir).logprobs([]), mixture, atol=1e-4)


def test_a_gate_lets_the_first_member_answer_alone_where_its_greedy_list_is_probable(
        tiny_model_dir, other_model_dir, example_functions):
    """The cascade (`gate`): the first member's greedy-list probability p decides; gate <= p: the first member
    alone (its samples, its cost), gate > p: the mixture (the ungated ensemble's samples)."""
    import math

    from llmopt.sampling import GreedyDecoding, PassListLM, PrioritySampling
    from llmopt.sampling.ensemble import EnsembleDecoder, EnsembleLM

    a, b = (PassListLM.load(d, max_passes=MAX_PASSES) for d in (tiny_model_dir, other_model_dir))
    ir = example_functions[0]
    p = math.exp(GreedyDecoding(a).sample(ir)[0].logprob)
    assert 0.001 < p < 0.999, "an untrained member's greedy list must be neither sure nor impossible"
    alone = [s.passes for s in PrioritySampling(a).sample(ir, 6)]
    mixed = [s.passes for s in PrioritySampling(EnsembleLM([a, b])).sample(ir, 6)]
    assert alone != mixed, "the members must disagree for the test to mean much"
    for gate, expected in ((p * 0.99, alone), (min(p * 1.01, 0.9999), mixed)):
        cascade = EnsembleLM([a, b], gate=gate)
        strategy = PrioritySampling(cascade)
        assert [s.passes for s in strategy.sample(ir, 6)] == expected
        assert isinstance(strategy.last_decoder, EnsembleDecoder) == (expected is mixed)
    confident = EnsembleLM([a, b], gate=p * 0.99).decoder(ir)
    assert confident.tokens_run == a.decoder(ir).tokens_run + len(GreedyDecoding(a).sample(ir)[0].passes), \
        "a confident prompt costs the first member's prompt and greedy list, nothing of the second member"
    for bad in (0.0, 1.0, -0.5):
        with pytest.raises(ValueError, match="gate"):
            EnsembleLM([a, b], gate=bad)


def test_an_ensemble_directory_sets_its_gate_and_a_narrowed_cascade_keeps_its_grammar(
        tiny_model_dir, other_model_dir, tmp_path, example_functions):
    from llmopt.sampling import PassListLM, PrioritySampling

    for name, source in (("a", tiny_model_dir), ("b", other_model_dir)):
        shutil.copytree(source, tmp_path / "ens" / name)
    (tmp_path / "ens" / "llmopt.json").write_text(json.dumps({"members": ["a", "b"], "gate": 1e-9}))
    lm = PassListLM.load(tmp_path / "ens", max_passes=MAX_PASSES)
    assert lm.gate == 1e-9
    lists = [["instcombine"], ["simplifycfg", "instcombine"], ["mem2reg"]]
    narrowed = lm.restricted_to(lists)
    strategy = PrioritySampling(narrowed)
    samples = strategy.sample(example_functions[1], 3)
    assert sorted(s.passes for s in samples) == sorted(lists)
    assert strategy.last_decoder.lm is narrowed, "the gated decoder must decode under the narrowed grammar"
