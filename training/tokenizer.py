"""Train the IR tokenizer: byte-level BPE on normalized IR, passes and format tags as single tokens.

Byte-level BPE (as in sentencepiece with byte fallback, but lossless by construction) trained
with the HF `tokenizers` library.  Pre-tokenization splits lines apart and every digit on its
own (as Llama does), so instruction counts and value numbers are spelled digit by digit and
merges never cross a newline; merges *do* cross spaces, so frequent IR phrases such as
" = load i32, ptr" become one token.  Passes are added tokens (" instcombine"), matched before
BPE, so a pass is always exactly one token; the format tags are special tokens.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from llmopt.model import format as fmt
from llmopt.model.tokenizer import ModelMeta, load_tokenizer


def train_tokenizer(
    texts: Iterable[str],
    passes: list[str],
    out_dir: str | Path,
    *,
    vocab_size: int = 4096,
    llvm_version: int | None = None,
    min_frequency: int = 2,
) -> Any:
    """Train on `texts` (IR), add the pass and format tokens, save to `out_dir`, return the loaded tokenizer."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex("\n"), behavior="isolated"),
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=list(fmt.SPECIAL_TOKENS),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer)
    # Passes: normal (not special) added tokens, so decode(skip_special_tokens=True) keeps them.
    tok.add_tokens([AddedToken(fmt.pass_token(p), normalized=False, special=False) for p in passes])
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=fmt.BOS,
        eos_token=fmt.EOS,
        pad_token=fmt.PAD,
        additional_special_tokens=[t for t in fmt.SPECIAL_TOKENS if t not in (fmt.BOS, fmt.EOS, fmt.PAD)],
        clean_up_tokenization_spaces=False,
        model_max_length=1_000_000,
    )
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    fast.save_pretrained(str(out_dir))
    ModelMeta(passes=list(passes), llvm_version=llvm_version).save(out_dir)
    return load_tokenizer(out_dir)


def chars_per_token(tokenizer: Any, texts: Iterable[str]) -> float:
    """Mean characters per token over `texts` (thesis §4.3.1: 2.02 for the Llama 2 tokenizer on IR)."""
    chars = tokens = 0
    for text in texts:
        chars += len(text)
        tokens += len(tokenizer(text, add_special_tokens=False)["input_ids"])
    return chars / max(tokens, 1)
