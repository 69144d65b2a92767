"""Gradient-boosted trees on the cost model's inputs and their blend with a network (`llmopt.poly.costmodel.boosted`),
on rows collected here by the real compiler and timed for real."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from llmopt.errors import UsageError
from llmopt.harness.cache import ResultCache
from llmopt.poly.benchmarks import benchmark
from llmopt.poly.costmodel import boosted
from llmopt.poly.costmodel.boosted import (
    FORK_COLUMN,
    FORK_FLOOR,
    LEFT_COLUMN,
    TREE_FEATURES,
    BoostConfig,
    build,
    feature_matrix,
    fork_free,
    taught,
    train_boosted,
    tree_features,
)
from llmopt.poly.costmodel.data import DataConfig, collect, load_rows
from llmopt.poly.costmodel.ensemble import build as build_ensemble
from llmopt.poly.costmodel.features import COMP_FEATURES, featurizer
from llmopt.poly.costmodel.model import (
    FORK_COST,
    Blend,
    CostModel,
    CostModelError,
    ModelConfig,
    load_model,
    predict_trees,
    save_model,
)
from llmopt.poly.costmodel.search import beam_model
from llmopt.poly.costmodel.train import TrainConfig, featurize_rows, fine_tune_start, split_of
from llmopt.poly.legality import check
from llmopt.poly.measure import Measurer
from llmopt.poly.program import program_from_dict
from llmopt.poly.schedule import Interchange, Schedule, Tile, state

SMALL = BoostConfig(leaves=4, rounds=60, min_leaf=2, feature_fraction=1.0, bagging_fraction=1.0, seeds=1,
                    learning_rate=0.2, power=1.0)  # unscaled, so that the formulas below read plainly
C = COMP_FEATURES


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("boosted-data")
    collect(out, range(4), DataConfig(schedules_per_program=4, repeats=1, small=True), workers=1,
            cache_path=str(out / "cache.sqlite"), progress=False)
    return out


def _network(path: Path, fractions=(1.0, 0.0), seed: int = 0, **options) -> Path:
    """A tiny untrained network whose metadata carries a split, as `train` writes it."""
    torch.manual_seed(0)
    cfg = dataclasses.replace(ModelConfig.tiny(), **options)
    save_model(CostModel(cfg), path, {"fractions": list(fractions), "seed": seed})
    return path


def test_tree_features_pool_the_computations_and_vanish_for_what_a_schedule_left_alone():
    prog = benchmark("gemm", small=True)
    featurize = featurizer(prog)
    plain = featurize(state(prog, Schedule()))
    tiled = featurize(state(prog, Schedule((Tile("S1", 0, (8, 8)),))))
    a, b = tree_features(plain), tree_features(tiled)
    assert a.shape == b.shape == (TREE_FEATURES,) == (15 * C + 8,) and a.dtype == np.float32
    # nothing runs in parallel: all the work is left to one thread
    assert a[-8] == a[-7] == b[-8] == b[-7] == 1.0
    # the untransformed tree: its differences from itself are zero, nothing changed; the tiled one changed
    diffs = [slice(6 * C, 9 * C), slice(11 * C, 12 * C), slice(14 * C, 15 * C)]
    assert not any(a[d].any() for d in diffs) and a[-4] == 0.0
    assert b[6 * C: 9 * C].any() and 0.0 < b[-4] <= 1.0
    assert a[-6] == b[-6] == len(prog.statements)
    # both read the same untransformed program; gemm's S1 (NI x NJ x NK) does most of the work
    assert np.array_equal(a[3 * C: 6 * C], b[3 * C: 6 * C]) and np.array_equal(a[13 * C: 14 * C], b[13 * C: 14 * C])
    assert a[-3] > 0.9 and a[-3] + a[-2] == pytest.approx(1.0)
    # every loop of gemm moves an access: no loop is removed, all the work is left
    assert a[LEFT_COLUMN] == b[LEFT_COLUMN] == 1.0
    assert feature_matrix([plain, tiled]).shape == (2, TREE_FEATURES) and feature_matrix([]).shape == (0, TREE_FEATURES)
    # the matrix computes the untransformed tree's part once for the program's rows: the same numbers
    assert np.array_equal(feature_matrix([plain, tiled]), np.stack([a, b]))


def test_trees_learn_labels_their_inputs_decide(data_dir):
    # fixed labels, not the live timings: every transformed schedule 2x, the untransformed 1x
    rows = load_rows(data_dir)
    trees = featurize_rows(rows, TrainConfig(fractions=(1.0, 0.0)), progress=False)["train"].trees  # rows' order
    y = np.array([1.0 if not r["schedule"] else 2.0 for r in rows])
    assert 0 < (y == 1.0).sum() < len(y)
    model = train_boosted(feature_matrix(trees), y, SMALL, log=lambda *_: None)
    answers = np.exp(model.log_speedups(trees))
    assert np.mean(np.abs(answers - y) / y) < 0.05  # answering the mean of both would miss by ~0.2
    assert len(model.boosters) == SMALL.seeds and SMALL.objectives == ("l1",)
    again = boosted.Boosted.from_state(model.state())
    assert np.allclose(again.log_speedups(trees), model.log_speedups(trees))


def test_the_power_scales_the_log_answer_and_files_from_before_it_answer_unscaled(data_dir, tmp_path):
    rows = load_rows(data_dir)
    x = feature_matrix(featurize_rows(rows, TrainConfig(fractions=(1.0, 0.0)), progress=False)["train"].trees)
    model = train_boosted(x, np.array([r["speedup"] for r in rows]), SMALL, log=lambda *_: None)
    scaled = boosted.Boosted(model.boosters, dataclasses.replace(SMALL, power=1.08), fork_cost=1000.0)
    unscaled = boosted.Boosted(model.boosters, SMALL, fork_cost=1000.0)
    assert np.abs(unscaled.answer(x)).max() > 0.01  # something to scale
    assert scaled.answer(x) == pytest.approx(1.08 * unscaled.answer(x))
    blob = scaled.state()
    assert boosted.Boosted.from_state(blob).answer(x) == pytest.approx(scaled.answer(x))
    del blob["config"]["power"]  # as files written before the power was kept
    assert boosted.Boosted.from_state(blob).answer(x) == pytest.approx(unscaled.answer(x))
    assert BoostConfig().power > 1.0  # the default stretches the answers away from 1x
    with pytest.raises(UsageError, match="--power"):
        boosted.main([str(data_dir), "--network", str(tmp_path / "none.pt"), "--out", str(tmp_path / "x.pt"),
                      "--power", "0"])


def test_the_fork_term_is_added_to_what_the_trees_learn_and_taken_from_what_they_are_taught(data_dir):
    rows = load_rows(data_dir)
    x = feature_matrix(featurize_rows(rows, TrainConfig(fractions=(1.0, 0.0)), progress=False)["train"].trees)
    y = np.array([r["speedup"] for r in rows])
    x[:, FORK_COLUMN] = np.linspace(0.0, 1e-3, len(x))  # loads from none to a 2x slowdown at C = 1000
    taught = fork_free(x, y, 1000.0)
    # (1 / (1 / y) may differ from y in the last bit)
    assert taught[0] == pytest.approx(y[0], rel=1e-12) and np.all(taught >= y * (1 - 1e-12))
    assert np.all(taught <= y / FORK_FLOOR * (1 + 1e-12))
    assert taught[-1] > y[-1] and fork_free(x, y, 0.0) == pytest.approx(y)
    plain = train_boosted(x, y, SMALL, log=lambda *_: None)
    forked = boosted.Boosted(plain.boosters, SMALL, fork_cost=1000.0)
    learned = plain.answer(x)
    assert forked.answer(x) == pytest.approx(-np.log(np.exp(-learned) + 1000.0 * x[:, FORK_COLUMN]))
    assert forked.answer(x)[0] == pytest.approx(learned[0]) and forked.answer(x)[-1] < learned[-1]


def test_the_work_removed_loops_leave_scales_what_the_trees_learn_and_what_they_are_taught(data_dir):
    """A time loop no access reads, moved innermost, is deleted by LLVM (`features.removal_left`: 1/7 of the work
    is left); the trees are taught the time ratio over what is left and answer their ratio times it."""
    prog = program_from_dict({
        "name": "time-loop", "params": {"N0": 4096, "T": 7},
        "tensors": {"A": {"type": "double", "shape": ["N0"]}, "B": {"type": "double", "shape": ["N0"]}},
        "statements": [{"name": "S0", "iterators": ["t", "i"], "domain": "0 <= t < T and 1 <= i < N0 - 1",
                        "body": "B[i] = 0.8 * A[i] + 0.1", "shares": 0}]})
    featurize = featurizer(prog)
    rows = feature_matrix([featurize(state(prog, Schedule(steps))) for steps in ((), (Interchange("S0", 0),))])
    assert rows[:, LEFT_COLUMN] == pytest.approx([1.0, 1 / 7])
    y = np.array([1.0, 6.0])
    speedups, weight = taught(rows, y, 1000.0)  # no fork: the fork-free speedups are the measured ones
    assert speedups == pytest.approx([1.0, 6.0 / 7]) and weight == pytest.approx(1 / y)
    collected = load_rows(data_dir)
    x = feature_matrix(featurize_rows(collected, TrainConfig(fractions=(1.0, 0.0)), progress=False)["train"].trees)
    model = train_boosted(x, np.array([r["speedup"] for r in collected]), SMALL, log=lambda *_: None)
    learned = model.answer(x)
    x[:, LEFT_COLUMN] = 0.25
    assert model.answer(x) == pytest.approx(learned + np.log(4.0))


def test_staged_boosting_reweights_the_rows_by_their_answers_and_reaches_the_faster_rows(data_dir):
    """One stage is LightGBM's booster itself; more stages continue the same booster (one model, `rounds` trees)
    with each row weighted by its answer over its target, which lets the rows that run several times faster pull
    their leaves: their MAPE drops."""
    import lightgbm as lgb

    rows = load_rows(data_dir)
    x = feature_matrix(featurize_rows(rows, TrainConfig(fractions=(1.0, 0.0)), progress=False)["train"].trees)
    # labels the inputs decide, with a heavy tail: a row runs 1x to 16x faster by a product of its inputs
    rng = np.random.default_rng(0)  # the labels are drawn first, so that they do not depend on the inputs' width
    target = np.log(np.clip(np.exp(2.8 * rng.random(8 * len(x)) ** 2), 1.0, 16.0))  # 30% over 4x
    x = np.vstack([x] * 8) + rng.normal(0.0, 0.01, (8 * len(x), x.shape[1])).astype(np.float32)
    x[:, 0] = target + rng.normal(0.0, 0.6, len(x))  # a noisy view of the label, so that answers shrink
    config = dataclasses.replace(SMALL, leaves=8, rounds=80, stages=1)
    params = config.params("l1", 0)
    one = boosted._boost(params, x, target, np.exp(-target), config)
    plain = lgb.train(params, lgb.Dataset(x, target, weight=np.exp(-target)), config.rounds)
    assert np.array_equal(one.predict(x), plain.predict(x))
    four = boosted._boost(params, x, target, np.exp(-target), dataclasses.replace(config, stages=4))
    assert four.num_trees() == one.num_trees() == config.rounds

    def mape(booster, rows):
        return float(np.mean(np.abs(np.exp(booster.predict(x[rows]) - target[rows]) - 1.0)))

    fast = target > np.log(4.0)
    assert 0 < fast.sum() < len(x) / 2
    assert mape(four, fast) < mape(one, fast) and mape(four, slice(None)) < mape(one, slice(None))


def test_a_blend_answers_the_weighted_mean_of_its_learners_and_searches(data_dir, tmp_path):
    net = _network(tmp_path / "net.pt", anchored=True, fork_term=True)
    out = tmp_path / "blend.pt"
    report = build([str(data_dir)], str(net), str(out), SMALL, weight=0.25, log=lambda *_: None)
    assert report["weight"] == 0.25 and report["config"]["leaves"] == SMALL.leaves
    assert report["fork_cost"] == pytest.approx(FORK_COST, rel=1e-5)  # the network's C (untrained: its start)
    blend, meta = load_model(out)
    assert isinstance(blend, Blend) and meta["blend"]["weight"] == 0.25 and meta["fractions"] == [1.0, 0.0]
    trees = featurize_rows(load_rows(data_dir), TrainConfig(fractions=(1.0, 0.0)), progress=False)["train"].trees
    network, _ = load_model(net)
    expected = np.exp(0.25 * blend.trees.log_speedups(trees) + 0.75 * np.log(predict_trees(network, trees)))
    assert np.allclose(predict_trees(blend, trees), expected)
    assert not np.allclose(predict_trees(blend, trees), predict_trees(network, trees))
    # the searches load a blend like any cost model, and their answer is still verified by execution
    measurer = Measurer(ResultCache(tmp_path / "cache.sqlite"), repeats=2, timeout=60)
    prog = benchmark("gemm", small=True)
    res = beam_model(prog, measurer, budget_seconds=30, width=2, depth=2, verify=1, model_path=out)
    assert check(prog, res.schedule)[0] and res.seconds <= res.baseline_seconds


def test_the_command_fits_the_weight_on_the_networks_validation_programs(data_dir, tmp_path, capsys):
    hashes = sorted({r["hash"] for r in load_rows(data_dir)})
    # a split seed that leaves both training and validation programs among the four
    seed = next(s for s in range(200) if {split_of(h, (0.5, 0.5), s) for h in hashes} == {"train", "validation"})
    net = _network(tmp_path / "net.pt", (0.5, 0.5), seed)
    out = tmp_path / "blend.pt"
    assert boosted.main([str(data_dir), "--network", str(net), "--out", str(out), "--weight", "fit", "--seeds", "1",
                         "--leaves", "4", "--rounds", "20", "--min-leaf", "2"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert 0.0 <= report["weight"] <= 1.0 and report["validation"]["rows"] > 0
    assert report["validation"]["blend"] <= min(report["validation"]["trees"], report["validation"]["network"])
    assert report["test"]["rows"] == 0
    assert load_model(out)[0].weight == report["weight"]
    # the same trees blended with another network of the split: not trained again, the same answers
    other = _network(tmp_path / "other.pt", (0.5, 0.5), seed, anchored=True)
    again = build([str(data_dir)], str(other), str(tmp_path / "again.pt"), weight=0.5, trees_from=str(out),
                  log=lambda *_: None)
    assert again["validation"]["trees"] == report["validation"]["trees"]
    assert json.loads(json.dumps(again["config"])) == report["config"]
    with pytest.raises(UsageError, match="another split"):
        build([str(data_dir)], str(_network(tmp_path / "split.pt", (0.5, 0.5), seed + 1)), str(tmp_path / "x.pt"),
              weight=0.5, trees_from=str(out), log=lambda *_: None)
    with pytest.raises(UsageError, match="not a blend"):
        build([str(data_dir)], str(other), str(tmp_path / "y.pt"), weight=0.5, trees_from=str(other),
              log=lambda *_: None)


def test_blends_are_refused_where_only_a_network_fits(data_dir, tmp_path):
    net = _network(tmp_path / "net.pt")
    out = tmp_path / "blend.pt"
    tiny = BoostConfig(leaves=2, rounds=2, min_leaf=2, seeds=1, objectives=("l1",))
    build([str(data_dir)], str(net), str(out), tiny, weight=0.5, log=lambda *_: None)
    assert load_model(out)[0].trees.fork_cost == 0.0  # a network without the fork term: trees without it
    with pytest.raises(UsageError, match="validation programs"):  # the default fits the weight on them
        build([str(data_dir)], str(net), str(tmp_path / "z.pt"), SMALL, log=lambda *_: None)
    with pytest.raises(UsageError, match="blend"):
        build_ensemble([net, out])
    with pytest.raises(UsageError, match="blend"):
        fine_tune_start(TrainConfig(init_from=str(out)))
    with pytest.raises(UsageError, match="already a blend"):
        build([str(data_dir)], str(out), str(tmp_path / "again.pt"), SMALL, log=lambda *_: None)
    for bad in ("2", "half"):
        with pytest.raises(UsageError, match="--weight"):
            boosted.main([str(data_dir), "--network", str(net), "--out", str(tmp_path / "x.pt"), "--weight", bad])
    # trees of another feature layout: a clear error, not wrong answers
    blob = torch.load(out, weights_only=False)
    blob["blend"]["trees"]["version"] = -1
    torch.save(blob, tmp_path / "old.pt")
    with pytest.raises(CostModelError, match="feature layout"):
        load_model(tmp_path / "old.pt")
    no_split = tmp_path / "bare.pt"
    save_model(CostModel(ModelConfig.tiny()), no_split)
    with pytest.raises(UsageError, match="no split"):
        build([str(data_dir)], str(no_split), str(tmp_path / "y.pt"), SMALL, log=lambda *_: None)


def test_trees_alone_are_a_cost_model_file_the_searches_and_blends_read(data_dir, tmp_path):
    hashes = sorted({r["hash"] for r in load_rows(data_dir)})
    seed = next(s for s in range(200) if {split_of(h, (0.5, 0.5), s) for h in hashes} == {"train", "validation"})
    out = tmp_path / "trees.pt"
    # as a user runs it (`python -m`: the module is __main__ there, and the file must still hold the package's class)
    done = subprocess.run([sys.executable, "-m", "llmopt.poly.costmodel.boosted", str(data_dir), "--fractions", "0.5",
                           "0.5", "--split-seed", str(seed), "--fork-cost", "800", "--out", str(out), "--seeds", "1",
                           "--leaves", "4", "--rounds", "20", "--min-leaf", "2"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["network"] is None and report["fork_cost"] == 800.0 and report["validation"]["rows"] > 0
    alone, meta = load_model(out)
    assert isinstance(alone, boosted.Boosted) and meta["fractions"] == [0.5, 0.5] and meta["seed"] == seed
    assert alone.fork_cost == 800.0 and meta["trees"]["validation"] == report["validation"]
    rows = load_rows(data_dir)
    trees = featurize_rows(rows, TrainConfig(fractions=(1.0, 0.0)), progress=False)["train"].trees
    answers = predict_trees(alone, trees)
    assert np.allclose(answers, np.exp(alone.log_speedups(trees))) and np.all(answers > 0)
    validation = [t for t, r in zip(trees, rows, strict=True) if split_of(r["hash"], (0.5, 0.5), seed) == "validation"]
    y = np.array([r["speedup"] for r in rows if split_of(r["hash"], (0.5, 0.5), seed) == "validation"])
    assert np.mean(np.abs(predict_trees(alone, validation) - y) / y) == pytest.approx(report["validation"]["trees"])
    # the searches load it like any cost model; their answer is still verified by execution
    measurer = Measurer(ResultCache(tmp_path / "cache.sqlite"), repeats=2, timeout=60)
    prog = benchmark("gemm", small=True)
    res = beam_model(prog, measurer, budget_seconds=30, width=2, depth=2, verify=1, model_path=out)
    assert check(prog, res.schedule)[0] and res.seconds <= res.baseline_seconds
    # blended later with a network of the same split: the same trees, not trained again
    net = _network(tmp_path / "net.pt", (0.5, 0.5), seed)
    blended = build([str(data_dir)], str(net), str(tmp_path / "blend.pt"), weight=1.0, trees_from=str(out),
                    log=lambda *_: None)
    assert blended["validation"]["trees"] == report["validation"]["trees"]
    assert np.allclose(predict_trees(load_model(tmp_path / "blend.pt")[0], trees), answers)
    # where only a network fits, and flags that mean nothing without one
    with pytest.raises(UsageError, match="trees alone"):
        build_ensemble([net, out])
    with pytest.raises(UsageError, match="trees alone"):
        fine_tune_start(TrainConfig(init_from=str(out)))
    for flags in (["--weight", "0.5"], ["--trees", str(out)], []):
        with pytest.raises(UsageError, match="--fractions"):
            boosted.main([str(data_dir), "--out", str(tmp_path / "x.pt"), *flags,
                          *(["--fractions", "0.5", "0.5"] if flags else [])])
    with pytest.raises(UsageError, match="--fractions"):
        boosted.main([str(data_dir), "--out", str(tmp_path / "x.pt"), "--fractions", "0.8", "0.5"])
    with pytest.raises(UsageError, match="--fractions is for trees alone"):
        boosted.main([str(data_dir), "--network", str(net), "--out", str(tmp_path / "x.pt"), "--fractions", "1", "0"])


def test_a_search_ranks_with_a_forked_helper_as_it_does_alone_and_survives_losing_it(data_dir, monkeypatch):
    """`ranker.Ranker`: a level's children split between this process and a forked helper are ranked as one
    process ranks them (same trees, same order), the helper really answers and serves search after search, and a
    helper killed or hung mid-search costs nothing but its speed."""
    import os
    import signal

    from llmopt.poly.costmodel import ranker
    from llmopt.poly.costmodel.ranker import Ranker, start_helpers, stop_helpers
    from llmopt.poly.costmodel.search import model_search
    from llmopt.poly.legality import Legality
    from llmopt.poly.search import extensions

    rows = load_rows(data_dir)
    x = feature_matrix(featurize_rows(rows, TrainConfig(fractions=(1.0, 0.0)), progress=False)["train"].trees)
    model = train_boosted(x, np.array([r["speedup"] for r in rows]), SMALL, log=lambda *_: None)
    prog = benchmark("gemm", small=True)
    kids = [(c, state(prog, c)) for c in extensions(prog, Schedule())]
    assert len(kids) >= 16
    want = Ranker(prog, model, helpers=0)(kids)
    assert len(want) == len(kids)
    (proc, conn), = start_helpers(model, 1)
    shared = Ranker(prog, model, helpers=1)
    assert shared._helpers == [(proc, conn)]
    assert shared(kids) == want
    theirs = shared.scores([st for _, st in kids[1::2]])
    conn.send((-1, [st for _, st in kids[1::2]]))
    assert conn.recv() == (-1, theirs)  # the helper's own answer, not this process's
    conn.send((-2, [st for _, st in kids[1::2]]))  # a question left unread: the next search skips its answer
    again = Ranker(prog, model, helpers=1)
    assert again._helpers == [(proc, conn)] and again(kids) == want  # the same process, a second search
    os.kill(proc.pid, signal.SIGKILL)
    proc.join()
    assert again(kids) == want and not again._helpers  # ranked here from then on
    monkeypatch.setattr(ranker, "PATIENCE_SECONDS", 0.5)
    stuck = Ranker(prog, model, helpers=1)  # started anew
    proc = stuck._helpers[0][0]
    assert proc.is_alive()
    os.kill(proc.pid, signal.SIGSTOP)  # alive, never answering
    assert stuck(kids) == want and not stuck._helpers and not proc.is_alive()
    # a whole search: the same candidates with a helper as without
    for depth in (1, 2):
        assert (model_search(prog, Legality(prog), model, 2, depth, verify=6, helpers=1)
                == model_search(prog, Legality(prog), model, 2, depth, verify=6, helpers=0))
    stop_helpers(model)
    assert not start_helpers(model, 0)
