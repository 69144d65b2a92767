"""The cost model (issue 16): data collection resumes without duplicates, the model reads imperfect nests
and transformed schedules, training lowers the MAPE, beam search with the model answers a legal,
measured schedule never slower than the original, and a missing model file is a one-line error."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from llmopt.harness.cache import ResultCache
from llmopt.poly.benchmarks import benchmark
from llmopt.poly.costmodel.data import (
    DataConfig,
    collect,
    load_rows,
    program_file,
    program_schedules,
    write_sample,
)
from llmopt.poly.costmodel.features import COMP_FEATURES, featurize
from llmopt.poly.costmodel.model import (
    CostModel,
    CostModelError,
    ModelConfig,
    load_model,
    predict,
    save_model,
)
from llmopt.poly.costmodel.search import beam_model
from llmopt.poly.costmodel.train import TrainConfig, Trainer, evaluate, featurize_rows, train_epoch
from llmopt.poly.legality import check
from llmopt.poly.measure import Measurer
from llmopt.poly.schedule import Parallel, Schedule, Tile, Unroll
from llmopt.poly.search import SEARCHES

CFG = DataConfig(schedules_per_program=4, repeats=1, small=True)
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def measurer(tmp_path_factory):
    m = Measurer(ResultCache(tmp_path_factory.mktemp("costmodel") / "cache.sqlite"), repeats=2, timeout=60)
    yield m
    m.close()


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("costmodel-data")
    collect(out, range(3), CFG, workers=1, cache_path=str(out / "cache.sqlite"), progress=False)
    return out


def test_program_schedules_are_legal_distinct_and_deterministic(measurer):
    prog = benchmark("doitgen", small=True)
    scheds = program_schedules(prog, measurer.legality(prog), 6, seed=1)
    assert scheds[0] == Schedule() and len(scheds) == 6
    assert all(check(prog, s)[0] for s in scheds)
    assert len({json.dumps(s.to_list()) for s in scheds}) == 6
    assert scheds == program_schedules(prog, measurer.legality(prog), 6, seed=1)


def test_collection_writes_rows_and_a_sample(data_dir, tmp_path):
    rows = load_rows(data_dir)
    assert {r["seed"] for r in rows} == {0, 1, 2}
    assert all(r["speedup"] > 0 and r["speedup"] == pytest.approx(r["baseline_seconds"] / r["seconds"]) for r in rows)
    assert write_sample(data_dir, tmp_path / "sample", rows=5) >= 5
    assert "python -m llmopt.poly.costmodel.data" in (tmp_path / "sample" / "README.md").read_text()


def test_collection_killed_after_one_program_resumes_without_duplicates(tmp_path):
    out = tmp_path / "data"
    cmd = [sys.executable, "-m", "llmopt.poly.costmodel.data", str(out), "--programs", "3", "--small",
           "--schedules-per-program", "3", "--repeats", "1", "--cache", str(tmp_path / "cache.sqlite")]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.monotonic() + 40
    while not any(program_file(out, s).exists() for s in range(3)) and time.monotonic() < deadline:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    first = {s for s in range(3) if program_file(out, s).exists()}
    assert first, "no program finished before the kill"
    subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True)
    rows = load_rows(out)
    keys = [(r["seed"], json.dumps(r["schedule"])) for r in rows]
    assert len(keys) == len(set(keys)) and {r["seed"] for r in rows} == {0, 1, 2}
    assert not list(out.glob("programs/*/.*tmp*"))


def test_resume_with_other_settings_is_refused(data_dir):
    from llmopt.errors import UsageError

    with pytest.raises(UsageError, match="collected with"):
        collect(data_dir, range(3), DataConfig(schedules_per_program=5, repeats=1, small=True), progress=False)


def test_forward_on_an_imperfect_nest_and_transformed_schedules():
    prog = benchmark("doitgen")  # S0, S1 (one loop deeper), S2: an imperfect nest
    model = CostModel(ModelConfig.tiny())
    plain = featurize(prog, Schedule())
    assert plain.comps.shape == (3, COMP_FEATURES)
    assert plain.structure == ("L", ("L", ("L", ("L", 0, ("L", 1)), ("L", 2))))
    tiled = Schedule((Tile("S1", 0, (32, 32)), Unroll("S1", 4), Parallel("S1", 0)))
    tree = featurize(prog, tiled)
    assert tree.structure != plain.structure and not (tree.comps == plain.comps).all()
    for sched in (Schedule(), tiled):
        value = predict(model, prog, sched)
        assert value > 0 and torch.isfinite(torch.tensor(value))


def test_a_few_training_steps_reduce_the_loss(data_dir):
    cfg = TrainConfig(epochs=40, max_lr=3e-3, fractions=(1.0, 0.0), model=ModelConfig.tiny())
    sets = featurize_rows(load_rows(data_dir), cfg, progress=False)
    trainer = Trainer(cfg, steps_per_epoch=len(sets["train"].trees))
    before = evaluate(trainer.model, sets["train"])
    import numpy as np

    rng = np.random.default_rng(0)
    for _ in range(cfg.epochs):
        train_epoch(trainer.model, sets["train"], trainer.opt, trainer.sched, cfg, rng)
    assert evaluate(trainer.model, sets["train"]) < before


def test_beam_model_answers_a_legal_verified_schedule_never_slower(measurer, tmp_path):
    path = tmp_path / "model.pt"
    torch.manual_seed(0)
    save_model(CostModel(ModelConfig.tiny()), path)
    prog = benchmark("gemm", small=True)
    res = beam_model(prog, measurer, budget_seconds=30, width=2, depth=2, verify=2, model_path=path)
    assert check(prog, res.schedule)[0]
    assert 1 <= res.evaluations <= 2
    assert res.seconds <= res.baseline_seconds
    if res.schedule != Schedule():
        assert measurer.measure(prog, res.schedule)["ok"]
    assert "beam-model" in SEARCHES


def test_missing_model_file_is_a_clear_error(measurer, tmp_path):
    with pytest.raises(CostModelError, match="no cost model at .*train one"):
        load_model(tmp_path / "nope.pt")
    with pytest.raises(CostModelError, match="no cost model"):
        SEARCHES["beam-model"](benchmark("gemm", small=True), measurer, model_path=tmp_path / "nope.pt")


def test_cli_beam_model_without_a_model_is_one_line(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "llmopt", "loops", "schedule", "gemm", "--small", "--search",
                           "beam-model", "--cost-model", str(tmp_path / "nope.pt"), "--no-cache"],
                          cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode != 0
    assert "no cost model at" in proc.stderr and "Traceback" not in proc.stderr
