"""End-to-end evaluation on real data with the real LLVM: every table and plot, resume, a .ll directory, the CLI."""

import json
import shutil
from pathlib import Path

import pytest

from eval.cli import main as eval_main
from eval.methods import expand_methods
from eval.runner import RECORDS, EvalConfig, run_eval
from training.config import config_from_dict
from training.train import train

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
TINY = {"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 2,
        "intermediate_size": 64}
TABLES = ("overview", "overview_oz_backup", "sampling_curve", "sampling_curve_oz_backup", "unique_samples",
          "by_source", "by_size", "pass_frequency", "list_length", "objsize")


@pytest.fixture(scope="module")
def tiny_model(data, tmp_path_factory):
    out = tmp_path_factory.mktemp("eval_model")
    cfg = config_from_dict(dict(data_dir=str(data), out_dir=str(out), model_overrides=TINY, tokenizer_vocab_size=600,
                                context_length=1536, batch_size=4, max_steps=2, lr=3e-3, warmup_steps=1,
                                log_interval=1, checkpoint_interval=2, eval_interval=0, val_functions=0, seed=0))
    return train(cfg, progress=False)


def _cfg(data, out, **kw):
    values = dict(dataset=f"{data}:test", out=out, methods=["random", "coreset", "coreset_cover", "autotuner", "oz"],
                  samples=[1, 3, 5], seed=0, workers=1, cache=False, progress=False, chunk=2)
    values.update(kw)
    return EvalConfig(**values)


def test_model_free_eval_writes_everything_and_resumes(data, tmp_path):
    out = tmp_path / "run"
    results = run_eval(_cfg(data, out))
    methods = results["methods"]
    assert {"random", "coreset", "coreset_cover", "autotuner", "oz"} <= set(methods)
    assert results["n_functions"] == 4 and results["instcount_oz"] > 0
    for k in ("1", "3", "5"):
        assert methods["oz"]["samples"][k]["overall_improvement_pct"] == 0.0
        s = methods["random"]["samples"][k]
        assert {"overall_improvement_pct", "functions_improved", "functions_regressed", "compilations"} <= set(s)
        assert s["oz_backup"]["overall_improvement_pct"] >= 0.0  # the backup never loses to -Oz
    assert methods["random"]["samples"]["5"]["compilations"] == 4 * 5
    # The sample dataset's labels are the best of its candidates: the autotuner is >= -Oz.
    assert methods["autotuner"]["samples"]["1"]["overall_improvement_pct"] >= 0.0
    saved = json.loads((out / "results.json").read_text())
    assert set(saved["methods"]) == set(methods)
    for name in TABLES:
        for ext in ("md", "csv", "json"):
            assert (out / "tables" / f"{name}.{ext}").stat().st_size > 0, (name, ext)
    for plot in ("sampling_curve", "improvement_vs_compilations", "by_size", "pass_frequency"):
        assert (out / "plots" / f"{plot}.png").stat().st_size > 1000
    report = (out / "REPORT.md").read_text()
    assert "plots/sampling_curve.png" in report and "tables/overview.csv" in report
    assert "plots/improvement_vs_compilations.png" in report
    # --report-only: the same report again from results.json, the records untouched.
    lines = (out / RECORDS).read_text().count("\n")
    shutil.rmtree(out / "plots")
    (out / "REPORT.md").unlink()
    assert eval_main(["--report-only", "--out", str(out)]) == 0
    assert (out / "REPORT.md").read_text() == report and (out / RECORDS).read_text().count("\n") == lines
    assert (out / "plots" / "improvement_vs_compilations.png").stat().st_size > 1000
    # Rerun: nothing is sampled again, the same seed gives the same tables.
    again = run_eval(_cfg(data, out))
    assert (out / RECORDS).read_text().count("\n") == lines
    assert again["methods"] == results["methods"]
    # A fresh directory with the same seed reproduces the numbers.
    fresh = run_eval(_cfg(data, tmp_path / "fresh"))
    assert fresh["methods"] == results["methods"]


def test_ll_directory_without_labels(tmp_path):
    src = tmp_path / "lls"
    src.mkdir()
    shutil.copy(EXAMPLES / "example.ll", src / "example.ll")
    out = tmp_path / "run"
    code = eval_main(["--dataset", str(src), "--methods", "random,oz,autotuner", "--samples", "1,4", "--out",
                      str(out), "--no-cache", "--workers", "1", "--quiet"])
    assert code == 0
    results = json.loads((out / "results.json").read_text())
    assert results["n_functions"] >= 2  # example.ll holds several functions, split one per module
    assert set(results["methods"]) == {"random", "oz"}
    assert any("autotuner" in n for n in results["notes"])  # no labels: said, not crashed
    assert (out / "REPORT.md").exists() and (out / "tables" / "sampling_curve.md").exists()


def test_cli_bad_input_is_a_usage_error(tmp_path, capsys):
    assert eval_main(["--dataset", str(tmp_path / "missing"), "--out", str(tmp_path / "o")]) == 2
    assert "no such dataset" in capsys.readouterr().err
    assert eval_main(["--dataset", str(tmp_path), "--methods", "bogus", "--out", str(tmp_path / "o")]) == 2
    assert expand_methods(["model", "random"]) == ["greedy", "nucleus", "priority", "random"]
    assert eval_main(["--out", str(tmp_path / "o")]) == 2  # no --dataset, no --report-only
    assert "--dataset is required" in capsys.readouterr().err
    assert eval_main(["--report-only", "--out", str(tmp_path)]) == 2  # nothing evaluated there
    err = capsys.readouterr().err
    assert "results.json does not exist" in err and err.count("\n") == 1


def test_model_methods_and_code_quality(data, tiny_model, tmp_path):
    out = tmp_path / "run"
    cfg = _cfg(data, out, methods=["greedy", "nucleus", "priority", "priority_geomean", "priority_branch3",
                                   "priority_lists", "random", "autotuner"],
               samples=[1, 3], quality_limit=2, quality_max_new_tokens=48)
    cfg.options.model = str(tiny_model)
    cfg.options.max_passes = 8  # an untrained model rambles: keep its lists short
    results = run_eval(cfg)
    methods = results["methods"]
    assert {"greedy", "nucleus", "priority", "priority_geomean", "priority_branch3"} <= set(methods)
    assert methods["greedy"]["samples"]["3"]["compilations"] <= 4  # greedy gives one list per function
    assert methods["priority"]["samples"]["3"]["unique_samples"] >= methods["greedy"]["samples"]["3"]["unique_samples"]
    # priority_lists only ever proposes coreset_cover's candidates: the training labels and -Oz.
    from eval.inputs import training_rows

    labels = {tuple(r["passes"]) for r in training_rows(None, cfg.dataset) if r.get("passes")} | {("default<Oz>",)}
    proposed = [tuple(s["passes"]) for line in (out / "records.jsonl").read_text().splitlines()
                if (rec := json.loads(line))["method"] == "priority_lists" for s in rec["samples"]]
    assert proposed and set(proposed) <= labels
    q = results["quality"]
    assert q["n_functions"] == 2 and 0.0 <= q["parses_pct"] <= 100.0 and 0.0 <= q["bleu"] <= 1.0
    for name in ("quality", "parse_errors"):
        assert (out / "tables" / f"{name}.md").exists()
    assert "Model vs baselines" in (out / "REPORT.md").read_text()


def test_objsize_metric_picks_and_reports_bytes(data, tmp_path):
    """--metric objsize: candidates are chosen by .text+.data bytes; with -Oz backup never above -Oz."""
    out = tmp_path / "bytes"
    results = run_eval(_cfg(data, out, methods=["random", "oz"], metric="objsize"))
    assert results["metric"] == "objsize" and results["unit"] == "bytes"
    for k in ("1", "3", "5"):
        backed = results["methods"]["random"]["samples"][k]["oz_backup"]
        assert backed["functions_regressed"] == 0 and backed["instcount_result"] <= backed["instcount_oz"]
    base = {r["fid"]: r for r in map(json.loads, (out / "baseline.jsonl").read_text().splitlines())}
    assert results["instcount_oz"] == sum(r["objsize_oz"] for r in base.values())  # bytes, not instructions
    records = [json.loads(line) for line in (out / RECORDS).read_text().splitlines()]
    best = sum(min(c["objsize"] for c in r["samples"][:5]) for r in records if r["method"] == "random")
    assert results["methods"]["random"]["samples"]["5"]["instcount_result"] == best
    with pytest.raises(Exception, match="other settings"):  # an instcount run may not mix into it
        run_eval(_cfg(data, out, methods=["random", "oz"]))


def test_run_without_metric_in_its_config_resumes(data, tmp_path):
    """An evaluation started before --metric existed (no `metric` in config.json) resumes as instcount."""
    out = tmp_path / "old"
    first = run_eval(_cfg(data, out, methods=["oz"]))
    stored = json.loads((out / "config.json").read_text())
    del stored["metric"]
    (out / "config.json").write_text(json.dumps(stored))
    assert run_eval(_cfg(data, out, methods=["oz"]))["methods"] == first["methods"]


@pytest.mark.parametrize("files,error", [
    ({"test.parquet": b"PAR1 not really parquet"}, "not a readable parquet file"),
    ({"a.ll": b"\x00\x01\x02binary"}, "binary file"),
    ({"a.ll": b"define i32 @f() {\n  ret i64 0\n}\n"}, "malformed"),
])
def test_cli_bad_dataset_is_one_line(tmp_path, capsys, files, error):
    src = tmp_path / "in"
    src.mkdir()
    for name, content in files.items():
        (src / name).write_bytes(content)
    assert eval_main(["--dataset", str(src), "--out", str(tmp_path / "o"), "--no-cache", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert error in err and err.count("\n") == 1


def test_cli_nothing_evaluated_is_an_error(tmp_path, capsys):
    src = tmp_path / "lls"
    src.mkdir()
    shutil.copy(EXAMPLES / "example.ll", src / "example.ll")
    code = eval_main(["--dataset", str(src), "--methods", "autotuner", "--samples", "1", "--out", str(tmp_path / "o"),
                      "--no-cache", "--workers", "1", "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and "nothing was evaluated" in err and err.count("\n") == 1


def test_polish_method_spends_compilations_after_its_seeds(data, tmp_path):
    """coreset_polish1: one coreset list, then the lists a greedy polish compiles (sample k = k-th compilation)."""
    assert expand_methods(["priority_polish10", "coreset_polish3"]) == ["priority_polish10", "coreset_polish3"]
    with pytest.raises(Exception, match="unknown method"):
        expand_methods(["oz_polish3"])
    results = run_eval(_cfg(data, tmp_path / "run", methods=["coreset", "coreset_polish1"], samples=[1, 40]))
    plain, polished = results["methods"]["coreset"]["samples"], results["methods"]["coreset_polish1"]["samples"]
    assert polished["1"]["overall_improvement_pct"] == plain["1"]["overall_improvement_pct"]  # same first sample
    assert polished["40"]["compilations"] > 4  # the polish compiled more lists than its seed
    assert polished["40"]["oz_backup"]["overall_improvement_pct"] >= polished["1"]["oz_backup"]["overall_improvement_pct"]
    records = [json.loads(line) for line in (tmp_path / "run" / RECORDS).read_text().splitlines()]
    samples = [r["samples"] for r in records if r.get("method") == "coreset_polish1"]
    assert samples and all(len({tuple(c["passes"]) for c in s}) == len(s) for s in samples)  # no list twice
