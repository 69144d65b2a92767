"""training.device_plan: a plan's runs packed into parts the device tool returns, and fetched back intact."""

import json

import pytest
import torch

from training import device_plan

SMALL = {"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 2,
         "intermediate_size": 64}


def _saved_model(directory, vocab=300, seed=0):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    LlamaForCausalLM(LlamaConfig(vocab_size=vocab, **SMALL)).save_pretrained(str(directory))
    (directory / "llmopt.json").write_text("{}")


def _plan(tmp_path, names):
    config = tmp_path / "c.json"
    config.write_text("{}")
    plan = {"minutes": 1, "runs": [{"name": n, "config": str(config)} for n in names]}
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    return path


def test_plans_are_checked(tmp_path):
    path = _plan(tmp_path, ["a", "a"])
    with pytest.raises(ValueError, match="distinct names"):
        device_plan.load_plan(path)
    path.write_text(json.dumps({"minutes": 1, "runs": [{"name": "a", "config": "missing.json"}]}))
    with pytest.raises(FileNotFoundError, match="missing.json"):
        device_plan.load_plan(path)
    assert device_plan._command({"config": "c.json", "set": {"lr": 0.001, "init_from": None}}, "D", tmp_path, 2)[-6:] \
        == ["--set", "max_minutes=2", "--set", "lr=0.001", "--set", "init_from=null"]


def test_pack_and_fetch_round_trip_best_models_first(tmp_path, monkeypatch):
    from safetensors.torch import load_file

    plan = device_plan.load_plan(_plan(tmp_path, ["x", "y"]))
    root = tmp_path / "runs"
    for name in ("x", "y"):
        for kind in ("best", "model"):
            _saved_model(root / name / kind, seed=len(name + kind))
        (root / name / "train_log.csv").write_text("step,loss\n1,2.0\n")
    one = sum(f.stat().st_size for f in (root / "x" / "best").iterdir())
    # room for the logs and about three bf16 models (half of float32): one final model must stay behind
    monkeypatch.setattr(device_plan, "PACK_LIMIT", int(one * 0.5 * 3.5))
    monkeypatch.setattr(device_plan, "PART_BYTES", 50_000)  # several parts
    stage = tmp_path / "stage"
    left_out = device_plan.collect(plan, root, stage)
    assert left_out == ["y/model"]
    parts = device_plan.pack(stage, tmp_path / "out")
    assert len(parts) > 1 and all(p.stat().st_size <= 50_000 for p in parts)

    device_plan.fetch(tmp_path / "out", tmp_path / "back")
    back = load_file(str(tmp_path / "back" / "x" / "best" / "model.safetensors"))
    original = load_file(str(root / "x" / "best" / "model.safetensors"))
    assert all(back[k].dtype == torch.bfloat16 for k in back)
    assert all(torch.equal(back[k], original[k].to(torch.bfloat16)) for k in original)
    assert (tmp_path / "back" / "y" / "train_log.csv").read_text().startswith("step,loss")
    assert not (tmp_path / "back" / "y" / "model").exists()

    # What the first call left out comes back in a second one (`--only`); `keep` chooses the models.
    assert device_plan.collect(plan, root, tmp_path / "second", only={"y/model"}) == []
    assert not (tmp_path / "second" / "x" / "best").exists() and (tmp_path / "second" / "y" / "model").exists()
    plan["runs"][0]["keep"] = []
    device_plan.collect(plan, root, tmp_path / "third")
    assert not (tmp_path / "third" / "x" / "best").exists() and (tmp_path / "third" / "y" / "model").exists()

    damaged = bytearray(parts[0].read_bytes())
    damaged[100] ^= 0xFF  # a damaged part is refused
    parts[0].write_bytes(bytes(damaged))
    with pytest.raises(ValueError, match="sha256"):
        device_plan.fetch(tmp_path / "out", tmp_path / "again")


def test_a_stage_after_a_run_starts_from_its_model_and_is_skipped_without_one(tmp_path):
    config = tmp_path / "c.json"
    config.write_text("{}")
    plan_path = tmp_path / "plan.json"
    plan_path.write_text(json.dumps({"minutes": 2, "runs": [
        {"name": "pre", "config": str(config), "minutes": 3},
        {"name": "ft", "config": str(config), "after": "pre", "init": "best"},
        {"name": "ft2", "config": str(config), "after": "pre", "minutes": 4}]}))
    plan = device_plan.load_plan(plan_path)
    assert device_plan.chain_minutes(plan) == 7
    assert "init_from=" + str(tmp_path / "pre" / "best") in device_plan._command(
        plan["runs"][1], "D", tmp_path / "ft", 2, tmp_path / "pre" / "best")
    # No model came out of `pre`: the stages after it are skipped, not started from scratch.
    assert device_plan._start(plan, plan["runs"][1], "D", tmp_path, 1) is None
    bad = {"minutes": 1, "runs": [{"name": "ft", "config": str(config), "after": "pre"},
                                  {"name": "pre", "config": str(config)}]}
    plan_path.write_text(json.dumps(bad))
    with pytest.raises(ValueError, match="earlier run"):
        device_plan.load_plan(plan_path)
