"""LoRA fine-tuning of any HF causal-LM checkpoint on llmopt data (peft).

A foreign checkpoint's tokenizer gets llmopt's format tags and pass tokens added (the embedding
matrix grows and is trained in full via `modules_to_save`); an llmopt checkpoint already has them.
After training, `merge` folds the adapters back so the result loads with plain `from_pretrained`.
"""

from __future__ import annotations

from typing import Any

from llmopt.model import format as fmt
from training.config import LoraConfig


def adapt_tokenizer(tokenizer: Any, passes: list[str]) -> int:
    """Add the format tags and pass tokens `tokenizer` lacks; returns how many tokens were added."""
    from tokenizers import AddedToken

    vocab = tokenizer.get_vocab()
    specials = [t for t in fmt.SPECIAL_TOKENS if t not in vocab]
    added = tokenizer.add_special_tokens({"additional_special_tokens": specials}) if specials else 0
    if tokenizer.pad_token is None:
        tokenizer.pad_token = fmt.PAD
    new = [AddedToken(fmt.pass_token(p), normalized=False, special=False) for p in passes
           if fmt.pass_token(p) not in vocab]
    added += tokenizer.add_tokens(new)
    return added


def wrap(model: Any, config: LoraConfig, train_embeddings: bool) -> Any:
    """`model` with LoRA adapters on `config.target_modules` (embeddings trained in full if asked)."""
    from peft import LoraConfig as PeftLoraConfig
    from peft import TaskType, get_peft_model

    peft_config = PeftLoraConfig(
        task_type=TaskType.CAUSAL_LM, r=config.r, lora_alpha=config.alpha, lora_dropout=config.dropout,
        target_modules=list(config.target_modules),
        modules_to_save=list(config.modules_to_save) if train_embeddings else None,
    )
    return get_peft_model(model, peft_config)


def merge(model: Any) -> Any:
    """The plain model with the adapters merged into its weights."""
    return model.merge_and_unload() if hasattr(model, "merge_and_unload") else model
