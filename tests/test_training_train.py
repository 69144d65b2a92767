"""A few training steps on real sample data: loss falls, resume continues, the export loads; validation metrics."""

import csv

import pytest

from llmopt.dataset import read_rows
from llmopt.model import format as fmt
from llmopt.model import load_meta, load_model
from training import validation
from training.config import config_from_dict
from training.train import answer_loss, lr_at, train
from training.validation import ValidationCallback, harness_measure

# A model much smaller than the `tiny` preset keeps the test to seconds.
SMALL = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 2,
         "intermediate_size": 128}


def _cfg(data, out, **kw):
    values = dict(data_dir=str(data), out_dir=str(out), model_overrides=SMALL, tokenizer_vocab_size=600,
                  context_length=1536, batch_size=4, max_steps=12, lr=3e-3, warmup_steps=2, log_interval=2,
                  checkpoint_interval=6, eval_interval=0, val_functions=0, seed=0)
    values.update(kw)
    return config_from_dict(values)


def _losses(out):
    return [float(r["loss"]) for r in csv.DictReader((out / "train_log.csv").open())]


def test_lr_schedule():
    cfg = config_from_dict({"lr": 1.0, "warmup_steps": 10, "max_steps": 110})
    assert lr_at(0, cfg) == pytest.approx(0.1) and lr_at(9, cfg) == pytest.approx(1.0)
    assert lr_at(60, cfg) == pytest.approx(0.55) and lr_at(110, cfg) == pytest.approx(0.1)
    # "minutes": the cosine ends at max_minutes of wall-clock time when that comes before max_steps
    timed = config_from_dict({"lr": 1.0, "warmup_steps": 10, "max_steps": 110, "max_minutes": 2,
                              "lr_schedule": "minutes"})
    assert lr_at(20, timed, 0.0) == pytest.approx(lr_at(20, cfg))  # the step count is still a cap
    assert lr_at(20, timed, 60.0) == pytest.approx(0.55) and lr_at(20, timed, 200.0) == pytest.approx(0.1)
    assert lr_at(5, timed, 200.0) == pytest.approx(0.6)  # warm-up is in steps either way
    with pytest.raises(ValueError, match="max_minutes"):
        config_from_dict({"lr_schedule": "minutes"})
    with pytest.raises(ValueError, match="lr_schedule"):
        config_from_dict({"lr_schedule": "epochs", "max_minutes": 1})


def test_answer_loss_is_the_models_loss_on_the_answer_tokens():
    import torch
    from transformers import LlamaForCausalLM

    from training.presets import llama_config

    torch.manual_seed(0)
    model = LlamaForCausalLM(llama_config("tiny", 300, **SMALL))
    ids = torch.randint(5, 300, (3, 40))
    labels = torch.full_like(ids, -100)
    mask = torch.ones_like(ids)
    for row, (start, end) in enumerate([(30, 40), (20, 33), (25, 28)]):  # answers end where padding starts
        labels[row, start:end] = ids[row, start:end]
        mask[row, end:] = 0
    batch = {"input_ids": ids, "labels": labels, "attention_mask": mask}
    ours = answer_loss(model, batch)
    ours.backward()
    assert float(ours) == pytest.approx(float(model(**batch).loss), rel=1e-5)
    assert model.model.layers[0].self_attn.q_proj.weight.grad is not None


def test_train_resume_export(data, tmp_path):
    out = tmp_path / "run"
    final = train(_cfg(data, out, max_steps=6), progress=False)
    losses = _losses(out)
    assert len(losses) == 3 and losses[-1] < losses[0]
    # Rerunning with more steps resumes from the step-6 checkpoint instead of starting over.
    train(_cfg(data, out), progress=False)
    steps = [int(r["step"]) for r in csv.DictReader((out / "train_log.csv").open())]
    assert steps == [2, 4, 6, 8, 10, 12]
    assert _losses(out)[-1] < losses[0]
    model, tok = load_model(final, engine="transformers")
    meta = load_meta(final)
    assert meta.extra["steps"] == 12 and meta.llvm_version == 19 and meta.extra["training_tokens"] > 0
    row = read_rows(data, "validation")[0]
    ids = tok(fmt.build_prompt(row["ir"]), return_tensors="pt", add_special_tokens=False)
    gen = model.generate(**ids, max_new_tokens=8, do_sample=False)
    fmt.parse_answer(tok.decode(gen[0]), meta.passes)  # garbage from 12 steps parses without raising


def test_validation_callback_metrics(data, tmp_path, harness, monkeypatch):
    out = tmp_path / "run"
    final = train(_cfg(data, out, max_steps=4, checkpoint_interval=4), progress=False)
    model, tok = load_model(final, engine="transformers")
    rows = read_rows(data, "validation")[:3]
    callback = ValidationCallback(rows, harness_measure(harness), load_meta(final).passes, max_new_tokens=24)
    metrics = callback(model, tok)
    assert {"improvement_over_oz", "autotuner_improvement", "valid_pass_lists"} <= set(metrics)
    assert metrics["autotuner_improvement"] >= 0
    # A perfect "model" (the dataset's own answers) scores the autotuner's improvement, exact IR, BLEU 1.
    texts = [fmt.build_answer(fmt.answer_from_row(r)) for r in rows]
    monkeypatch.setattr(validation, "generate_answers", lambda *args, **kw: texts)
    perfect = callback(model, tok)
    assert perfect["improvement_over_oz"] == pytest.approx(perfect["autotuner_improvement"])
    assert perfect["valid_pass_lists"] == 100 and perfect["instcount_input_mape"] == 0
    assert perfect["instcount_output_mape"] == 0 and perfect["ir_parses"] == 100
    assert perfect["ir_exact_match"] == 100 and perfect["ir_bleu"] == pytest.approx(1.0)


def test_max_minutes_stops_like_max_steps(data, tmp_path, capsys):
    out = tmp_path / "run"
    final = train(_cfg(data, out, max_steps=10_000, max_minutes=1e-6), progress=False)
    assert "(max_minutes," in capsys.readouterr().out
    steps = [int(r["step"]) for r in csv.DictReader((out / "train_log.csv").open())]
    assert steps == [1]  # at least one step per call, and the last step is logged
    meta = load_meta(final)
    assert meta.extra["steps"] == 1 and meta.extra["stop_reason"] == "max_minutes"
    assert (out / "checkpoint" / "trainer_state.json").exists()
    load_model(final, engine="torch")
    # The same command resumes from that checkpoint.
    train(_cfg(data, out, max_steps=3, max_minutes=0), progress=False)
    assert load_meta(final).extra["stop_reason"] == "max_steps" and load_meta(final).extra["steps"] == 3


def test_model_card_evaluation_table_reads_eval_results(tmp_path):
    import json

    from training.default_model import evaluation_table

    def cell(raw, backup):
        return {"overall_improvement_pct": raw, "oz_backup": {"overall_improvement_pct": backup}}

    (tmp_path / "results.json").write_text(json.dumps({
        "dataset": "data/x:test", "n_functions": 3, "samples": [1, 30],
        "methods": {"priority": {"samples": {"1": cell(-2.0, 0.5), "30": cell(1.0, 2.25)}},
                    "autotuner": {"samples": {"1": cell(2.7, 2.7)}}}}))
    lines = evaluation_table(tmp_path)
    assert "3 functions of `data/x:test`" in lines[0]
    assert "| priority | 0.50 | 2.25 |" in lines and "| autotuner | 2.70 |  |" in lines  # backup column, gaps kept
