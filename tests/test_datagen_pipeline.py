"""End-to-end datagen on a few csmith functions with a tiny budget; the job's options and config file."""

from __future__ import annotations

from pathlib import Path

import pytest

from data_pipeline.cli import main
from llmopt.dataset import COLUMNS, load_dataset_dict

pytestmark = pytest.mark.timeout(300)


def test_small_run_writes_loadable_datasetdict(tmp_path: Path):
    out = tmp_path / "ds"
    rc = main(["--source", "csmith:6", "--budget", "12", "--greedy-steps", "1", "--broadcast-top", "3",
               "--shard-units", "3", "--shard-functions", "8", "--workers", "2", "--cache", str(tmp_path / "c.sqlite"), "--out", str(out),
               "--no-progress"])
    assert rc == 0
    ds = load_dataset_dict(out)
    assert set(ds) == {"train", "validation", "test"}
    rows = [r for split in ds.values() for r in split]
    assert rows, "six csmith programs give at least one function"
    assert tuple(ds["train"].column_names) == COLUMNS
    for r in rows:
        assert r["instcount_best"] <= r["instcount_oz"]
        assert r["passes"] and r["optimized_ir"].strip()
        assert r["search_method"] in ("random", "greedy", "broadcast", "polish", "oz")
        assert r["evaluations"] >= 1 and r["llvm_version"] >= 14
        assert r["instcount_input"] >= 5  # the default --min-instructions
        # good_lists: the label first, every list at the best count before any worse one, counts ascending
        good = r["good_lists"]
        assert good[0] == {"passes": r["passes"], "instcount": r["instcount_best"]}
        assert [g["instcount"] for g in good] == sorted(g["instcount"] for g in good)
        assert sum(g["instcount"] == r["instcount_best"] for g in good) == min(r["n_best_lists"], 64) or \
            len(good) >= 64
    # The package split: a csmith program (its own package) never straddles splits.
    split_of_package = {}
    for split, rows_ in ds.items():
        for r in rows_:
            assert split_of_package.setdefault(r["package"], split) == split
    assert len({r["ir_hash"] for r in rows}) == len(rows)
    card = (out / "README.md").read_text()
    assert "improvement over -Oz" in card and "csmith" in card
    assert ("## Test split by source and size" in card) == (len(ds["test"]) > 0)
    from data_pipeline.status import job_status

    status = job_status(out)  # what `llmopt datagen --status --out DIR` prints
    n = len(list((out / "work" / "p2").glob("shard-*.json.gz")))
    import re

    assert f"phase 2 {n}/{n} shards" in status and re.search(rf"all\s+{len(rows)} functions", status), status


def test_bad_arguments_exit_nonzero(capsys, tmp_path: Path):
    never = str(tmp_path / "never-written")
    assert main(["--source", "nosuch:1", "--out", never]) == 2
    assert "unknown source" in capsys.readouterr().err
    for bad in (["--shard-units", "-1"], ["--budget", "0"], ["--test-share", "0.7", "--validation-share", "0.4"],
                ["--shard-functions", "0"]):
        assert main(["--source", "csmith:2", "--out", never, *bad]) == 2, bad
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "must be" in err, err
    assert not Path(never).exists()


def test_config_file_with_command_line_overrides(tmp_path: Path):
    import argparse
    import json

    from data_pipeline.cli import add_parser, config_from_args

    cfg_file = tmp_path / "job.json"
    cfg_file.write_text(json.dumps({"sources": ["csmith:5"], "out": str(tmp_path / "o"), "budget": 50}))
    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["datagen", "--config", str(cfg_file), "--budget", "70"])
    cfg = config_from_args(args)
    assert (cfg.sources, cfg.budget, cfg.greedy_steps) == (["csmith:5"], 70, 40)
    assert args.func is not None
