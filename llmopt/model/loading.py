"""Load a trained model and its tokenizer: a directory, or the default model shipped in the package.

A model directory is what `training` exports: HF `config.json` + `model.safetensors`, the
tokenizer files, `llmopt.json` (pass vocabulary, LLVM version, format version) and a `README.md`
model card.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Any, NamedTuple

from llmopt.errors import LlmoptError
from llmopt.model.tokenizer import META_FILE, InferenceTokenizer, ModelMeta, load_tokenizer

DEFAULT_MODEL_DIR = Path(__file__).with_name("default")


class ModelNotFoundError(FileNotFoundError, LlmoptError):
    """No model at the given path (or no default model shipped)."""


def default_model_dir() -> Path:
    return DEFAULT_MODEL_DIR


class EnsembleSpec(NamedTuple):
    """An ensemble directory's manifest: member directories, their weights (None: equal) and the cascade gate."""

    members: list[Path]
    weights: list[float] | None = None
    gate: float | None = None


def ensemble_spec(directory: str | Path | None) -> EnsembleSpec | None:
    """The `EnsembleSpec` of an ensemble directory, else None.

    An ensemble directory holds an `llmopt.json` whose `members` lists model directories relative to it (and
    optional `weights`, one per member, and `gate`, see `llmopt.sampling.ensemble`) beside a model card; its models
    decode as one (`llmopt.sampling.ensemble`).  They share one tokenizer and pass vocabulary, so its tokenizer
    and metadata are its first member's (`load_meta`, `load_tokenizer`)."""
    directory = Path(directory) if directory is not None else default_model_dir()
    meta = directory / META_FILE
    if (directory / "config.json").exists() or not meta.exists():
        return None
    manifest = json.loads(meta.read_text())
    members = manifest.get("members")
    if not members:
        return None
    return EnsembleSpec([directory / m for m in members], manifest.get("weights"), manifest.get("gate"))


def ensemble_members(directory: str | Path | None) -> list[Path] | None:
    """The member directories of an ensemble directory (`ensemble_spec`), else None."""
    spec = ensemble_spec(directory)
    return spec.members if spec else None


def single_model_dir(path: str | Path | None = None) -> Path:
    """`path` (default: the shipped model), or an ensemble's first member: the directory of one model."""
    directory = Path(path) if path is not None else default_model_dir()
    members = ensemble_members(directory)
    return members[0] if members else directory


def _check_dir(path: Path, default: bool) -> None:
    if (path / META_FILE).exists() and (path / "config.json").exists():
        return
    if default:
        raise ModelNotFoundError(
            f"no default model in {path}: train one with scripts/train_default_model.sh or pass a model directory"
        )
    raise ModelNotFoundError(f"{path} is not an llmopt model directory (needs config.json and {META_FILE})")


ENGINES = ("auto", "torch", "transformers")


def load_model(path: str | Path | None = None, *, device: str = "cpu", dtype: Any = None,
               llvm_version: int | None = None, engine: str = "auto", int8: bool = False) -> tuple[Any, Any]:
    """(model, tokenizer) from `path`, or from the shipped default model when `path` is None.

    The model is in eval mode on `device`.  Pass the LLVM major version in use as
    `llvm_version` to get a warning when the model was trained on data from another version.
    `engine`: "torch" runs the plain-PyTorch Llama of `llmopt.model.llama` (inference only, no
    `transformers` import), "transformers" the HF model (needed for training), "auto" (default,
    or $LLMOPT_ENGINE) the first when it supports the model, else the second.
    `int8`: dynamic int8 quantization of the decoder layers (`quantize_int8`; CPU inference only).
    """
    directory = Path(path) if path is not None else default_model_dir()
    if ensemble_members(directory):
        raise ValueError(f"{directory} is an ensemble of models (`members` in its {META_FILE}): decode it with "
                         "llmopt.sampling.PassListLM.load, or load one member")
    _check_dir(directory, default=path is None)
    meta = ModelMeta.load(directory)
    if llvm_version is not None and meta.llvm_version is not None and meta.llvm_version != llvm_version:
        warnings.warn(f"model trained on LLVM {meta.llvm_version} data, running with LLVM {llvm_version}: "
                      "its pass lists may be suboptimal", stacklevel=2)
    engine = os.environ.get("LLMOPT_ENGINE", "auto") if engine == "auto" else engine
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}: choose one of {', '.join(ENGINES)}")
    if engine != "transformers":
        from llmopt.model import llama

        reason = llama.supports(directory)
        if reason is None and dtype is None:
            model = llama.LlamaForInference.from_pretrained(directory)
            model = model.to(device).eval()
            return (quantize_int8(model) if int8 else model), InferenceTokenizer(directory)
        if engine == "torch":
            raise ValueError(f"{directory}: the torch engine cannot run this model ({reason or 'dtype given'})")
    from transformers import AutoModelForCausalLM
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # a weight-loading bar per call is noise in CLI output
    hf_logging.set_verbosity_error()
    model = AutoModelForCausalLM.from_pretrained(str(directory), dtype=dtype)
    model.to(device).eval()
    return (quantize_int8(model) if int8 else model), load_tokenizer(directory)


def quantize_int8(model: Any) -> Any:
    """`model` with the nn.Linear layers of its decoder (`model.model`) dynamically quantized to int8, in place.

    The output head stays in float: its log-probabilities are what Priority Sampling ranks prefixes by,
    and callers read `lm_head.weight` (a quantized layer has none).  Weights stored in bfloat16 (the shipped
    ensemble's `base` member) are made float32 first: dynamic quantization reads float32 activations.
    """
    import torch
    from torch import nn

    model.float()

    with warnings.catch_warnings():  # torch 2.13 marks torch.ao.quantization deprecated (torchao replaces it)
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.filterwarnings("ignore", message=".*quantize_per_tensor.*")
        torch.ao.quantization.quantize_dynamic(model.model, {nn.Linear}, dtype=torch.qint8, inplace=True)
    return model


def load_meta(path: str | Path | None = None) -> ModelMeta:
    """The `llmopt.json` metadata (pass vocabulary, LLVM version, ...) of a model directory (an ensemble's:
    its first member's, see `ensemble_members`)."""
    directory = single_model_dir(path)
    _check_dir(directory, default=path is None)
    return ModelMeta.load(directory)
