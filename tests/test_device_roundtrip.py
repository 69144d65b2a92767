"""The GPU machine's round trip on CPU: scripts/device_train.sh (tiny preset, capped by MINUTES) writes $OUT
in the shapes the device tool returns, scripts/device_fetch.sh rebuilds the model here, llmopt loads it."""

import csv
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.timeout(120)
def test_device_train_fetch_load(data, tmp_path, example_functions):
    import torch

    from llmopt.model import load_meta, load_model
    from llmopt.sampling import GreedyDecoding, PassListLM

    out, run = tmp_path / "out", tmp_path / "run"
    env = {**os.environ, "OUT": str(out), "RUN_DIR": str(run), "DATA_DIR": str(data), "MINUTES": "0.0001",
           "PART_SIZE": "2M"}  # several parts from a small model
    sets = ["max_steps=1000", "batch_size=2", "tokenizer_vocab_size=600", "eval_interval=0", "val_functions=0",
            "checkpoint_interval=1000", "log_interval=10"]
    cmd = ["bash", "scripts/device_train.sh", "training/configs/tiny.json", *[a for s in sets for a in ("--set", s)]]
    done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    names = sorted(p.name for p in out.iterdir())
    assert len(names) <= 8 and all(p.stat().st_size <= 16 * 2**20 for p in out.iterdir())
    assert "files.tar.gz" in names and "model.safetensors.sha256" in names
    assert sum(n.startswith("model.safetensors.part") for n in names) >= 2

    dest = tmp_path / "fetched" / "model"
    done = subprocess.run(["bash", "scripts/device_fetch.sh", str(out), str(dest)], cwd=REPO,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (dest / "README.md").exists() and (dest.parent / "train_stdout.log").exists()
    steps = [int(r["step"]) for r in csv.DictReader((dest.parent / "train_log.csv").open())]
    assert steps == [1]  # MINUTES stopped it long before max_steps
    assert load_meta(dest).extra["stop_reason"] == "max_minutes"
    model, _ = load_model(dest, engine="torch")
    assert model.lm_head.weight.dtype == torch.bfloat16
    sample = GreedyDecoding(PassListLM.load(dest, engine="torch")).sample(example_functions[0], 1)[0]
    assert isinstance(sample.passes, list) and sample.text

    # A damaged part is refused.
    part = out / "model.safetensors.part0"
    part.write_bytes(b"x" + part.read_bytes()[1:])
    done = subprocess.run(["bash", "scripts/device_fetch.sh", str(out), str(tmp_path / "bad")], cwd=REPO,
                          capture_output=True, text=True)
    assert done.returncode != 0 and "sha256" in done.stderr
