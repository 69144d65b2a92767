"""The plain-PyTorch Llama (`llmopt.model.llama`) against `transformers` on the same weights.

Inference uses it by default, so every number llmopt reports rests on it giving the same
tokens, logits and samples as the HF model that training exported.
"""

from __future__ import annotations

import pytest
import torch

from llmopt.model import format as fmt
from llmopt.model import llama
from llmopt.model.loading import default_model_dir, ensemble_members, load_model, single_model_dir
from llmopt.sampling import PassListLM, strategy_from_name

SHIPPED = single_model_dir()  # one model: the shipped ensemble's first member (tests/test_ensemble.py: the rest)


@pytest.fixture(scope="module")
def engines():
    """(torch model, tokenizer), (transformers model, tokenizer) of the shipped (first) model."""
    return load_model(SHIPPED, engine="torch"), load_model(SHIPPED, engine="transformers")


def _prompt_ids(tok, example_ir: str) -> list[int]:
    return tok(fmt.build_prompt(example_ir)[:2500], add_special_tokens=False)["input_ids"]


def test_default_model_runs_without_transformers(engines):
    import subprocess
    import sys

    (model, tok), (hf_model, _) = engines
    assert isinstance(model, llama.LlamaForInference)
    assert type(hf_model).__name__ == "LlamaForCausalLM"
    assert all(llama.supports(d) is None for d in ensemble_members(default_model_dir()) or [SHIPPED])
    # The point of the engine: loading and sampling never import transformers (cold start).
    code = ("import sys; from llmopt.cli import main; "
            "main(['predict', sys.argv[1], '--samples', '2', '--no-cache', '--json']); "
            "print(any(m.split('.')[0] == 'transformers' for m in sys.modules))")
    example = str(default_model_dir().parents[2] / "examples" / "example.ll")
    out = subprocess.run([sys.executable, "-c", code, example], capture_output=True, text=True, check=True)
    report, imported = out.stdout.strip().splitlines()[-2:]
    assert '"functions"' in report and imported == "False"


def test_tokenizer_matches_transformers(engines, example_ir):
    (_, tok), (_, hf_tok) = engines
    text = fmt.build_prompt(example_ir) + fmt.build_answer(fmt.Answer(["default<Oz>", "instcombine"], 10, 5))
    ids = tok(text, add_special_tokens=False)["input_ids"]
    assert ids == hf_tok(text, add_special_tokens=False)["input_ids"]
    assert tok.decode(ids) == hf_tok.decode(ids, skip_special_tokens=False)
    assert len(tok) == len(hf_tok) and tok.pad_token_id == hf_tok.pad_token_id
    assert tok.convert_tokens_to_ids(fmt.PASSES_OPEN) == hf_tok.convert_tokens_to_ids(fmt.PASSES_OPEN)


def test_logits_match_transformers_with_cache_and_crop(engines, example_ir):
    (model, tok), (hf_model, _) = engines
    ids = torch.tensor([_prompt_ids(tok, example_ir)])
    with torch.no_grad():
        ref = hf_model(input_ids=ids).logits[0]
    full = model(input_ids=ids).logits[0]
    assert torch.allclose(full, ref, atol=1e-4)
    # Incremental decoding through the cache, then cropping back and taking another branch.
    out = model(input_ids=ids[:, :100])
    out = model(input_ids=ids[:, 100:150], past_key_values=out.past_key_values)
    assert torch.allclose(out.logits[0], ref[100:150], atol=1e-4)
    out.past_key_values.crop(-20)
    assert out.past_key_values.get_seq_length() == 130
    out = model(input_ids=ids[:, 130:131], past_key_values=out.past_key_values)
    assert torch.allclose(out.logits[0, 0], ref[130], atol=1e-4)
    # The prompt's last row alone (logits_to_keep, as both engines take it) is the same row.
    for engine in (model, hf_model):
        with torch.no_grad():
            last = engine(input_ids=ids, logits_to_keep=1).logits[0]
        assert last.shape[0] == 1 and torch.allclose(last[0], ref[-1], atol=1e-4)


def test_greedy_generate_matches_transformers(engines, example_ir):
    (model, tok), (hf_model, _) = engines
    ids = torch.tensor([_prompt_ids(tok, example_ir)[:400]])
    stop = tok.convert_tokens_to_ids(fmt.EOS)
    ours = model.generate(ids, max_new_tokens=24, eos_token_id=[stop])
    with torch.no_grad():
        theirs = hf_model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=24, do_sample=False,
                                   eos_token_id=[stop], pad_token_id=tok.pad_token_id)
    assert ours.tolist() == theirs.tolist()


def test_priority_samples_identical_across_engines(example_ir):
    from llmopt.llvm.ir import normalize_ir, split_functions

    fn = normalize_ir(next(iter(split_functions(example_ir)))[1])
    samples = {}
    for engine in ("torch", "transformers"):
        lm = PassListLM.load(SHIPPED, engine=engine, max_passes=12)
        samples[engine] = [(c.passes, round(c.score, 4)) for c in strategy_from_name("priority", lm=lm).sample(fn, 6)]
    assert samples["torch"] == samples["transformers"] and len(samples["torch"]) == 6


def test_int8_keeps_the_candidates_and_their_probabilities(example_ir):
    """`--int8` quantizes the decoder's linear layers only.  Its rounding may flip a near tie between the
    first tokens of two lists (it does on the shipped model's first example function, 0.05 nats apart), so
    what must hold is Priority Sampling's candidate set and each list's log-probability (within 0.2 nats)."""
    from llmopt.llvm.ir import normalize_ir, split_functions

    fns = [normalize_ir(f) for _, f in split_functions(example_ir)][:3]
    lists = {}
    for int8 in (False, True):
        lm = PassListLM.load(SHIPPED, int8=int8, max_passes=12)
        lists[int8] = [{tuple(c.passes): c.logprob for c in strategy_from_name("priority", lm=lm).sample(fn, 3)}
                       for fn in fns]
    for plain, quantized in zip(lists[False], lists[True], strict=True):
        assert set(plain) == set(quantized)
        assert all(abs(plain[k] - quantized[k]) < 0.2 for k in plain), (plain, quantized)
    assert isinstance(lm.model.model.layers[0].mlp.up_proj, torch.ao.nn.quantized.dynamic.Linear)
    assert type(lm.model.lm_head) is torch.nn.Linear


def test_bf16_prefill_keeps_the_candidates_and_decodes_in_float32(example_ir):
    """`--prefill-dtype bfloat16` encodes the prompt with a bfloat16 copy of the weights, then decodes in float32
    from a float32 copy of the cache: the same candidates up to near ties (bf16 rounding may swap two branches
    whose priorities are ~0.01 nats apart, as it does for the 3rd and 4th list of the shipped model's third
    example function: so each side's first 3 lists are among the other's first 6), log-probabilities within 0.1
    nats, the decoder's cache float32 and equal (to bf16 rounding) to the one a float32 prefill writes."""
    from llmopt.llvm.ir import normalize_ir, split_functions

    fns = [normalize_ir(f) for _, f in split_functions(example_ir)][:3]
    lms = {dtype: PassListLM.load(SHIPPED, max_passes=12, prefill_dtype=dtype) for dtype in ("float32", "bfloat16")}
    assert lms["float32"].prefill_model is None
    assert lms["bfloat16"].prefill_model.lm_head.weight.dtype == torch.bfloat16
    assert lms["bfloat16"].model.lm_head.weight.dtype == torch.float32  # the decoding weights stay float32
    for fn in fns:
        lists = {dtype: {tuple(c.passes): c.logprob for c in strategy_from_name("priority", lm=lm).sample(fn, 6)}
                 for dtype, lm in lms.items()}
        for one, other in (("float32", "bfloat16"), ("bfloat16", "float32")):
            assert set(list(lists[one])[:3]) <= set(lists[other]), lists
        common = set(lists["float32"]) & set(lists["bfloat16"])
        assert all(abs(lists["float32"][k] - lists["bfloat16"][k]) < 0.1 for k in common), lists
    caches = {dtype: lm.decoder(fns[0])._cache for dtype, lm in lms.items()}
    assert caches["float32"].length == caches["bfloat16"].length > 0
    n = caches["float32"].length
    plain, mixed = caches["float32"].keys[-1][:, :, :n], caches["bfloat16"].keys[-1][:, :, :n]
    assert mixed.dtype == torch.float32
    assert torch.allclose(plain, mixed, atol=0.1, rtol=0.05)


def test_bf16_prefill_is_refused_where_it_cannot_run():
    """Explicit bfloat16 needs the torch engine's float32 model; `auto` then falls back to float32."""
    with pytest.raises(ValueError, match="torch engine"):
        PassListLM.load(SHIPPED, int8=True, prefill_dtype="bfloat16")
    with pytest.raises(ValueError, match="torch engine"):
        PassListLM.load(SHIPPED, engine="transformers", prefill_dtype="bfloat16")
    with pytest.raises(ValueError, match="unknown prefill dtype"):
        PassListLM.load(SHIPPED, prefill_dtype="float16")
    assert PassListLM.load(SHIPPED, int8=True, prefill_dtype="auto").prefill_model is None
    assert PassListLM.load(SHIPPED, engine="transformers", prefill_dtype="auto").prefill_model is None


def test_kv_cache_copy_in_another_dtype():
    cache = llama.KVCache(layers=2, kv_heads=1, head_dim=4, capacity=8, dtype=torch.bfloat16)
    k = torch.arange(12, dtype=torch.bfloat16).view(1, 1, 3, 4)
    for layer in range(2):
        cache.append(layer, k, -k, 0)
    cache.length = 3
    copy = cache.astype(torch.float32)
    assert copy.length == 3 and copy.keys[0].shape == (1, 1, 8, 4) and copy.keys[0].dtype == torch.float32
    assert torch.equal(copy.keys[1][:, :, :3], k.float()) and torch.equal(copy.values[0][:, :, :3], -k.float())


def test_grouped_query_attention_and_tied_embeddings_match(tmp_path):
    """Config variants the default model does not exercise: GQA, tied embeddings, biases."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=97, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                         tie_word_embeddings=True, attention_bias=True, rope_theta=500.0)
    LlamaForCausalLM(config).save_pretrained(str(tmp_path))
    hf_model = LlamaForCausalLM.from_pretrained(str(tmp_path)).eval()
    model = llama.LlamaForInference.from_pretrained(tmp_path)
    ids = torch.randint(0, 97, (1, 40))
    with torch.no_grad():
        ref = hf_model(input_ids=ids).logits[0]
    assert torch.allclose(model(input_ids=ids).logits[0], ref, atol=1e-4)
    out = model(input_ids=ids[:, :30])
    assert torch.allclose(model(input_ids=ids[:, 30:], past_key_values=out.past_key_values).logits[0], ref[30:],
                          atol=1e-4)
    with pytest.raises(ValueError, match="exceed the context"):
        model(input_ids=torch.zeros(1, 65, dtype=torch.long))


def test_unsupported_models_fall_back_or_fail_clearly(tmp_path):
    import json

    (tmp_path / "config.json").write_text(json.dumps({"model_type": "gpt2"}))
    (tmp_path / llama.WEIGHTS_FILE).write_bytes(b"")
    assert "gpt2" in llama.supports(tmp_path)
    with pytest.raises(ValueError, match="cannot run without transformers"):
        llama.LlamaForInference.from_pretrained(tmp_path)


def test_score_branches_matches_feeding_each_branch_alone_and_keeps_the_cache(engines, example_ir):
    """One forward for several one-token branches off the cached sequence (Priority Sampling's prefetch)."""
    from llmopt.sampling.lm import crop_cache

    (model, tok), _ = engines
    prompt = _prompt_ids(tok, example_ir)
    path = [11, 12, 13]
    cache = model(input_ids=torch.tensor([prompt + path])).past_key_values
    n = len(prompt)
    branches = [(n, 40), (n + 1, 41), (n + 3, 42), (n + 2, 40)]  # (depth: cached positions it continues, token)
    rows = model.score_branches([t for _, t in branches], [d for d, _ in branches], cache)
    assert cache.length == n + len(path), "the cache keeps its length"
    for (depth, token), row in zip(branches, rows, strict=True):
        alone = model(input_ids=torch.tensor([(prompt + path)[:depth] + [token]])).logits[0, -1]
        assert torch.allclose(row, alone, atol=1e-4), (depth, token)
    after = model(input_ids=torch.tensor([[14]]), past_key_values=cache).logits[0, -1]
    assert torch.allclose(after, model(input_ids=torch.tensor([prompt + path + [14]])).logits[0, -1], atol=1e-4), \
        "the branches' keys written past the end must not leak into the next step"
    crop_cache(cache, n)
    with pytest.raises(ValueError, match="prefix of the cache"):
        model.score_branches([40], [n + 1], cache)


def test_priority_sampling_prefetch_gives_the_same_samples_in_fewer_forwards(example_functions, monkeypatch):
    """The shipped (first) model on real functions: prefetching queued siblings changes the cost, not the answer."""
    from llmopt.sampling import PrioritySampling
    from llmopt.sampling.lm import TreeDecoder

    lm = PassListLM.load(SHIPPED)
    calls = {"forward": 0, "branches": 0}
    forward, branches = TreeDecoder._forward, lm.model.score_branches

    def counted_forward(self, *args, **kwargs):
        calls["forward"] += 1
        return forward(self, *args, **kwargs)

    def counted_branches(*args, **kwargs):
        calls["branches"] += 1
        return branches(*args, **kwargs)

    monkeypatch.setattr(TreeDecoder, "_forward", counted_forward)
    monkeypatch.setattr(lm.model, "score_branches", counted_branches)
    runs = {}
    for prefetch in (0, 8):
        calls.update(forward=0, branches=0)
        strategy = PrioritySampling(lm, exclude=[["default<Oz>"]], prefetch=prefetch)
        lists = [[s.passes for s in strategy.sample(ir, 10)] for ir in example_functions]
        runs[prefetch] = (lists, dict(calls))
    assert runs[8][0] == runs[0][0]
    assert runs[0][1]["branches"] == 0 < runs[8][1]["branches"]
    model_calls = {p: c["forward"] + c["branches"] for p, (_, c) in runs.items()}
    assert model_calls[8] < 0.8 * model_calls[0], runs


def test_tree_decoder_prefetch_memoizes_only_branches_off_the_cached_path(example_ir):
    lm = PassListLM.load(SHIPPED)
    decoder = lm.decoder(example_ir)
    path = (40, 41)  # any token ids: the rows are the model's, grammar or not
    decoder.logprobs(path)  # the working cache now holds the prompt and `path`
    on_path = [(50,), (path[0], 51), path + (52,)]
    off_path = [(60, 61), (path[0], 70, 71)]
    decoder.prefetch(on_path + off_path)
    fresh = lm.decoder(example_ir, reuse_cache=False)
    for prefix in on_path:
        assert prefix in decoder.memo
        assert torch.allclose(decoder.memo[prefix], fresh.logprobs(prefix), atol=1e-4), prefix
    assert not any(prefix in decoder.memo for prefix in off_path), "a parent off the cached path has no keys to see"
    assert torch.allclose(decoder.logprobs(path + (53,)), fresh.logprobs(path + (53,)), atol=1e-4)
