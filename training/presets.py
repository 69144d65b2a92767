"""Model presets: Llama-architecture configs trained from scratch (thesis §4.3.1 uses Llama 2 7B).

`tiny` trains on two CPU cores in minutes, `base` (~17M with an 8k vocabulary) is the GPU-trained size that
still comes back from the GPU machine (its files return at most 64 MiB: bf16 weights, 34 MB) and runs on
CPU, `small` is a ~70M model for a single GPU, and
`paper-7b` is the thesis configuration (32 layers, 32 heads, 4096 hidden, 2048 context); it is
only ever built as a config here.
"""

from __future__ import annotations

from typing import Any

PRESETS: dict[str, dict[str, Any]] = {
    "tiny": dict(hidden_size=256, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=4,
                 intermediate_size=704, max_position_embeddings=2048),
    "base": dict(hidden_size=384, num_hidden_layers=6, num_attention_heads=6, num_key_value_heads=6,
                 intermediate_size=1024, max_position_embeddings=2048),
    "small": dict(hidden_size=768, num_hidden_layers=8, num_attention_heads=12, num_key_value_heads=12,
                  intermediate_size=2048, max_position_embeddings=2048),
    "paper-7b": dict(hidden_size=4096, num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=32,
                     intermediate_size=11008, max_position_embeddings=2048),
}


def llama_config(preset: str, vocab_size: int, tokenizer: Any = None, **overrides: Any) -> Any:
    """A `LlamaConfig` for `preset`, sized to the tokenizer; `overrides` replace preset values
    (e.g. `max_position_embeddings` for the context length)."""
    from transformers import LlamaConfig

    if preset not in PRESETS:
        raise ValueError(f"unknown model preset {preset!r}; choose one of {', '.join(PRESETS)}")
    values = dict(PRESETS[preset], vocab_size=vocab_size, rms_norm_eps=1e-5, tie_word_embeddings=False,
                  rope_theta=10000.0, attention_bias=False, hidden_act="silu", initializer_range=0.02)
    if tokenizer is not None:
        values.update(bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                      pad_token_id=tokenizer.pad_token_id)
    values.update(overrides)
    return LlamaConfig(**values)


def count_parameters(config: Any) -> int:
    """Parameters of a Llama model with `config`, without building it (the 7B config is never instantiated)."""
    h, n, inter, v = config.hidden_size, config.num_hidden_layers, config.intermediate_size, config.vocab_size
    kv = config.num_key_value_heads * (h // config.num_attention_heads)
    per_layer = h * h * 2 + h * kv * 2 + 3 * h * inter + 2 * h
    return n * per_layer + v * h * (1 if config.tie_word_embeddings else 2) + h
