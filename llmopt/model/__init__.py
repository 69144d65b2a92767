"""The model side of llmopt: prompt/answer format, tokenizer, model loading (and the shipped default model).

Knows nothing of LLVM beyond pass names: they come from the tokenizer's `llmopt.json`.
"""

from llmopt.model.format import Answer, ParsedAnswer, build_answer, build_example, build_prompt, parse_answer
from llmopt.model.loading import ModelNotFoundError, default_model_dir, load_meta, load_model
from llmopt.model.tokenizer import ModelMeta, load_tokenizer, pass_token_ids, stop_token_ids

__all__ = [
    "Answer", "ModelMeta", "ModelNotFoundError", "ParsedAnswer", "build_answer", "build_example", "build_prompt",
    "default_model_dir", "load_meta", "load_model", "load_tokenizer", "parse_answer", "pass_token_ids",
    "stop_token_ids",
]
