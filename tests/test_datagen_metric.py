"""`datagen --metric`: labels tuned for object size, and jobs started before the setting existed resume."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from data_pipeline.cli import main
from data_pipeline.job import JobConfig, JobError, _check_config
from llmopt.dataset import COLUMNS, OBJSIZE_COLUMNS, load_dataset_dict

pytestmark = pytest.mark.timeout(300)
REPO = Path(__file__).resolve().parent.parent
# work/config.json of data/llmopt-v3 as that job stored it (before `metric` existed).
V3_CONFIG = {"sources": ["csmith:300", "packages:all"], "budget": 1000, "greedy_steps": 40, "max_len": 12,
             "minimize": True, "seed": 0, "max_tokens": 4096, "min_instructions": 5, "package_cap": 1000,
             "shard_units": 32, "shard_functions": 64, "broadcast_top": 256, "split": "package", "test_share": 0.06,
             "validation_share": 0.06, "tokenizer": None, "safety": True}


@pytest.mark.parametrize("stored", [V3_CONFIG, "live"])
def test_job_stored_without_metric_resumes(tmp_path: Path, stored):
    """The settings check treats a missing `metric` as instcount: old jobs resume, objsize is refused."""
    if stored == "live":
        live = REPO / "data" / "llmopt-v3" / "work" / "config.json"
        if not live.exists():
            pytest.skip("no data/llmopt-v3 job in this checkout")
        stored = json.loads(live.read_text())
    assert "metric" not in stored
    work = tmp_path / "work"
    work.mkdir()
    (work / "config.json").write_text(json.dumps(stored))
    # What `llmopt datagen --config work/config.json --out DIR` builds (scripts/datagen_elsewhere.sh does that).
    cfg = JobConfig.from_file(work / "config.json", out=str(tmp_path))
    _check_config(cfg)  # no error: same settings
    assert json.loads((work / "config.json").read_text()) == stored  # and the stored file is untouched
    cfg = JobConfig.from_file(work / "config.json", out=str(tmp_path), metric="objsize")
    with pytest.raises(JobError, match="metric"):
        _check_config(cfg)


def test_objsize_labels_are_chosen_by_bytes(tmp_path: Path):
    from llmopt.harness import Harness

    out = tmp_path / "ds"
    rc = main(["--source", "csmith:3", "--metric", "objsize", "--budget", "12", "--greedy-steps", "1",
               "--broadcast-top", "2", "--shard-units", "3", "--shard-functions", "8", "--workers", "2",
               "--no-safety", "--cache", str(tmp_path / "c.sqlite"), "--out", str(out), "--no-progress"])
    assert rc == 0
    ds = load_dataset_dict(out)
    assert tuple(ds["train"].column_names) == COLUMNS + OBJSIZE_COLUMNS
    rows = [r for split in ds.values() for r in split]
    assert rows
    with Harness(workers=2, cache=False) as harness:
        for r in rows:
            assert r["metric"] == "objsize" and r["objsize_best"] <= r["objsize_oz"]
            label, oz = harness.evaluate_many(r["ir"], [r["passes"], ["default<Oz>"]], objsize=True)
            # the stored numbers are real measurements of the label: bytes and instructions
            assert (label.objsize, oz.objsize) == (r["objsize_best"], r["objsize_oz"])
            assert (label.instcount, oz.instcount) == (r["instcount_best"], r["instcount_oz"])
            good = r["good_lists"]
            assert good[0]["passes"] == r["passes"] and good[0]["objsize"] == r["objsize_best"]
            assert [g["objsize"] for g in good] == sorted(g["objsize"] for g in good)
    assert "Labels minimize bytes" in (out / "README.md").read_text()
    assert json.loads((out / "work" / "config.json").read_text())["metric"] == "objsize"
