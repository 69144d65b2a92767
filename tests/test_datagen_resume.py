"""A killed datagen job resumes with no lost or duplicated rows; the Ray executor gives the same rows."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from data_pipeline.writer import read_shard
from llmopt.dataset import load_dataset_dict

pytestmark = pytest.mark.timeout(300)
ARGS = ["--source", "csmith:8", "--budget", "10", "--greedy-steps", "0", "--broadcast-top", "2",
        "--shard-units", "2", "--shard-functions", "3", "--workers", "1", "--no-safety", "--no-progress"]


def _start(out: Path, cache: Path, *extra: str) -> subprocess.Popen:
    """The job in its own process group; its output goes to OUT.log (an unread pipe could stall it)."""
    cmd = [sys.executable, "-m", "data_pipeline.cli", *ARGS, "--cache", str(cache), "--out", str(out), *extra]
    with _log(out).open("ab") as log:
        return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def _log(out: Path) -> Path:
    return out.parent / f"{out.name}.log"


def _run(out: Path, cache: Path, *extra: str) -> tuple[int, str]:
    """(exit code, output so far) of the job run to its end."""
    rc = _start(out, cache, *extra).wait()
    return rc, _log(out).read_text()


def _rows(out: Path) -> list[tuple]:
    ds = load_dataset_dict(out)
    return sorted((r["ir_hash"], split, tuple(r["passes"]), r["instcount_best"])
                  for split in ds for r in ds[split])


def test_killed_job_resumes_without_loss_or_duplicates(tmp_path: Path):
    out, cache = tmp_path / "ds", tmp_path / "c.sqlite"
    proc = _start(out, cache)
    p1 = out / "work" / "p1"
    # Kill as soon as the first phase-1 shard is on disk: no sleep decides what was finished.
    while not list(p1.glob("shard-*.json.gz")):
        assert proc.poll() is None, _log(out).read_text()  # it exited before any shard
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)  # the job and its harness workers, mid-run
    proc.wait()
    finished = sorted(p1.glob("shard-*.json.gz"))
    for shard in finished:  # a kill may leave a temp file behind, never a partial shard
        assert read_shard(shard)["rows"] is not None
    rc, log = _run(out, cache)
    assert rc == 0, log
    resumed = _rows(out)
    assert len({h for h, *_ in resumed}) == len(resumed)
    fresh = tmp_path / "fresh"
    rc, log = _run(fresh, tmp_path / "c2.sqlite")
    assert rc == 0, log
    assert resumed == _rows(fresh)


def test_resume_with_other_settings_is_refused(tmp_path: Path):
    out, cache = tmp_path / "ds", tmp_path / "c.sqlite"
    rc, log = _run(out, cache, "--limit-shards", "1")
    assert rc == 0, log
    rc, log = _run(out, cache, "--limit-shards", "1", "--seed", "9")
    assert rc == 2 and "other settings" in log  # bad input: one line, exit 2


def test_ray_executor_matches_local(tmp_path: Path):
    pytest.importorskip("ray")
    import ray

    local, distributed = tmp_path / "local", tmp_path / "ray"
    rc, log = _run(local, tmp_path / "c1.sqlite", "--limit-shards", "2")
    assert rc == 0, log
    ray.init(num_cpus=2, include_dashboard=False, ignore_reinit_error=True, log_to_driver=False)
    try:
        from data_pipeline.cli import main

        rc = main([*ARGS, "--limit-shards", "2", "--executor", "ray", "--cache", str(tmp_path / "c2.sqlite"),
                   "--out", str(distributed)])
    finally:
        ray.shutdown()
    assert rc == 0
    assert _rows(local) == _rows(distributed)


def test_shard_plan_only_grows_when_packages_are_added(tmp_path: Path):
    """New work items (catalog packages appended) become new shards after the stored ones; a function an
    old item already holds is not planned twice."""
    from data_pipeline.job import JobConfig, plan_shards
    from data_pipeline.writer import item_path, write_shard

    out = tmp_path / "job"
    cfg = JobConfig(sources=["packages:all"], out=str(out), shard_functions=2)

    def item(i: int, hashes: list[str]) -> None:
        write_shard(item_path(out, i), {"item": f"i{i}", "stats": {}, "rows": [{"ir_hash": h} for h in hashes]})

    item(0, ["a", "b", "c"])
    item(1, ["d", "a"])
    first = plan_shards(cfg, 2)
    assert first == [["a", "d"], ["b", "c"]]  # round-robin over items, duplicates dropped
    item(2, ["e", "b", "f"])
    grown = plan_shards(cfg, 3)
    assert grown[:2] == first and grown[2:] == [["e", "f"]]
    assert plan_shards(cfg, 3) == grown  # stored: the same plan on every later run


def test_shard_range_lets_two_machines_share_phase_one(tmp_path: Path):
    """One run takes shards 1-2 of phase 1 only; a later run of the whole job fills in the rest and gives
    the same rows as a job run in one go."""
    out, cache = tmp_path / "ds", tmp_path / "c.sqlite"
    rc, log = _run(out, cache, "--phases", "p0,p1", "--shard-range", "1:3")
    assert rc == 0, log
    assert sorted(p.name for p in (out / "work" / "p1").glob("shard-*.json.gz")) == \
        ["shard-00001.json.gz", "shard-00002.json.gz"]
    assert not (out / "work" / "p2").exists()
    rc, log = _run(out, cache)
    assert rc == 0, log
    fresh = tmp_path / "fresh"
    rc, log = _run(fresh, tmp_path / "c2.sqlite")
    assert rc == 0, log
    assert _rows(out) == _rows(fresh)
    rc, log = _run(tmp_path / "x", cache, "--shard-range", "3:1")
    assert rc == 2 and "shard-range" in log
