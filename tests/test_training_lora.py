"""LoRA: wrap a foreign HF checkpoint, add llmopt's tokens, train a few steps, merge into a plain model."""

import torch
from tokenizers import Tokenizer, models, pre_tokenizers, trainers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

from llmopt.dataset import read_rows
from llmopt.llvm.passes import vocabulary
from llmopt.model import load_meta, load_model, pass_token_ids
from training import lora
from training.config import LoraConfig, config_from_dict
from training.train import train


def _foreign_checkpoint(path, texts):
    """A small Llama with its own BPE tokenizer that knows nothing of llmopt."""
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=400, special_tokens=["<unk>", "<bos>", "<eos>"],
                                                       initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", bos_token="<bos>", eos_token="<eos>")
    fast.save_pretrained(str(path))
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(fast), hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=128, max_position_embeddings=2048)
    LlamaForCausalLM(config).save_pretrained(str(path))


def test_wrap_and_merge():
    torch.manual_seed(0)
    base = LlamaForCausalLM(LlamaConfig(vocab_size=100, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                        intermediate_size=64))
    before = base.model.layers[0].self_attn.q_proj.weight.clone()
    wrapped = lora.wrap(base, LoraConfig(r=4, alpha=8), train_embeddings=False)
    trainable = [n for n, p in wrapped.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in n for n in trainable)
    for name, p in wrapped.named_parameters():
        if "lora_B" in name:
            torch.nn.init.normal_(p)  # B starts at zero; make the adapter do something
    merged = lora.merge(wrapped)
    assert isinstance(merged, LlamaForCausalLM)
    assert not torch.allclose(merged.model.layers[0].self_attn.q_proj.weight, before)


def test_lora_finetune_foreign_checkpoint(data, tmp_path):
    base = tmp_path / "base"
    _foreign_checkpoint(base, [r["ir"] for r in read_rows(data, "train")])
    cfg = config_from_dict(dict(data_dir=str(data), out_dir=str(tmp_path / "run"), init_from=str(base),
                                context_length=2048, batch_size=2, max_steps=3, lr=1e-3, warmup_steps=1,
                                log_interval=1, checkpoint_interval=3, eval_interval=0, val_functions=0,
                                lora={"enabled": True, "r": 4, "alpha": 8}))
    final = train(cfg, progress=False)
    model, tok = load_model(final, engine="transformers")
    assert isinstance(model, LlamaForCausalLM)  # merged: loads without peft
    passes = load_meta(final).passes
    assert passes == vocabulary() and len(pass_token_ids(tok, passes)) == len(passes)
    assert model.get_input_embeddings().weight.shape[0] == len(tok)


def test_init_from_a_bf16_checkpoint_trains_float32_weights(tmp_path):
    """GPU exports are bf16 (training/device_export.py); fine-tuning one must not train in pure bf16."""
    from llmopt.model import default_model_dir, load_tokenizer
    from training.train import build_model

    tok = load_tokenizer(default_model_dir())
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                         intermediate_size=64)
    LlamaForCausalLM(config).to(torch.bfloat16).save_pretrained(str(tmp_path / "bf16"))
    cfg = config_from_dict(dict(data_dir="unused", out_dir=str(tmp_path / "run"), init_from=str(tmp_path / "bf16")))
    model, _ = build_model(cfg, vocabulary(), tok, tmp_path / "run")
    assert {p.dtype for p in model.parameters()} == {torch.float32}
