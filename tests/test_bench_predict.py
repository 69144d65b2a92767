"""scripts/bench_predict.py --untrained-preset: an untrained preset model saved in the shipped format."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import bench_predict  # noqa: E402


def test_untrained_model_loads_like_a_trained_one(data, tmp_path):
    from llmopt.dataset import read_rows
    from llmopt.model.loading import load_meta
    from llmopt.sampling import PassListLM

    config = tmp_path / "cfg.json"
    config.write_text(json.dumps({"data_dir": str(data), "out_dir": str(tmp_path / "run"), "model_preset": "base",
                                  "tokenizer_vocab_size": 600, "context_length": 3000, "with_ir": False,
                                  "target_policy": "frequent"}))
    model = bench_predict.untrained_model(str(config), "tiny", tmp_path / "cache", tokenizer_rows=20)
    assert model.name == "tiny-cfg" and bench_predict.untrained_model(str(config), "tiny", tmp_path / "cache") == model
    meta = load_meta(model)
    assert meta.extra["context_length"] == 3000 and meta.extra["untrained"] and not meta.with_ir
    lm = PassListLM.load(model)
    assert lm.context_length == 3000 and lm.model.config.hidden_size == 256  # the tiny preset, not the config's base
    assert bench_predict.parameters(model) == sum(p.numel() for p in lm.model.parameters())
    # Pass lists capped at the label's length (what an untrained model needs to be timed honestly).
    row = next(r for r in read_rows(data, "test") if len(r["passes"]) <= 3)
    samples = bench_predict.capped(lm, row).sample(row["ir"], 4)
    assert len(samples) == 4 and all(1 <= len(s.passes) <= len(row["passes"]) for s in samples)
