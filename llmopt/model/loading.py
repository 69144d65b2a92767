"""Load a trained model and its tokenizer: a directory, or the default model shipped in the package.

A model directory is what `training` exports: HF `config.json` + `model.safetensors`, the
tokenizer files, `llmopt.json` (pass vocabulary, LLVM version, format version) and a `README.md`
model card.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from llmopt.model.tokenizer import META_FILE, ModelMeta, load_tokenizer

DEFAULT_MODEL_DIR = Path(__file__).with_name("default")


class ModelNotFoundError(FileNotFoundError):
    """No model at the given path (or no default model shipped)."""


def default_model_dir() -> Path:
    return DEFAULT_MODEL_DIR


def _check_dir(path: Path, default: bool) -> None:
    if (path / META_FILE).exists() and (path / "config.json").exists():
        return
    if default:
        raise ModelNotFoundError(
            f"no default model in {path}: train one with scripts/train_default_model.sh or pass a model directory"
        )
    raise ModelNotFoundError(f"{path} is not an llmopt model directory (needs config.json and {META_FILE})")


def load_model(path: str | Path | None = None, *, device: str = "cpu", dtype: Any = None,
               llvm_version: int | None = None) -> tuple[Any, Any]:
    """(model, tokenizer) from `path`, or from the shipped default model when `path` is None.

    The model is in eval mode on `device`.  Pass the LLVM major version in use as
    `llvm_version` to get a warning when the model was trained on data from another version.
    """
    from transformers import AutoModelForCausalLM

    directory = Path(path) if path is not None else default_model_dir()
    _check_dir(directory, default=path is None)
    meta = ModelMeta.load(directory)
    if llvm_version is not None and meta.llvm_version is not None and meta.llvm_version != llvm_version:
        warnings.warn(f"model trained on LLVM {meta.llvm_version} data, running with LLVM {llvm_version}: "
                      "its pass lists may be suboptimal", stacklevel=2)
    model = AutoModelForCausalLM.from_pretrained(str(directory), dtype=dtype)
    model.to(device).eval()
    return model, load_tokenizer(directory)


def load_meta(path: str | Path | None = None) -> ModelMeta:
    """The `llmopt.json` metadata (pass vocabulary, LLVM version, ...) of a model directory."""
    directory = Path(path) if path is not None else default_model_dir()
    _check_dir(directory, default=path is None)
    return ModelMeta.load(directory)
