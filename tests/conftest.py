"""Shared fixtures: a small corpus of real functions (csmith + hand-written C) compiled by clang."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from data_pipeline.sources.csmith import generate as csmith_program
from llmopt.llvm.ir import normalize_ir, split_functions
from llmopt.llvm.passes import vocabulary
from llmopt.llvm.toolchain import find_toolchain

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def compile_c(source: Path, out: Path, extra: list[str] | None = None) -> str:
    """The DESIGN.md baseline input: clang -Oz without LLVM passes."""
    clang = find_toolchain().clang
    cmd = [clang, "-Oz", "-Xclang", "-disable-llvm-passes", "-emit-llvm", "-S", "-w", "-o", str(out), str(source)]
    subprocess.run(cmd + (extra or []), check=True, capture_output=True)
    return out.read_text()


@pytest.fixture(scope="session")
def example_ir() -> str:
    return (EXAMPLES / "example.ll").read_text()


@pytest.fixture(scope="session")
def corpus(tmp_path_factory) -> list[str]:
    """~40 normalized single-function modules: the example file plus csmith programs."""
    tmp = tmp_path_factory.mktemp("corpus")
    modules = [normalize_ir(m) for _, m in split_functions((EXAMPLES / "example.ll").read_text())]
    if shutil.which("csmith"):
        for seed in (1, 2):
            src = tmp / f"csmith{seed}.c"
            src.write_text(csmith_program(seed, ("--max-funcs", "4", "--no-arrays")))
            ir = compile_c(src, tmp / f"csmith{seed}.ll", ["-I/usr/include/csmith"])
            for name, module in split_functions(ir):
                if name.startswith("func_") or name == "main":
                    modules.append(normalize_ir(module))
    return modules


@pytest.fixture(scope="session")
def data(tmp_path_factory) -> Path:
    """The sample dataset (training/sample_data.py), built once per test run."""
    from training.sample_data import cached_sample_dataset

    return cached_sample_dataset(tmp_path_factory.getbasetemp() / "llmopt_sample_data")


@pytest.fixture(scope="session")
def harness():
    """A compile-and-measure harness without a result cache (every test measures for real)."""
    from llmopt.harness import Harness

    with Harness(workers=2, cache=False) as h:
        yield h


@pytest.fixture(scope="module")
def backend(tmp_path_factory):
    """A loop-kernel backend (llmopt.loops) with its own result cache and objects, timing without repeats."""
    from llmopt.harness.cache import ResultCache
    from llmopt.loops.backend import Backend

    tmp = tmp_path_factory.mktemp("loops")
    b = Backend(ResultCache(tmp / "cache.sqlite"), tmp / "so", min_seconds=0.0)
    yield b
    b.close()


# ---- a small real model for the sampling, predict and feedback tests
MAX_PASSES = 8  # short lists keep the untrained model's samples fast


@pytest.fixture(scope="session")
def example_functions() -> list[str]:
    return [normalize_ir(m) for _, m in split_functions((EXAMPLES / "example.ll").read_text())]


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory, example_functions) -> Path:
    """A saved llmopt model directory: real tokenizer + untrained 2-layer Llama (seeded)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from llmopt.model.tokenizer import ModelMeta
    from training.tokenizer import train_tokenizer

    out = tmp_path_factory.mktemp("tiny_model")
    passes = vocabulary()
    tokenizer = train_tokenizer(example_functions, passes, out, vocab_size=600, llvm_version=None)
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                         num_key_value_heads=2, intermediate_size=128, max_position_embeddings=4096,
                         initializer_range=0.5, tie_word_embeddings=False, bos_token_id=tokenizer.bos_token_id,
                         eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
    LlamaForCausalLM(config).save_pretrained(str(out))
    ModelMeta(passes=passes, extra={"context_length": 4096}).save(out)
    return out


@pytest.fixture(scope="session")
def tiny_lm(tiny_model_dir):
    from llmopt.sampling import PassListLM

    return PassListLM.load(tiny_model_dir, max_passes=MAX_PASSES)
