"""Average the weights of models fine-tuned from one start ("model soup", Wortsman et al. 2022).

    python -m training.soup OUT MODEL_A MODEL_B [MODEL_C ...] [--weights 0.5,0.5]

Why: two fine-tunes of the same model sit in one basin of the loss, so their average is a model of the
same size and speed that is often at least as good as either.  Measured here (issue 14, 2026-11-26,
`docs/results/training/gpu-v3-frequent/`): the shipped model + its GPU fine-tune at lr 1e-4 tied the shipped
model on validation and lost to it at 10 samples on test, so it was not shipped.  The first model's files
other than the weights (`training.default_model.SHIPPED`: config, tokenizer, llmopt.json; not its card) are
copied; the floating-point weights are averaged and saved in float32, whatever dtype each input has (GPU runs
come back in bf16), and the config says so (`training.device_export.cast_weights`).
"""

from __future__ import annotations

import argparse
import shutil
from collections.abc import Sequence
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from training.default_model import SHIPPED
from training.device_export import cast_weights

WEIGHTS = "model.safetensors"


def average(models: Sequence[Path], weights: Sequence[float] | None = None) -> dict[str, torch.Tensor]:
    """The weighted mean of the models' tensors (weights default to equal and are normalized to sum 1)."""
    if len(models) < 2:
        raise ValueError("a soup needs at least two models")
    weights = [1.0] * len(models) if weights is None else list(weights)
    if len(weights) != len(models) or any(w < 0 for w in weights) or sum(weights) <= 0:
        raise ValueError(f"need one non-negative weight per model ({len(models)}), got {weights}")
    total = sum(weights)
    soup: dict[str, torch.Tensor] = {}
    names: set[str] | None = None
    for model, w in zip(models, weights, strict=True):
        tensors = load_file(str(Path(model) / WEIGHTS))
        if names is None:
            names = set(tensors)
        elif set(tensors) != names:
            raise ValueError(f"{model}: its tensors differ from {models[0]}'s (not fine-tunes of one model?)")
        for name, t in tensors.items():
            if name in soup and soup[name].shape != t.shape:
                raise ValueError(f"{model}: {name} has shape {tuple(t.shape)}, not {tuple(soup[name].shape)}")
            if not t.is_floating_point():  # nothing to average (none in a Llama): the first model's
                soup.setdefault(name, t)
                continue
            part = t.float() * (w / total)
            soup[name] = soup[name] + part if name in soup else part
    return {k: v.contiguous() for k, v in soup.items()}


def write_soup(out: Path, models: Sequence[Path], weights: Sequence[float] | None = None) -> Path:
    """Write the averaged model to `out` (a loadable model folder) and return it."""
    tensors = average(models, weights)
    out.mkdir(parents=True, exist_ok=True)
    for name in SHIPPED:
        if name != WEIGHTS and (Path(models[0]) / name).exists():
            shutil.copy(Path(models[0]) / name, out / name)
    save_file(tensors, str(out / WEIGHTS), metadata={"format": "pt"})
    cast_weights(out, "float32")  # already float32: this sets the copied config's dtype to match
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("models", type=Path, nargs="+")
    parser.add_argument("--weights", help="comma-separated, one per model (default: equal)")
    args = parser.parse_args(argv)
    weights = [float(w) for w in args.weights.split(",")] if args.weights else None
    try:
        write_soup(args.out, args.models, weights)
    except (ValueError, FileNotFoundError) as e:
        parser.error(str(e))
    print(f"wrote {args.out}: the mean of {', '.join(map(str, args.models))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
