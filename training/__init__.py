"""Tokenizer training, model presets, the training loop, LoRA and validation (imports llmopt; never the reverse)."""
