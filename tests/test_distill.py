"""Distillation (training/distill.py): the KL term, the teacher's targets at the set loss's positions, and a
fine-tune that learns from a teacher."""

import json

import pytest
import torch

from llmopt.model import load_tokenizer
from llmopt.model.loading import single_model_dir
from llmopt.sampling.lm import PassListLM
from training.distill import Teacher, distill_loss
from training.set_loss import collate_sets, encode_set_rows

TINY = single_model_dir()  # the shipped ensemble's first member
IR = "define i32 @f(i32 %a) {\n  %b = add i32 %a, 0\n  %c = mul i32 %b, 1\n  ret i32 %c\n}\n"


def test_distill_loss_is_zero_at_the_teacher_and_pulls_the_student_toward_it():
    torch.manual_seed(0)
    teacher_logits = torch.randn(5, 12)
    allowed = torch.rand(5, 12) < 0.6
    allowed[:, 0] = True
    teacher_lp = torch.log_softmax(teacher_logits.masked_fill(~allowed, float("-inf")), dim=-1)
    # The student's logits on forbidden tokens do not count: only its distribution over the allowed ones.
    same = teacher_logits + 3.0 + torch.where(allowed, 0.0, 50.0)
    assert distill_loss(same, teacher_lp).item() == pytest.approx(0.0, abs=1e-6)
    student = torch.zeros(5, 12, requires_grad=True)
    before = distill_loss(student, teacher_lp)
    assert before.item() > 0.01
    before.backward()
    with torch.no_grad():
        student -= 5.0 * student.grad
    assert distill_loss(student, teacher_lp).item() < before.item()
    empty = distill_loss(student, torch.empty(0, 0))
    assert empty.item() == 0.0


def _examples(tok):
    row = {"ir": IR, "ir_hash": "a", "passes": ["instcombine"], "instcount_input": 4, "instcount_oz": 3,
           "instcount_best": 2, "good_lists": []}
    sets = [[(["instcombine"], 1.0), (["mem2reg", "instcombine", "adce"], 0.5)]]
    return encode_set_rows([row], sets, tok, 4096)[0]


def test_teacher_targets_are_the_decoders_distributions_at_the_set_loss_positions():
    lm = PassListLM.load(TINY, prefill_dtype="float32")
    tok = load_tokenizer(TINY)  # the trainer's (a batch-encoding transformers tokenizer)
    examples = _examples(tok)
    rows, lp = Teacher(lm).targets(examples)
    batch = collate_sets(examples, tok.pad_token_id)
    members = [tokens for tokens, _ in examples[0]["members"]]
    # every scored position but the two that predict <passes> itself
    assert len(rows) == sum(len(m) - 1 for m in members) == lp.shape[0]
    assert lm.open_id not in batch["at_tok"][rows].tolist()
    decoder = lm.decoder(IR)
    second = len(members[0]) + 2  # the second member's third token: after <passes> mem2reg
    at = rows.tolist().index(second)
    assert torch.allclose(lp[at], decoder.masked_logprobs(members[1][1:2]))
    assert batch["at_tok"][second].item() == members[1][2]
    # the tokens the lists continue with are ones the grammar allows
    assert torch.isfinite(lp.gather(1, batch["at_tok"][rows][:, None])).all()


def test_a_student_sharing_the_teachers_tokenizer_trains_and_a_foreign_one_is_refused(data, tmp_path):
    import shutil

    from data_pipeline import list_matrix
    from training.config import config_from_dict
    from training.train import train

    d = tmp_path / "ds"
    shutil.copytree(data, d)
    (d / "work").mkdir(exist_ok=True)
    (d / "work" / "broadcast.json").write_text(json.dumps([["default<O1>"], ["mem2reg", "instcombine"]]))
    list_matrix.build(d, "train", n_lists=2, improvable_only=False, workers=1, progress=False)
    values = dict(data_dir=str(d), out_dir=str(tmp_path / "run"), init_from=str(TINY), context_length=4608,
                  batch_size=2, max_steps=2, lr=1e-4, warmup_steps=1, log_interval=1, checkpoint_interval=2,
                  eval_interval=0, val_functions=0, with_ir=False, target_policy="beyond_oz", set_members=4,
                  seed=0, max_train_examples=8, distill_from=str(TINY), distill_weight=2.0)
    model_dir = train(config_from_dict(values), progress=False)
    meta = json.loads((model_dir / "llmopt.json").read_text())
    assert meta["extra"]["distill_from"] == str(TINY) and meta["extra"]["distill_weight"] == 2.0
    foreign = {**values, "init_from": None, "model_preset": "tiny", "tokenizer_vocab_size": 600,
               "out_dir": str(tmp_path / "foreign"), "model_overrides": {"hidden_size": 64, "num_hidden_layers": 1,
                                                                        "num_attention_heads": 2,
                                                                        "intermediate_size": 64}}
    with pytest.raises(ValueError, match="tokenizer is not the student's"):
        train(config_from_dict(foreign), progress=False)
    with pytest.raises(ValueError, match="set_members"):
        config_from_dict({**values, "set_members": 0})
