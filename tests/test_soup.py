"""training.soup: averaging fine-tunes of one model."""

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from training import soup


def _model(folder: Path, tensors: dict[str, torch.Tensor]) -> Path:
    folder.mkdir(parents=True)
    save_file(tensors, str(folder / soup.WEIGHTS))
    (folder / "config.json").write_text('{"dtype": "bfloat16"}')
    return folder


def test_soup_is_the_weighted_mean_in_float32(tmp_path):
    a = _model(tmp_path / "a", {"w": torch.tensor([1.0, 2.0], dtype=torch.bfloat16), "b": torch.zeros(3)})
    b = _model(tmp_path / "b", {"w": torch.tensor([3.0, 6.0]), "b": torch.ones(3)})
    out = soup.write_soup(tmp_path / "s", [a, b], [1, 3])
    got = load_file(str(out / soup.WEIGHTS))
    assert got["w"].dtype == torch.float32
    assert torch.allclose(got["w"], torch.tensor([2.5, 5.0]))
    assert torch.allclose(got["b"], torch.full((3,), 0.75))
    assert json.loads((out / "config.json").read_text())["dtype"] == "float32"  # the config matches the weights


def test_soup_refuses_models_that_differ(tmp_path):
    a = _model(tmp_path / "a", {"w": torch.zeros(2)})
    b = _model(tmp_path / "b", {"w": torch.zeros(3)})
    c = _model(tmp_path / "c", {"v": torch.zeros(2)})
    with pytest.raises(ValueError, match="shape"):
        soup.average([a, b])
    with pytest.raises(ValueError, match="differ"):
        soup.average([a, c])
    with pytest.raises(ValueError, match="at least two"):
        soup.average([a])
    with pytest.raises(ValueError, match="weight"):
        soup.average([a, a], [1.0])
