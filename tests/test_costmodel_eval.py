"""The cost model's evaluation (issue 16, `python -m eval.costmodel_eval`): on a small benchmark it writes
results.json with the keys the issue names, the table and the scatter plot, measures every MAPE schedule
against a verified run, and a rerun with the same settings reuses the finished benchmark."""

from __future__ import annotations

import json
import math

import pytest

from eval import costmodel_eval
from eval.costmodel_eval import EvalConfig, run_eval
from llmopt.poly.costmodel.data import DataConfig, collect, load_rows
from llmopt.poly.costmodel.model import CostModel, ModelConfig, save_model


@pytest.fixture(scope="module")
def model_and_data(tmp_path_factory):
    import torch

    root = tmp_path_factory.mktemp("costmodel-eval")
    data = root / "data"
    collect(data, range(2), DataConfig(schedules_per_program=3, repeats=1, small=True), workers=1,
            cache_path=str(root / "cache.sqlite"), progress=False)
    torch.manual_seed(0)
    model = root / "costmodel.pt"
    # An untrained model is enough here: the test checks the evaluation, not the model's quality.
    hashes = sorted({r["hash"] for r in load_rows(data)})
    save_model(CostModel(ModelConfig.tiny()), model, {"fractions": [0.0, 0.0], "seed": 0,
                                                       "programs": {"train": [], "validation": [], "test": hashes}})
    return model, data


def test_eval_writes_the_issue_keys_and_resumes(model_and_data, tmp_path, monkeypatch):
    monkeypatch.setattr(costmodel_eval, "DEFAULT_CACHE_DIR", tmp_path / "cache")
    model, data = model_and_data
    cfg = EvalConfig(str(model), str(data), benchmarks=["mvt"], small=True, schedules=3, mape_repeats=2,
                     budget_seconds=5.0, width=2, depth=2, verify=2, repeats=2)
    out = tmp_path / "out"
    summary = run_eval(cfg, out, log=lambda *_: None)
    results = json.loads((out / "results.json").read_text())
    for key in ("mape_test", "search_speedup", "degradation_pct"):
        assert key in results and key in summary
    assert not math.isnan(results["mape_test"]) and results["mape_test"] >= 0
    _, test_points = costmodel_eval.test_mape(cfg, costmodel_eval.load_model(model)[1])
    always_1 = sum(abs(1 - max(y, 0.01)) / max(y, 0.01) for y, _ in test_points) / len(test_points)
    assert results["mape_test_always_1"] == pytest.approx(always_1)  # the bar: answering 1.0x for every schedule
    row = results["rows"][0]
    assert row["benchmark"] == "mvt" and 1 <= len(row["points"]) <= 3
    assert all(measured > 0 and predicted > 0 for measured, predicted in row["points"])
    assert row["bse_speedup"] >= 1.0 and row["bsm_speedup"] >= 1.0  # both keep the original when nothing wins
    for label in ("bse", "bsm"):  # both answers timed again, side by side with the original
        assert row[f"{label}_speedup_side"] > 0
    assert row["bsm_vs_bse_side"] > 0  # Table 2's degradation comes from that measurement ...
    assert row["degradation_pct"] == pytest.approx(100 * (1 - row["bsm_vs_bse_side"]))
    assert summary["degradation_pct"] == pytest.approx(row["degradation_pct"])
    assert summary["search_timings"]["degradation_pct"] == pytest.approx(  # ... and from the searches' own timings
        100 * (1 - row["bsm_speedup"] / row["bse_speedup"]))
    assert (out / "results.md").read_text().count("mvt") >= 1 and (out / "scatter.png").stat().st_size > 0

    def must_not_run(*_args, **_kwargs):
        raise AssertionError("a finished benchmark was measured again")

    monkeypatch.setattr(costmodel_eval, "bench_one", must_not_run)
    assert run_eval(cfg, out, log=lambda *_: None)["mape_test"] == summary["mape_test"]


def test_eval_with_the_agent_adds_its_columns(model_and_data, tmp_path, monkeypatch):
    monkeypatch.setattr(costmodel_eval, "DEFAULT_CACHE_DIR", tmp_path / "cache")
    model, data = model_and_data
    cfg = EvalConfig(str(model), str(data), benchmarks=["jacobi2d"], small=True, schedules=2, mape_repeats=2,
                     budget_seconds=5.0, width=2, depth=2, verify=1, repeats=2, with_agent=True)
    summary = run_eval(cfg, tmp_path / "out", log=lambda *_: None)
    row = json.loads((tmp_path / "out" / "results.json").read_text())["rows"][0]
    assert set(summary["with_agent"]) == {"search_speedup", "search_speedup_model_only", "degradation_pct",
                                          "degradation_no_gains_pct", "degradation_geomean_pct", "search_timings"}
    assert row["bsma_vs_bse_side"] > 0 and row["bsma_speedup_side"] > 0
    assert row["bsma_degradation_pct"] == pytest.approx(100 * (1 - row["bsma_vs_bse_side"]))
    assert row["bsma_speedup"] >= 1.0 and row["bsma_evaluations"] >= 1
    assert "BSM + agent" in (tmp_path / "out" / "results.md").read_text()


def test_strict_degradations_do_not_let_one_big_win_hide_the_losses():
    from eval.costmodel_eval import degradations, own_ratios

    rows = [{"bse_speedup": 2.0, "bsm_speedup": 1.0}, {"bse_speedup": 2.0, "bsm_speedup": 20.0},
            {"bse_speedup": 1.0, "bsm_speedup": 1.0}]
    got = degradations(own_ratios(rows, "bsm"))
    assert got["degradation_pct"] == pytest.approx(100 * (0.5 - 9 + 0) / 3)  # Table 2's mean: a "gain"
    assert got["degradation_no_gains_pct"] == pytest.approx(100 * 0.5 / 3)
    assert got["degradation_geomean_pct"] == pytest.approx(100 * (1 - (20 / 4) ** (1 / 3)))  # negative: a real gain
    assert degradations([])["degradation_geomean_pct"] is None


def test_a_bse_reference_is_measured_once_and_reused_for_another_model(model_and_data, tmp_path, monkeypatch):
    from llmopt.errors import LlmoptError

    monkeypatch.setattr(costmodel_eval, "DEFAULT_CACHE_DIR", tmp_path / "cache")
    model, data = model_and_data
    ref = tmp_path / "bse.json"
    cfg = EvalConfig(str(model), str(data), benchmarks=["atax"], small=True, schedules=2, mape_repeats=2,
                     budget_seconds=5.0, width=2, depth=1, verify=1, repeats=2, bse_reference=str(ref))
    run_eval(cfg, tmp_path / "first", log=lambda *_: None)
    kept = json.loads(ref.read_text())
    assert set(kept["rows"]) == {"atax"} and kept["settings"]["width"] == 2
    assert kept["rows"]["atax"]["evaluations"] >= 1 and "cut_short" in kept["rows"]["atax"]

    def must_not_run(*_args, **_kwargs):
        raise AssertionError("BSE ran again although the reference holds its answer")

    monkeypatch.setattr(costmodel_eval, "beam", must_not_run)
    run_eval(cfg, tmp_path / "second", log=lambda *_: None)  # another output folder: BSM runs, BSE is read
    row = json.loads((tmp_path / "second" / "results.json").read_text())["rows"][0]
    assert row["bse_speedup"] == kept["rows"]["atax"]["speedup"]
    assert row["bse_search_seconds"] == kept["rows"]["atax"]["search_seconds"]
    with pytest.raises(LlmoptError, match="other --bse-reference|another --bse-reference"):
        run_eval(EvalConfig(**{**cfg.__dict__, "width": 3}), tmp_path / "third", log=lambda *_: None)


def test_bsm_misses_places_bse_path_in_the_replayed_beam(model_and_data):
    """The diagnosis replays BSM: a schedule BSM itself verifies is found, with every prefix in its beam."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
    import bsm_misses

    from llmopt.poly.benchmarks import benchmark
    from llmopt.poly.costmodel.search import cached_model, model_search
    from llmopt.poly.legality import Legality

    model = cached_model(model_and_data[0])
    settings = {"small": True, "width": 2, "depth": 2}
    prog = benchmark("gemm", small=True)
    every = model_search(prog, Legality(prog), model, 2, 2, verify=1000)  # all it met, best first
    deepest = next(s for s in every if len(s.transforms) == 2)
    got = bsm_misses.diagnose("gemm", {"speedup": 2.0, "schedule": "x", "transforms": deepest.to_list()},
                              settings, model)
    assert got["verified"] == (deepest in model_search(prog, Legality(prog), model, 2, 2))
    assert got["path_leaves_beam_at"] is None and len(got["steps"]) == 2
    assert got["steps"][0]["kept_in_beam"] and got["steps"][1]["kept_in_beam"] is None
    assert all(s["rank"] >= 1 and s["children"] > 0 and s["parent_in_beam"] for s in got["steps"])


def test_costmodel_select_searches_held_out_programs_and_times_the_answers(model_and_data, tmp_path, monkeypatch):
    """`scripts/costmodel_select.py`: BSM on programs no model trained on, each answer timed, scored
    against the data's best; a program some model trained on is left out."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
    import costmodel_select

    model, data = model_and_data
    monkeypatch.setattr(costmodel_select, "DEFAULT_CACHE_DIR", tmp_path / "cache")
    hashes = sorted({r["hash"] for r in load_rows(data)})
    trained_one = {"seed": 0, "fractions": [0.0, 0.0], "programs": {"train": hashes[:1]}}
    kept = costmodel_select.held_out_programs([str(data)], "test", [trained_one], 0.0, 0.0, None)
    assert [p["hash"] for p in kept] == hashes[1:]
    assert all(p["best"] == max(r["speedup"] for r in load_rows(data) if r["hash"] == p["hash"]) for p in kept)
    assert costmodel_select.held_out_programs([str(data)], "test", [trained_one], 0.0, 1e9, None) == []
    out = tmp_path / "select.json"
    assert costmodel_select.main([str(model), "--data", str(data), "--split", "test", "--min-baseline-ms", "0",
                                  "--min-best", "0", "--verify", "1", "--repeats", "2", "--out", str(out)]) == 0
    got = json.loads(out.read_text())
    assert len(got["rows"]) == len(hashes)
    answers = [r["models"][str(model)] for r in got["rows"]]
    assert all(a["speedup"] >= 1.0 and a["model_seconds"] > 0 for a in answers)  # verified: never below the original
    summary = got["summary"][str(model)]
    assert summary["programs"] == len(hashes) and 0 <= summary["within_10pct"] <= len(hashes)
    ratios = [a["speedup"] / r["best"] for a, r in zip(answers, got["rows"], strict=True)]
    assert summary["geomean_ratio"] == pytest.approx(math.exp(sum(map(math.log, ratios)) / len(ratios)))
    # --agents: the hybrid of the model with an agent is never slower than the model's answer alone.
    import torch

    from llmopt.poly.agent.model import ActorCritic

    torch.manual_seed(0)
    policy, agent = tmp_path / "agent.pt", ActorCritic(hidden=16, heads=2)
    torch.save({"model": agent.state_dict(), "model_config": agent.config}, policy)
    hybrid_out = tmp_path / "hybrid.json"
    assert costmodel_select.main([str(model), "--data", str(data), "--split", "test", "--min-baseline-ms", "0",
                                  "--min-best", "0", "--verify", "1", "--repeats", "2", "--agents", str(policy),
                                  "--out", str(hybrid_out)]) == 0
    rows = json.loads(hybrid_out.read_text())["rows"]
    key = f"{model}+{policy}"
    assert all(r["models"][key]["speedup"] >= r["models"][str(model)]["speedup"] for r in rows)
    assert all("agent" in r["models"][key] for r in rows)
    monkeypatch.setattr(costmodel_select, "search_one", lambda *_: pytest.fail("a finished answer searched again"))
    assert costmodel_select.main([str(model), "--data", str(data), "--split", "test", "--min-baseline-ms", "0",
                                  "--min-best", "0", "--out", str(out)]) == 0  # resumes: every answer is there
    assert json.loads(out.read_text())["rows"] == got["rows"]


def test_costmodel_runs_averages_repeated_runs_and_refuses_mixed_settings(tmp_path):
    import sys
    from pathlib import Path

    from llmopt.errors import UsageError

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
    import costmodel_runs

    def run(name: str, verify: int, degradation: float, own: float) -> str:
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps({"config": {"verify": verify, "candidates": "best", "budget_seconds": 900},
                                    "search_speedup": 100.0 / verify, "degradation_pct": degradation,
                                    "search_timings": {"degradation_pct": own},
                                    "rows": [{"benchmark": "gemm", "bsm_vs_bse_side": 1 - degradation / 100,
                                              "bsma_vs_bse_side": 1.0}],
                                    **({"with_agent": {"degradation_pct": degradation / 2}} if name == "b" else {})}))
        return str(path)

    a, b, c = run("a", 4, 2.0, 20.0), run("b", 4, 6.0, 10.0), run("c", 1, 9.0, 30.0)
    out = tmp_path / "summary.json"
    assert costmodel_runs.main([f"v4={a},{b}", f"v1={c}", "--out", str(out)]) == 0
    got = json.loads(out.read_text())
    assert got["v4"]["columns"]["degradation, side by side"] == [2.0, 6.0]
    assert got["v4"]["columns"]["degradation, own timings"] == [20.0, 10.0]
    assert got["v1"]["settings"]["verify"] == 1 and got["v1"]["columns"]["search speedup, full cost"] == [100.0]
    assert "**4.0** (2.0 / 6.0)" in costmodel_runs.table(got)  # the mean of the repeated runs, each beside it
    assert got["v4"]["per_benchmark"] == {"gemm": [0.98, 0.94]}
    assert "| v4 | 0.96 |" in costmodel_runs.benchmark_table(got)  # per benchmark, the runs' mean
    with pytest.raises(UsageError, match="different settings"):
        costmodel_runs.main([f"mixed={a},{c}"])
    assert costmodel_runs.main([f"agent={b}", "--agent", "agent", "--out", str(out)]) == 0  # BSM + agent's numbers
    assert json.loads(out.read_text())["agent"]["columns"]["degradation, side by side"] == [3.0]
    assert json.loads(out.read_text())["agent"]["per_benchmark"] == {"gemm": [1.0]}  # the hybrid's own ratio
    with pytest.raises(UsageError, match="not run with --with-agent"):
        costmodel_runs.main([f"agent={a},{b}", "--agent", "agent"])


def test_costmodel_runs_results_writes_the_median_run_with_every_runs_numbers(tmp_path):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
    import costmodel_runs

    def run(name: str, bsm: float, hybrid: float) -> str:
        folder = tmp_path / "runs" / name
        folder.mkdir(parents=True)
        (folder / "results.md").write_text(f"# run {name}\n")
        (folder / "results.json").write_text(json.dumps({
            "config": {"verify": 1, "candidates": "best", "budget_seconds": 900}, "search_speedup": 100.0 + bsm,
            "degradation_pct": bsm, "search_timings": {"degradation_pct": 2 * bsm},
            "with_agent": {"search_speedup": 90.0, "degradation_pct": hybrid}}))
        return str(folder / "results.json")

    files = [run("a", 10.0, 5.0), run("b", 20.0, 1.0), run("c", 30.0, 3.0)]
    dest = tmp_path / "docs" / "results.json"
    dest.parent.mkdir()
    dest.write_text(json.dumps({"previous_machines": {"m": 1}, "search_speedup": 0.0}))
    assert costmodel_runs.main(["shipped=" + ",".join(files), "--results", str(dest)]) == 0
    got = json.loads(dest.read_text())
    assert got["search_speedup"] == 130.0  # run c: the median by the hybrid's degradation, not BSM's (run b)
    assert got["previous_machines"] == {"m": 1}  # a key the runs do not write is kept
    rep = got["repeat_runs"]
    assert rep["median_run"] == "../runs/c/results.json" and rep["files"][0] == "../runs/a/results.json"
    assert rep["degradation_pct"] == [10.0, 20.0, 30.0] and rep["means"]["search_timings_degradation_pct"] == 40.0
    assert rep["with_agent"]["degradation_pct"] == [5.0, 1.0, 3.0] and rep["with_agent"]["means"]["degradation_pct"] == 3.0
    assert (dest.parent / "results.md").read_text() == "# run c\n"  # its report comes with it
    assert costmodel_runs.main(["trees=" + ",".join(files), "--results", str(dest), "--median-by", "bsm"]) == 0
    assert json.loads(dest.read_text())["search_speedup"] == 120.0  # run b: the median by BSM's degradation


def test_costmodel_compare_extremes_split_the_mape_at_the_slow_rows(model_and_data):
    """`scripts/costmodel_compare.py`'s "extremes": the rows slower than 0.25x make `of_total` of the MAPE and
    the rest `mape_without`, so the two give back the whole MAPE; answering 1.0x calls nothing slow."""
    import sys
    from pathlib import Path

    import numpy as np
    import torch

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
    import costmodel_compare

    from llmopt.poly.costmodel.train import TrainConfig, featurize_rows, predict_trees

    _, data = model_and_data
    ds = featurize_rows(load_rows(data), TrainConfig(fractions=(0.0, 0.0)), progress=False)["test"]
    ds.speedups = [(0.1, 2.0, 0.9)[k % 3] for k in range(len(ds.speedups))]  # labels with every kind of row
    y = np.asarray(ds.speedups)
    for seed in range(50):  # answers spread around 0.55x; the first draw that calls a slow row slow
        torch.manual_seed(seed)
        model = CostModel(ModelConfig.tiny())
        torch.nn.init.normal_(model.head[-1].weight, std=30.0)
        torch.nn.init.constant_(model.head[-1].bias, -0.6)
        pred = predict_trees(model, ds.trees)
        if (pred[y < 0.25] < 0.5).any():
            break
    got = costmodel_compare.extremes({"m": model}, ds)
    assert np.abs(np.log(pred)).max() > 0.1  # the model's answers are not the constant's
    slow = got["slow"]
    assert slow == int((y < 0.25).sum()) > 0 and got["samples"] == len(y)
    assert got["always_1"]["called_slow"] == 0 and got["always_1"]["false_alarms"] == 0
    for name, answer in (("m", pred), ("always_1", np.ones_like(y))):
        whole = float(np.mean(np.abs(answer - y) / y))
        parts = got[name]["of_total"] + got[name]["mape_without"] * (len(y) - slow) / len(y)
        assert parts == pytest.approx(whole, abs=1e-3)
    assert got["m"]["called_slow"] == int((pred[y < 0.25] < 0.5).sum()) > 0


def test_costmodel_compare_scores_validation_only_on_the_programs_a_model_did_not_train_on():
    """`train --validation-share` trains on some of the default split's validation programs: `unseen` drops them."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
    import costmodel_compare

    from llmopt.poly.costmodel.train import Dataset

    ds = Dataset(trees=[None] * 4, speedups=[1.0, 2.0, 3.0, 4.0], programs=["a", "b", "a", "c"])
    left = costmodel_compare.unseen(ds, {"programs": {"train": ["a", "z"], "validation": ["c"]}})
    assert left.programs == ["b", "c"] and left.speedups == [2.0, 4.0]
    assert costmodel_compare.unseen(ds, {}).programs == ds.programs  # an old file without the lists keeps all


def test_costmodel_fork_count_reads_the_trips_around_the_first_parallel_loop():
    """`scripts/costmodel_fork_count.py`: a parallel loop under a 1000-trip loop is entered ~2^10 times; an outermost
    parallel loop once (log2 0); no parallel loop, None; the largest over the computations counts."""
    import sys
    from pathlib import Path

    import numpy as np

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
    import costmodel_fork_count as fc

    from llmopt.poly.agent.state import squash
    from llmopt.poly.benchmarks import benchmark
    from llmopt.poly.costmodel.features import (
        COMP_FEATURES,
        LOOP_EXTENT,
        LOOP_FEATURES,
        LOOP_PARALLEL,
        featurize,
    )
    from llmopt.poly.schedule import Parallel, Schedule

    def comp(extents, parallel_level):
        c = np.zeros(COMP_FEATURES)
        for level, n in enumerate(extents):
            c[level * LOOP_FEATURES] = 1.0
            c[level * LOOP_FEATURES + LOOP_EXTENT] = squash(n)
            c[level * LOOP_FEATURES + LOOP_PARALLEL] = float(level == parallel_level)
        return c

    assert fc.log2_forks(np.stack([comp([1000, 6], 1)])) == pytest.approx(np.log2(1001), rel=1e-6)
    assert fc.log2_forks(np.stack([comp([1000, 6], 0)])) == 0.0
    assert fc.log2_forks(np.stack([comp([1000, 6], None)])) is None
    both = np.stack([comp([7, 6], 1), comp([1000, 50, 6], 2)])
    assert fc.log2_forks(both) == pytest.approx(np.log2(1001) + np.log2(51), rel=1e-6)
    # the offsets are those the real featurizer writes: gemm's j loop made parallel is entered once per i (NI times)
    prog = benchmark("gemm", small=True)
    inner = np.asarray(featurize(prog, Schedule((Parallel("S0", 1),))).comps)
    assert fc.log2_forks(inner) == pytest.approx(np.log2(prog.params["NI"] + 1), rel=1e-5)
    assert fc.log2_forks(np.asarray(featurize(prog, Schedule()).comps)) is None
    assert fc.bucket(np.array([0.01, 0.2, 1.0]), np.array([True, True, False])) == {
        "rows": 2, "median_speedup": 0.105, "under_0.25x": 2, "under_0.05x": 1}
    assert fc.bucket(np.array([1.0]), np.array([False])) is None


def test_costmodel_compare_by_program_splits_steady_from_unsteady_programs():
    """`by_program`: a program whose identity row (its executable timed against itself) is within 5% of 1.0x is
    steady, past 15% unsteady, between them neither; each part's MAPE and the worst programs' share of it."""
    import sys
    from pathlib import Path

    import pytest

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
    import costmodel_compare

    from llmopt.poly.costmodel.train import Dataset

    rows = [{"hash": h, "schedule": [], "speedup": v} for h, v in (("a", 1.02), ("b", 0.7), ("c", 1.1))]
    rows.append({"hash": "a", "schedule": [{"kind": "reversal"}], "speedup": 9.0})  # not an identity row
    ds = Dataset(trees=[None] * 6, speedups=[1.0, 2.0, 0.5, 1.0, 1.25, 4.0], programs=["a", "a", "b", "b", "c", "d"])
    got = costmodel_compare.by_program(rows, {}, ds)
    assert (got["programs"], got["steady"], got["unsteady"]) == (4, 1, 1)  # c is neither, d has no identity row
    assert got["always_1"]["steady"] == pytest.approx((0.0 + 0.5) / 2)
    assert got["always_1"]["unsteady"] == pytest.approx((1.0 + 0.0) / 2)
    # APE sums per program: a 0.5, b 1.0, c 0.2, d 0.75; the worst tenth of 4 programs is one: b
    assert got["always_1"]["worst_share"] == pytest.approx(1.0 / 2.45, abs=1e-3)


def test_costmodel_compare_neutral_splits_out_the_rows_near_1x(model_and_data):
    """`scripts/costmodel_compare.py`'s "neutral": the neutral rows' part of the MAPE, for every schedule and per
    kind of transformation; a model that answers 1.0x everywhere makes exactly the constant's part, one that does
    not makes more, and each kind counts only the schedules that hold it."""
    import sys
    from pathlib import Path

    import numpy as np
    import torch

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
    import costmodel_compare

    from llmopt.poly.costmodel.train import TrainConfig, featurize_rows

    _, data = model_and_data
    rows = load_rows(data)
    for r in rows:  # neutral rows at exactly 1.0x (the constant makes none of the MAPE there), the rest far off
        r["speedup"] = 1.0 if not r["schedule"] else (1.0, 3.0, 0.5)[len(r["schedule"]) % 3]
    sets = featurize_rows(rows, TrainConfig(), progress=False)
    flat = CostModel(ModelConfig.tiny())  # the zero last layer answers 1.0x everywhere
    torch.manual_seed(0)
    moved = CostModel(ModelConfig.tiny())
    torch.nn.init.normal_(moved.head[-1].weight, std=30.0)
    got = costmodel_compare.neutral(rows, sets, {"flat": flat, "moved": moved}, 0.0)
    for split in got.values():
        whole = split["all"]
        assert whole["neutral"] > 0 and whole["flat"]["of_total"] == whole["always_1_of_total"]
        assert whole["always_1_of_total"] == 0.0 < whole["moved"]["of_total"]
        kinds = [k for k in split if k != "all"]
        assert kinds and all(split[k]["samples"] <= whole["samples"] for k in kinds)
    mine = {t["kind"] for r in rows for t in r["schedule"]}
    assert {k for s in got.values() for k in s} - {"all"} <= mine
    assert np.isfinite(got[next(iter(got))]["all"]["moved"]["mape"])


def test_costmodel_compare_by_share_splits_the_schedules_by_the_work_they_change(model_and_data):
    """`scripts/costmodel_compare.py`'s "by_share": every transformed schedule falls in exactly one range of
    `features.changed_share` (identities in none), the constant's figures are its own, and a model that answers
    1.0x everywhere scores exactly the constant in every range."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
    import costmodel_compare

    from llmopt.poly.costmodel.features import changed_share
    from llmopt.poly.costmodel.train import TrainConfig, featurize_rows, split_of

    _, data = model_and_data
    rows = load_rows(data)
    cfg = TrainConfig()
    sets = featurize_rows(rows, cfg, progress=False)
    got = costmodel_compare.by_share(rows, sets, {"flat": CostModel(ModelConfig.tiny())}, 0.0)
    assert got
    for split, ranges in got.items():
        moved = [r for r in rows if r["schedule"] and split_of(r["hash"], cfg.fractions, cfg.seed) == split]
        assert sum(r["samples"] for r in ranges.values()) == len(moved) > 0
        assert all(0.0 <= changed_share(t) <= 1.0 for t in sets[split].trees)
        for r in ranges.values():
            assert r["flat"] == {"mape": r["always_1"], "of_total": r["always_1_of_total"]}
