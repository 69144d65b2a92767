"""The set loss: which lists a function teaches, and that one packed forward pass scores each of them
exactly as separate forward passes would."""

import math

import pytest
import torch

from llmopt.model import default_model_dir, load_tokenizer
from training.data import collate, encode_rows
from training.presets import llama_config
from training.set_loss import (
    collate_sets,
    encode_set_rows,
    function_weights,
    log_coverage,
    matrix_best,
    set_loss,
    target_sets,
)
from training.train import answer_loss

SMALL = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 2,
         "intermediate_size": 128}
IR = "define i32 @f(i32 %a) {\n  %b = add i32 %a, 0\n  ret i32 %b\n}\n"
O1, O2 = ["default<O1>"], ["default<O2>"]
O1_DCE = ["default<O1>", "adce"]
GVN = ["gvn", "instcombine"]


def _row(h, best=10, oz=14, ties=(O1,)):
    good = [{"passes": list(t), "instcount": best} for t in ties] + [{"passes": ["default<Oz>"], "instcount": oz}]
    return {"ir": IR, "ir_hash": h, "passes": list(ties[0]), "instcount_input": 20, "instcount_oz": oz,
            "instcount_best": best, "good_lists": good}


def test_target_sets_weights_members_by_their_share_of_the_best_saving():
    matrix = {"lists": [O2, GVN, O1_DCE], "rows": {"a": {"oz": 14, "hits": [[0, 12], [1, 10], [2, 10]]}}}
    rows = [_row("a", ties=(O1, O1_DCE)), _row("b", best=14, oz=14)]
    sets = target_sets(rows, [O1, O1], matrix, max_members=8)
    # O1 and GVN reach the best (weight 1), O2 half of the saving; O1 + adce is O1 with a no-op pass: left out.
    assert sets[0] == [(O1, 1.0), (GVN, 1.0), (O2, 0.5)]
    assert sets[1] == [(O1, 1.0)]  # nothing beats -Oz: the main label alone (plain cross-entropy)
    assert len(target_sets(rows, [O1, O1], matrix, max_members=2)[0]) == 2


def _model():
    from transformers import LlamaForCausalLM

    tok = load_tokenizer(default_model_dir())
    torch.manual_seed(0)
    return LlamaForCausalLM(llama_config("tiny", len(tok), tok, **SMALL)), tok


def test_one_member_of_weight_one_is_the_answer_loss():
    model, tok = _model()
    rows = [_row("a"), {**_row("b"), "ir": IR.replace("add", "sub")}]
    sets = [[(O1, 1.0)], [(O2, 1.0)]]
    examples, skipped = encode_set_rows(rows, sets, tok, 4096)
    plain, _ = encode_rows(rows, tok, 4096, with_ir=False, targets=[[O1], [O2]])
    assert skipped == 0
    ours = set_loss(model, collate_sets(examples, tok.pad_token_id))
    assert ours.item() == pytest.approx(answer_loss(model, collate(plain, tok.pad_token_id)).item(), rel=1e-5)


@torch.no_grad()
def _list_logprob(model, tok, prompt_ids, pass_ids):
    ids = torch.tensor([prompt_ids + pass_ids])
    logits = model(input_ids=ids).logits[0].float().log_softmax(-1)
    p = len(prompt_ids)
    return sum(float(logits[p - 1 + i, t]) for i, t in enumerate(pass_ids))


def test_packed_members_score_as_separate_forward_passes():
    model, tok = _model()
    sets = [[(O1, 1.0), (GVN, 1.0), (O2, 0.5)]]
    examples, _ = encode_set_rows([_row("a")], sets, tok, 4096)
    ex = examples[0]
    p = ex["prompt_len"]
    batch = collate_sets(examples + [{**ex, "members": ex["members"][:1], "length": len(ex["input_ids"])}],
                         tok.pad_token_id)  # a second, shorter sequence: padding must not change the first
    got = set_loss(model, batch)
    prompt = ex["input_ids"][:p]
    scores = [_list_logprob(model, tok, prompt, ids) + logw for ids, logw in ex["members"]]
    # Both functions share the main answer's counts and EOS tokens, scored by plain cross-entropy.
    counts = ex["input_ids"][p + len(ex["members"][0][0]):]
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ex["input_ids"]])).logits[0].float().log_softmax(-1)
    ce = -sum(float(logits[p + len(ex["members"][0][0]) + i - 1, t]) for i, t in enumerate(counts))
    lse = math.log(sum(math.exp(s) for s in scores))
    expected = (-lse - scores[0] + 2 * ce) / (2 * (len(ex["input_ids"]) - p))
    assert got.item() == pytest.approx(expected, rel=1e-4)
    got.backward()
    assert model.model.layers[0].self_attn.q_proj.weight.grad is not None


def test_coverage_is_the_chance_that_k_samples_reach_the_share():
    q = torch.tensor([1e-30, 1e-9, 0.01, 0.3, 0.9, 1.0], dtype=torch.float64, requires_grad=True)
    for k in (2, 10, 30):
        got = log_coverage(q.log(), k)
        want = [math.log(k * x) if x < 1e-8 else math.log(1 - (1 - x) ** k) for x in q.tolist()]
        assert got.tolist() == pytest.approx(want, rel=1e-6)
        got.sum().backward()
        assert torch.isfinite(q.grad).all()
        q.grad = None
    assert torch.equal(log_coverage(q.log(), 1), q.log())
    # Saturation, the reason for it: at q = 0.3 ten samples almost surely hit, so pulling q up is worth
    # far less than at q = 0.01 (as d/d log q: the one-sample loss's is 1 at both).
    slope = torch.autograd.grad(log_coverage(q.log(), 10).sum(), q)[0]
    assert slope[3] * 0.3 < 0.2 and slope[2] * 0.01 > 0.9  # d log q / d log q = 1 for k = 1
    with pytest.raises(ValueError, match="coverage"):
        log_coverage(q.log(), 0)


def test_coverage_loss_scores_each_function_by_its_k_sample_share():
    model, tok = _model()
    sets = [[(O1, 1.0), (O2, 0.5)]]
    examples, _ = encode_set_rows([_row("a")], sets, tok, 4096)
    batch = collate_sets(examples, tok.pad_token_id)
    one, ten = set_loss(model, batch).item(), set_loss(model, batch, coverage=10).item()
    ex = examples[0]
    prompt = ex["input_ids"][: ex["prompt_len"]]
    q = sum(math.exp(_list_logprob(model, tok, prompt, ids) + logw) for ids, logw in ex["members"])
    tokens = len(ex["input_ids"]) - ex["prompt_len"]
    # Same counts cross-entropy in both: the difference is the function term alone.
    assert (one - ten) * tokens == pytest.approx(-math.log(q) + math.log(1 - (1 - q) ** 10), rel=1e-3)


def test_prompt_weight_adds_the_mean_next_token_loss_over_the_prompts():
    model, tok = _model()
    rows = [_row("a"), {**_row("b"), "ir": IR.replace("add i32 %a, 0", "mul i32 %a, %a\n  %c = sub i32 %b, 1")}]
    examples, _ = encode_set_rows(rows, [[(O1, 1.0), (O2, 0.5)], [(GVN, 1.0)]], tok, 4096)
    batch = collate_sets(examples, tok.pad_token_id)
    plain = set_loss(model, batch).item()
    with torch.no_grad():  # each prompt alone: next-token log-probs of its tokens 1..p-1
        lps = []
        for ex in examples:
            p = ex["prompt_len"]
            logits = model(input_ids=torch.tensor([ex["input_ids"][:p]])).logits[0].float().log_softmax(-1)
            lps += [float(logits[j, ex["input_ids"][j + 1]]) for j in range(p - 1)]
    expected = plain + 0.25 * -sum(lps) / len(lps)
    assert set_loss(model, batch, prompt_weight=0.25).item() == pytest.approx(expected, rel=1e-4)
    with pytest.raises(ValueError, match="set loss"):
        from training.config import config_from_dict

        config_from_dict({"prompt_loss_weight": 0.1, "with_ir": False})


def test_saving_weighting_scales_each_function_by_its_best_saving():
    rows = [_row("a", best=10, oz=14), _row("b", best=13, oz=14), _row("c", best=14, oz=14)]
    assert function_weights(rows, "function") == [1.0, 1.0, 1.0]
    assert function_weights(rows, "saving") == pytest.approx([4 / 2, 1 / 2, 1 / 2])  # savings 4, 1, (0 ->) 1
    assert function_weights(rows, "sqrt_saving") == pytest.approx([2 / (4 / 3), 1 / (4 / 3), 1 / (4 / 3)])
    with pytest.raises(ValueError, match="weighting"):
        function_weights(rows, "instructions")
    # A matrix list that beats the label's count sets the saving (c: 14 -> 11 saves 3).
    matrix = {"lists": [O2], "rows": {"c": {"oz": 14, "hits": [[0, 11]]}, "b": {"oz": 14, "hits": [[0, 13]]}}}
    best = [matrix_best(r, matrix) for r in rows]
    assert best == [10, 13, 11] and matrix_best(rows[0], None) == 10
    assert function_weights(rows, "saving", best) == pytest.approx([4 / (8 / 3), 1 / (8 / 3), 3 / (8 / 3)])

    model, tok = _model()
    two = [_row("a"), {**_row("b"), "ir": IR.replace("add", "sub")}]
    sets = [[(O1, 1.0), (O2, 0.5)], [(GVN, 1.0)]]
    plain, _ = encode_set_rows(two, sets, tok, 4096)
    weighted, _ = encode_set_rows(two, sets, tok, 4096, weights=[3.0, 0.5])
    per_fn = []
    for ex in plain:  # each function alone, unweighted: its loss times its answer tokens is its summed term
        per_fn.append(set_loss(model, collate_sets([ex], tok.pad_token_id)).item() * (len(ex["input_ids"])
                                                                                      - ex["prompt_len"]))
    counts_ce = []
    for ex in plain:  # the counts' cross-entropy is not weighted: only the set term is
        p, n = ex["prompt_len"], len(ex["members"][0][0])
        with torch.no_grad():
            lp = model(input_ids=torch.tensor([ex["input_ids"]])).logits[0].float().log_softmax(-1)
        counts_ce.append(-sum(float(lp[p + n + i - 1, t]) for i, t in enumerate(ex["input_ids"][p + n:])))
    tokens = sum(len(ex["input_ids"]) - ex["prompt_len"] for ex in plain)
    expected = sum(w * (t - ce) + ce for w, t, ce in zip([3.0, 0.5], per_fn, counts_ce, strict=True)) / tokens
    got = set_loss(model, collate_sets(weighted, tok.pad_token_id)).item()
    assert got == pytest.approx(expected, rel=1e-4)


def test_list_matrix_keeps_the_lists_that_beat_oz_and_resumes(data, tmp_path, harness):
    import gzip
    import json
    import shutil

    from data_pipeline import list_matrix
    from llmopt.dataset import read_rows

    d = tmp_path / "ds"
    shutil.copytree(data, d)
    lists = [["default<O1>"], ["mem2reg", "instcombine"], ["default<O3>"]]
    (d / "work").mkdir(exist_ok=True)
    (d / "work" / "broadcast.json").write_text(json.dumps(lists))
    out = list_matrix.build(d, "train", n_lists=3, improvable_only=False, workers=1, progress=False)
    matrix = list_matrix.load_matrix(d, "train")
    rows = read_rows(d, "train")
    assert out.exists() and matrix["lists"] == lists and set(matrix["rows"]) == {r["ir_hash"] for r in rows}
    for row in rows[:4]:
        got = {j: n for j, n in matrix["rows"][row["ir_hash"]]["hits"]}
        for j, res in enumerate(harness.evaluate_many(row["ir"], lists)):
            assert (j in got) == (res.instcount < row["instcount_oz"])
            assert got.get(j, res.instcount) == res.instcount
    # A finished chunk is never measured again: a resumed run merges what is on disk.
    chunk = d / "work" / "lists-train" / "chunk-00000.json.gz"
    saved = json.loads(gzip.decompress(chunk.read_bytes()))
    first = sorted(saved)[0]
    saved[first]["hits"] = [[0, -1]]
    chunk.write_bytes(gzip.compress(json.dumps(saved).encode()))
    list_matrix.build(d, "train", n_lists=3, improvable_only=False, workers=1, progress=False)
    assert list_matrix.load_matrix(d, "train")["rows"][first]["hits"] == [[0, -1]]
    with pytest.raises(SystemExit, match="other settings"):
        list_matrix.build(d, "train", n_lists=2, improvable_only=False, workers=1, progress=False)

    # A second matrix: the most frequent labels the first one lacks (never bare -Oz), on every function.
    labels = [tuple(r["passes"]) for r in rows]
    top = [list(ls) for ls, _ in __import__("collections").Counter(labels).most_common()]
    extra = list_matrix.frequent_lists(d, 3, lists)
    assert extra == [ls for ls in top if ls not in lists and ls != ["default<Oz>"]][:len(extra)]
    assert 0 < len(extra) <= 3 and not any(ls in lists for ls in extra)
    named = list_matrix.build(d, "train", improvable_only=False, workers=1, progress=False, name="frequent",
                              frequent=3)
    assert named.name == "lists-train-frequent.json.gz"
    assert list_matrix.load_matrix(d, "train")["lists"] == lists  # the first alone unless named
    assert list_matrix.load_matrix(d, "train", ["other"]) is None
    merged = list_matrix.load_matrix(d, "train", ["frequent"])
    assert merged["lists"] == lists + extra and set(merged["rows"]) == {r["ir_hash"] for r in rows}
    for row in rows[:3]:
        got = {tuple(merged["lists"][j]): n for j, n in merged["rows"][row["ir_hash"]]["hits"]}
        for ls, res in zip(extra, harness.evaluate_many(row["ir"], extra), strict=True):
            assert got.get(tuple(ls)) == (res.instcount if res.instcount < row["instcount_oz"] else None)


def test_merged_matrices_keep_the_union_of_hits_and_the_lower_count():
    from data_pipeline.list_matrix import merge_matrices

    a = {"lists": [["gvn"], ["sroa"]], "rows": {"x": {"oz": 9, "hits": [[1, 7]]}}}
    b = {"lists": [["sroa"], ["dse"]], "rows": {"x": {"oz": 9, "hits": [[0, 6], [1, 8]]}, "y": {"oz": 5, "hits": []}}}
    merged = merge_matrices([a, b])
    assert merged["lists"] == [["gvn"], ["sroa"], ["dse"]]
    assert merged["rows"] == {"x": {"oz": 9, "hits": [[1, 6], [2, 8]]}, "y": {"oz": 5, "hits": []}}


def test_training_with_the_set_loss_runs_and_needs_the_matrix(data, tmp_path):
    import json
    import shutil

    from data_pipeline import list_matrix
    from training.config import config_from_dict
    from training.train import train

    d = tmp_path / "ds"
    shutil.copytree(data, d)
    values = dict(data_dir=str(d), out_dir=str(tmp_path / "run"), model_overrides=SMALL, tokenizer_vocab_size=600,
                  context_length=1536, batch_size=4, max_steps=4, lr=3e-3, warmup_steps=1, log_interval=2,
                  checkpoint_interval=4, eval_interval=2, val_functions=0, with_ir=False,
                  target_policy="beyond_oz", set_members=4, seed=0, prompt_loss_weight=0.1)
    with pytest.raises(FileNotFoundError, match="list_matrix"):
        train(config_from_dict(values), progress=False)
    with pytest.raises(ValueError, match="extra_matrices"):
        config_from_dict({**values, "set_members": 0, "prompt_loss_weight": 0, "extra_matrices": "frequent"})
    (d / "work").mkdir(exist_ok=True)
    (d / "work" / "broadcast.json").write_text(json.dumps([["default<O1>"], ["mem2reg", "instcombine"]]))
    list_matrix.build(d, "train", n_lists=2, improvable_only=False, workers=1, progress=False)
    shutil.rmtree(tmp_path / "run")
    model_dir = train(config_from_dict(values), progress=False)
    meta = json.loads((model_dir / "llmopt.json").read_text())
    assert meta["extra"]["set_members"] == 4 and meta["extra"]["steps"] == 4
    assert meta["extra"]["prompt_loss_weight"] == 0.1
    # a named matrix that was never built is named in the error; once built, it trains and the card says so
    from training.default_model import model_card

    named = {**values, "out_dir": str(tmp_path / "run2"), "extra_matrices": "frequent"}
    with pytest.raises(FileNotFoundError, match="lists-train-frequent"):
        train(config_from_dict(named), progress=False)
    assert "list matrices" not in model_card(tmp_path / "run", model_dir, str(d), "cmd")
    list_matrix.build(d, "train", improvable_only=False, workers=1, progress=False, name="frequent", frequent=2)
    shutil.rmtree(tmp_path / "run2", ignore_errors=True)
    named_dir = train(config_from_dict(named), progress=False)
    assert "list matrices: the first and `frequent`" in model_card(tmp_path / "run2", named_dir, str(d), "cmd")
    # the validation loss is the set loss over the validation functions' stored good lists
    import csv

    val = list(csv.DictReader((tmp_path / "run" / "validation_log.csv").open()))
    assert [int(r["step"]) for r in val] == [2, 4] and all(0 < float(r["val_loss"]) < 20 for r in val)
    assert (tmp_path / "run" / "best" / "model.safetensors").exists()
    with pytest.raises(ValueError, match="set_members"):
        config_from_dict({**values, "set_members": 2, "with_ir": True, "target_policy": "best"})
