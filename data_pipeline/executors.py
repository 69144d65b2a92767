"""Where the datagen job's shards run: in this process (one harness, its workers in parallel) or on Ray
(one task per shard, one core each).

Both executors call the same shard function, `task(cfg, index, *args, harness) -> payload`, and record
its payload the same way (an atomic shard file, the job's counts, the progress bar), so a shard's rows
never depend on where it ran.  On Ray the driver owns the files: tasks only return their rows.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from data_pipeline.ray_connect import connect_ray
from data_pipeline.writer import shard_path, write_shard
from llmopt.harness import Harness, open_cache

if TYPE_CHECKING:
    from data_pipeline.job import JobConfig, JobStats

ShardTask = Callable[..., dict]  # (cfg, index, *args, harness) -> {"rows": [...], "stats": {...}, ...}


def progress(cfg: JobConfig, total: int, desc: str):
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="shard", disable=not cfg.progress, dynamic_ncols=True)


def make_harness(cfg: JobConfig, workers: int | None = None) -> Harness:
    # A path is opened by the harness: a corrupt file is replaced, an unusable one means no cache.
    cache = (cfg.cache or True) if cfg.use_cache else False
    return Harness(workers=workers or cfg.workers, timeout=cfg.eval_timeout, cache=cache)


def run_shards(cfg: JobConfig, phase: str, todo: list[int], total: int, task: ShardTask,
               args_of: Callable[[int], tuple], stats: JobStats) -> None:
    """Run `task` on every shard index in `todo` (of `total` in the phase) with the job's executor."""
    run = _run_ray if cfg.executor == "ray" else _run_local
    run(cfg, phase, todo, total, task, args_of, stats)


class _ShardRecorder:
    """Writes finished shards and keeps the job's counts and the progress bar (rates of this phase only)."""

    def __init__(self, cfg: JobConfig, phase: str, todo: list[int], total: int, stats: JobStats):
        self.out, self.phase, self.stats = Path(cfg.out), phase, stats
        self.bar = progress(cfg, total, phase)
        self.bar.update(total - len(todo))
        self.start = time.monotonic()
        self.fn0, self.ev0 = stats.functions, stats.evaluations

    def record(self, index: int, payload: dict, evaluations: int) -> None:
        write_shard(shard_path(self.out, self.phase, index), payload)
        self.stats.functions += len(payload["rows"])
        self.stats.evaluations += evaluations
        self.stats.counts.update(payload["stats"])
        elapsed = max(time.monotonic() - self.start, 1e-9)
        self.bar.set_postfix(fn_s=f"{(self.stats.functions - self.fn0) / elapsed:.2f}",
                             evals_s=f"{(self.stats.evaluations - self.ev0) / elapsed:.0f}")
        self.bar.update(1)

    def close(self) -> None:
        self.bar.close()


def _run_local(cfg: JobConfig, phase: str, todo: list[int], total: int, task: ShardTask,
               args_of: Callable[[int], tuple], stats: JobStats) -> None:
    harness = make_harness(cfg)
    recorder = _ShardRecorder(cfg, phase, todo, total, stats)
    try:
        for index in todo:
            before = harness.stats.evaluations
            payload = task(cfg, index, *args_of(index), harness)
            recorder.record(index, payload, harness.stats.evaluations - before)
    finally:
        recorder.close()
        harness.close()


def _run_ray(cfg: JobConfig, phase: str, todo: list[int], total: int, task: ShardTask,
             args_of: Callable[[int], tuple], stats: JobStats) -> None:
    import ray

    connect_ray(cfg)
    remote = ray.remote(num_cpus=1)(_ray_task)
    if cfg.cache and cfg.use_cache:
        open_cache(cfg.cache)  # create the file and switch it to WAL once, before the tasks open it
    pending = {remote.remote(cfg, task, index, args_of(index)): index for index in todo}
    recorder = _ShardRecorder(cfg, phase, todo, total, stats)
    try:
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            index = pending.pop(done[0])
            payload, evaluations = ray.get(done[0])
            recorder.record(index, payload, evaluations)
    finally:
        recorder.close()


def _ray_task(cfg: JobConfig, task: ShardTask, index: int, args: tuple) -> tuple[dict, int]:
    # One Ray task = one shard on one core: a single-worker harness, its own cache connection.
    harness = make_harness(cfg, workers=1)
    try:
        return task(cfg, index, *args, harness), harness.stats.evaluations
    finally:
        harness.close()
