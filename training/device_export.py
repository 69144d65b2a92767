"""Export a run's final model in the shipped default-model format with bf16 weights (for the GPU machine).

    PYTHONPATH=. python3 -m training.device_export RUN_DIR DATA_DIR TARGET [--command TEXT]

Used by scripts/device_train.sh: the GPU machine returns at most 64 MiB, and the `base` preset's weights
are 68 MB in float32, 34 MB in bf16.  Both inference engines load bf16 weights as they are.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

from training.default_model import SHIPPED, export_default


def cast_weights(directory: Path, dtype: str) -> None:
    """Rewrite `directory`/model.safetensors with its floating-point tensors in `dtype` ("bfloat16" to carry a
    model back from the GPU machine, "float32" to ship one: the CPU engine computes in the weights' dtype)."""
    import torch
    from safetensors.torch import load_file, save_file

    weights = directory / "model.safetensors"
    target = getattr(torch, dtype)
    state = {k: (v.to(target) if v.is_floating_point() else v).contiguous()
             for k, v in load_file(str(weights)).items()}
    save_file(state, str(weights), metadata={"format": "pt"})
    config_path = directory / "config.json"
    config = json.loads(config_path.read_text())
    for key in ("torch_dtype", "dtype"):
        if key in config:
            config[key] = dtype
    config_path.write_text(json.dumps(config, indent=2) + "\n")


def copy_bf16(source: Path, target: Path) -> None:
    """The shipped files of the model in `source` copied to a new `target`, weights in bfloat16."""
    target.mkdir(parents=True)
    for name in SHIPPED:
        if (source / name).exists():
            shutil.copy2(source / name, target / name)
    cast_weights(target, "bfloat16")


def export_final_bf16(run: Path, data_dir: str, target: Path, command: str) -> Path:
    """`run`/model (the final model, not best/) -> `target` as bf16 with a model card (no package size cap)."""
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "model"
        copy_bf16(run / "model", source)
        return export_default(run, data_dir, command, target, source=source, max_bytes=None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", type=Path, help="the training out_dir (holds model/)")
    parser.add_argument("data_dir", help="the dataset trained on (for the model card)")
    parser.add_argument("target", type=Path, help="where the exported model goes")
    parser.add_argument("--command", default="scripts/device_train.sh", help="how it was trained (model card)")
    args = parser.parse_args(argv)
    if not (args.run / "model" / "llmopt.json").exists():
        parser.error(f"{args.run}/model is not a trained model: did training finish?")
    target = export_final_bf16(args.run, args.data_dir, args.target, args.command)
    size = sum(f.stat().st_size for f in target.iterdir())
    print(f"exported {target} ({size / 2**20:.1f} MiB, bf16)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
