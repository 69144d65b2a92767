"""Training data of the cost model: (program, schedule, measured speedup), as paper 002 §3 makes it.

For each seed, `generator.random_program(seed)` is one program; `program_schedules` draws the
identity and up to K-1 distinct random *legal* schedules of it (random walks over Pearl's 56
actions, `llmopt.poly.agent.walk`), and the `Measurer` times each (outputs checked against the
reference, memoized in the harness cache, so a re-run or another job asking the same question
never compiles again).  speedup = untransformed -O3 time / schedule time, timed in alternation
(`Measurer.paired`: `rounds` rounds of original then schedule, the median of the per-round
ratios): on a shared machine two times taken seconds apart vary more than most schedules change
them (data version 1 timed each side once: its identity schedules measured 0.71x-1.37x, 5th-95th
percentile, against themselves).  The identity row of every program measures exactly that noise.

Output folder (`collect(out, ...)`; `python -m llmopt.poly.costmodel.data OUT --programs N ...`):

    OUT/config.json                 what the numbers depend on (a resumed run must match it)
    OUT/programs/SSS/SEED.jsonl     one finished program: one JSON row per measured schedule
    OUT/packed/BBBB.jsonl.gz        finished programs of seeds BBBB*100 .. +99, packed (`--pack`)
    OUT/failed.jsonl                programs that did not run as written (seed, error), skipped
    OUT/skipped.jsonl               programs under the baseline floor (seed, baseline_ms; `--min-baseline-ms`)

A program's file is written atomically (temporary file, then rename) only when all its schedules
are measured, so the file is both its shard and its done marker: an interrupted job loses at most
the programs in flight (their measurements stay in the cache), and a re-run skips every program
that has a file, never writing a row twice.  `pack(OUT)` moves finished programs into one gzipped
file per block of 100 seeds (50,000 rows are ~50 MB loose, ~3 MB packed: the packed folder is what
a repository keeps, so a fresh machine resumes from it); a packed seed counts as done, and a pack
interrupted between writing a block and deleting its loose files leaves nothing twice.  Rows: `seed`, `hash` (program), `program` (its
dict), `schedule` (`Schedule.to_list()`), `seconds`, `baseline_seconds`, `speedup`, `load` (the 1-minute load average while the program was
measured), `retimed` (timed runs of the program taken again because other processes were busy;
rows before these were recorded lack them), `machine` (`llmopt.poly.measure.machine_id`: CPU model and
flags, clang; rows of the sessions before 2026-11-27's twentieth lack it).

Run it on an otherwise idle machine: with 2 OpenMP threads on 2 cores, any other busy process takes
a core from the parallel schedules, and their speedups come out too low (measured: with a training
job beside it, outer-loop parallelization's median speedup fell from 1.00 to 0.91 and its 90th
percentile from 1.66 to 1.02).  So the collector guards its timings (`Measurer(quiet=...)`,
`--quiet-cores`, default 0.15): a timed run during which other processes used more than that many
cores is taken again once the machine is quiet; a program's rows say how many runs were taken again
(`retimed`), and the collector still warns when the load average says the machine is busy.  The
guard sees other processes, so it is on only with one local worker (more workers, or Ray tasks on
one machine, would count each other as busy).

Programs run in parallel over `workers` processes, each with its own Measurer on the one SQLite
cache.  Timings share the machine: keep workers * threads at most the number of cores, or the
speedups are noisy.  `--executor ray` (`--address HOST:PORT`, default a local Ray) runs one Ray task
per program instead, each owning `threads` CPUs; the driver writes the files either way, so a
program's rows never depend on where it ran.  The random walks are seeded per program (seed, K), so
the same command gives the same schedules.  `write_sample(OUT, DEST, rows)` copies the first
finished programs (a few hundred rows) to a committed sample folder with a card.
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import json
import os
import random
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import asdict, dataclass
from pathlib import Path
from types import SimpleNamespace

from llmopt.errors import UsageError, one_line, run_main
from llmopt.outputs import write_atomic

DATA_VERSION = 2  # 2: speedups timed in alternation with the original (Measurer.paired)
WALK_STEPS = (1, 6)  # transformations per random schedule (Pearl's episodes and the beam depth: 4)
P_NEXT = 0.25  # chance of moving on to the next branch instead of transforming this one
SOURCES = ("random", "greedy")  # which schedules of a program are measured (DataConfig.source)
PACK_BLOCK = 100  # seeds per packed file
BUSY_LOAD = 1.25  # load average per core above which the machine counts as busy (the collector alone: <= 1)


@dataclass(frozen=True)
class DataConfig:
    """Settings the rows depend on (saved in config.json; a resumed job must use the same)."""

    schedules_per_program: int = 32
    repeats: int = 10
    threads: int = 2
    small: bool = False
    rounds: int = 5  # alternations of original and schedule per measurement (Measurer.paired)
    version: int = DATA_VERSION
    # "random": the identity and random legal walks (`program_schedules`); "greedy": a greedy search with
    # execution over walks (`searched_rows`), i.e. labels from search for the agent's imitation.
    source: str = "random"
    greedy_width: int = 12  # greedy: candidates measured per step (parallelization and interchange always)
    greedy_depth: int = 3  # greedy: transformations per branch at most
    iterations: tuple[float, float] | None = None  # generator.Limits.iterations override (None: its default)
    limits: dict | None = None  # other generator.Limits overrides, e.g. {"p_double_buffer": 0.5} (`--limit`)
    # Programs whose -O3 original runs shorter are timed once and skipped (skipped.jsonl): the rows a
    # model judged on longer programs learns from, at a quarter of the collection time (`--min-baseline-ms`).
    min_baseline_ms: float = 0.0
    # random: the share of walk steps that take an interchange of the branch's two innermost loops when one is
    # legal (0: uniform over the legal actions). Those interchanges make nearly all of the rare 0.05-0.25x
    # slowdowns and many of the large speedups (docs/results/costmodel), ~19% of uniform walks' rows.
    inner_share: float = 0.0


def generator_limits(cfg: DataConfig) -> dict:
    """The `random_program` keyword overrides of a data folder's settings."""
    return {**(cfg.limits or {}), **({"iterations": tuple(cfg.iterations)} if cfg.iterations else {})}


def folder_config(folder: str | os.PathLike) -> DataConfig:
    """The settings a collected folder's config.json records (the default for a setting added since), so
    that `random_program(seed, cfg.small, **generator_limits(cfg))` draws programs as that folder does."""
    raw = json.loads((Path(folder) / "config.json").read_text())
    cfg = DataConfig(**{k: v for k, v in raw.items() if k in {f.name for f in dataclasses.fields(DataConfig)}})
    limits = {k: tuple(v) if isinstance(v, list) else v for k, v in (cfg.limits or {}).items()}
    return dataclasses.replace(cfg, limits=limits or None)


def _random_action(legality, pos, rng: random.Random, inner_share: float = 0.0) -> int | None:
    """A uniformly random legal transformation (not Next) on the targeted branch, or None.

    The first legal action of a random permutation is uniform over the legal ones, the same draw as
    sampling from `walk.legal_mask`, without checking all 55 when an early one is legal.  With chance
    `inner_share` the interchange of the branch's two innermost loops goes first (still only if legal).
    """
    from llmopt.poly.actions import ACTIONS, NEXT, transform
    from llmopt.poly.agent.walk import ONCE, target
    from llmopt.poly.schedule import state

    stmt = target(legality.prog, pos)
    done = {t.kind for t in pos.schedule.transforms if t.stmt == stmt}
    order = [a for a in range(len(ACTIONS)) if a != NEXT and not (ACTIONS[a].kind in done and ACTIONS[a].kind in ONCE)]
    rng.shuffle(order)
    if inner_share and rng.random() < inner_share:  # no extra draw at 0: the uniform walks stay as collected
        inner = state(legality.prog, pos.schedule)[stmt].depth - 2
        order.sort(key=lambda a: not (ACTIONS[a].kind == "interchange" and ACTIONS[a].level == inner))
    return next((a for a in order if legality.allows(pos.schedule, transform(ACTIONS[a], stmt))), None)


def random_schedule(prog, legality, rng: random.Random, steps: int, inner_share: float = 0.0):
    """A walk of up to `steps` legal transformations, branch by branch (Next with prob. P_NEXT; see
    `_random_action` for `inner_share`)."""
    from llmopt.poly.actions import NEXT
    from llmopt.poly.agent.walk import advance, start

    pos, done = start(), 0
    for _ in range(4 * steps):
        action = None if rng.random() < P_NEXT else _random_action(legality, pos, rng, inner_share)
        if action is None:
            pos, last = advance(prog, pos, NEXT)
            if last:
                break
            continue
        pos, _ = advance(prog, pos, action)
        done += 1
        if done >= steps:
            break
    return pos.schedule


def program_schedules(prog, legality, count: int, seed: int, inner_share: float = 0.0) -> list:
    """The identity and up to `count - 1` distinct random legal schedules (distinct loop states)."""
    from llmopt.poly.schedule import Schedule, state

    rng = random.Random(f"llmopt-costmodel/{seed}/{count}")
    out, seen = [Schedule()], {state_key(state(prog, Schedule()))}
    for _ in range(4 * count):
        if len(out) >= count:
            break
        sched = random_schedule(prog, legality, rng, rng.randint(*WALK_STEPS), inner_share)
        key = state_key(state(prog, sched))
        if key not in seen:
            seen.add(key)
            out.append(sched)
    return out


GREEDY_MIN_GAIN = 0.05  # a greedy step must beat the best so far by 5%: paired timings vary ~4% (identity rows)
GREEDY_SLOWER = 3.0  # greedy: a candidate 3x slower than the original after one round is not timed further
ALWAYS_TRIED = ("parallelization", "interchange")  # the kinds behind most benchmark wins (docs/results/pearl)


def greedy_actions(legality, pos, width: int, rng: random.Random) -> list[int]:
    """The legal transformations (action indices) on the branch at `pos`, at most `width`: every
    parallelization and interchange, then a random sample of the others (tilings and unrollings are
    most of the 55)."""
    from llmopt.poly.actions import ACTIONS, NEXT
    from llmopt.poly.agent.walk import legal_mask

    mask = legal_mask(legality, pos)
    legal = [a for a in range(len(ACTIONS)) if a != NEXT and mask[a]]
    first = [a for a in legal if ACTIONS[a].kind in ALWAYS_TRIED]
    rest = [a for a in legal if ACTIONS[a].kind not in ALWAYS_TRIED]
    rng.shuffle(rest)
    return (first + rest)[:max(width, len(first))]


def searched_rows(prog, measurer, cfg: DataConfig, seed: int, measure) -> None:
    """Greedy search with execution in the agent's episode order (labels from search): branch by
    branch, measure the candidates (`greedy_actions`) that extend the best schedule so far on this
    branch, keep the fastest while it gains `GREEDY_MIN_GAIN` (at most `greedy_depth` per branch), then
    move to the next branch ("Next").  The final schedule is the walk a policy should take; every
    measured schedule is a row.  `measure(schedule)` records one and returns its speedup (or None)."""
    from llmopt.poly.actions import NEXT
    from llmopt.poly.agent.walk import advance, start
    from llmopt.poly.schedule import Schedule, state

    rng = random.Random(f"llmopt-costmodel-greedy/{seed}/{cfg.greedy_width}")
    legality = measurer.legality(prog)
    best_speedup = measure(Schedule()) or 1.0
    seen = {state_key(state(prog, Schedule()))}
    pos = start()
    while True:
        for _ in range(cfg.greedy_depth):
            scored = []
            for action in greedy_actions(legality, pos, cfg.greedy_width, rng):
                child, _ = advance(prog, pos, action)
                key = state_key(state(prog, child.schedule))
                if key in seen:
                    continue
                seen.add(key)
                speedup = measure(child.schedule)
                if speedup is not None:
                    scored.append((speedup, -len(scored), child))
            top = max(scored, key=lambda t: t[:2], default=None)  # fastest; ties: the first measured
            if top is None or top[0] < best_speedup * (1 + GREEDY_MIN_GAIN):
                break
            best_speedup, _, pos = top
        pos, done = advance(prog, pos, NEXT)
        if done:
            return


def state_key(st) -> tuple:
    """What the emitted code depends on: betas, loop expressions, parallel marks, unroll factors."""
    return tuple((n, tuple(s.betas), tuple(s.loops), tuple(sorted(s.parallel)), s.unroll) for n, s in sorted(st.items()))


_worker: dict = {}


def _init_worker(cache_path: str | None, cfg: DataConfig, quiet: float | None = None) -> None:
    """One Measurer per worker process, on the shared cache (None: a private scratch cache); `quiet`:
    the busy-machine guard (module docstring)."""
    from llmopt.harness.cache import open_cache, scratch_cache
    from llmopt.poly.measure import Measurer, machine_id

    cache = (open_cache(cache_path) if cache_path else None) or scratch_cache()
    _worker["measurer"] = Measurer(cache, repeats=cfg.repeats, threads=cfg.threads, quiet=quiet)
    _worker["cfg"] = cfg
    _worker["machine"] = machine_id()  # speedups are the machine's: AVX-512 or not changes which schedules pay


def measure_program(seed: int) -> dict:
    """{"seed", "rows": [...], "error"} for one random program (runs in a worker)."""
    from llmopt.poly.generator import random_program
    from llmopt.poly.program import ProgramError

    measurer, cfg = _worker["measurer"], _worker["cfg"]
    prog = random_program(seed, cfg.small, **generator_limits(cfg))
    try:
        measurer.reference(prog)
    except ProgramError as err:
        return {"seed": seed, "rows": [], "error": str(err)}
    if (short := _short_baseline_ms(measurer, prog, cfg)) is not None:
        return {"seed": seed, "rows": [], "error": None, "skipped_ms": short}
    rows, load, retimed = [], os.getloadavg()[0], measurer.retimed

    def measure(sched) -> float | None:
        # The search only needs to know that a much slower candidate lost (the random source times all).
        got = measurer.paired(prog, sched, cfg.rounds, slower=GREEDY_SLOWER if cfg.source == "greedy" else None)
        if not (got.get("ok") and got["seconds"] > 0):
            return None
        rows.append({"seed": seed, "hash": prog.hash(), "program": prog.to_dict(), "schedule": sched.to_list(),
                     "seconds": got["seconds"], "baseline_seconds": got["baseline_seconds"],
                     "speedup": got["speedup"]})
        return got["speedup"]

    if cfg.source == "greedy":
        searched_rows(prog, measurer, cfg, seed, measure)
    else:
        for sched in program_schedules(prog, measurer.legality(prog), cfg.schedules_per_program, seed, cfg.inner_share):
            measure(sched)
    # The 1-minute load average over the program (the collector's own threads included): parallel
    # schedules need idle cores, and a busy machine shows up here, so such rows can be found later.
    load = round(max(load, os.getloadavg()[0]), 2)
    retimed = measurer.retimed - retimed
    machine = _worker["machine"]
    return {"seed": seed, "rows": [{**r, "load": load, "retimed": retimed, "machine": machine} for r in rows],
            "error": None}


def _short_baseline_ms(measurer, prog, cfg: DataConfig) -> float | None:
    """The -O3 time (ms) of a program shorter than `cfg.min_baseline_ms`, else None (also when the machine
    was too busy for a clean time: the rows are measured, and a floor at training drops them if short)."""
    if not cfg.min_baseline_ms:
        return None
    base = measurer.baseline_o3(prog)
    ms = base["seconds"] * 1e3 if base and base.get("seconds") else None
    return float(f"{ms:.4g}") if ms is not None and ms < cfg.min_baseline_ms else None


def program_file(out: Path, seed: int) -> Path:
    return out / "programs" / f"{seed // 1000:03d}" / f"{seed:07d}.jsonl"


def _record(out: Path, result: dict) -> None:
    """Write one finished program (its file is its done marker; failures also go to failed.jsonl, programs
    under the baseline floor to skipped.jsonl: packing drops empty files, these logs keep them done)."""
    if result["error"]:
        with (out / "failed.jsonl").open("a") as f:
            f.write(json.dumps({"seed": result["seed"], "error": result["error"]}) + "\n")
    if result.get("skipped_ms") is not None:
        with (out / "skipped.jsonl").open("a") as f:
            f.write(json.dumps({"seed": result["seed"], "baseline_ms": result["skipped_ms"]}) + "\n")
    write_atomic(program_file(out, result["seed"]), "".join(json.dumps(r) + "\n" for r in result["rows"]))


def _check_config(out: Path, cfg: DataConfig) -> None:
    """Save config.json, or check that a resumed job uses the settings it was started with."""
    path = out / "config.json"
    now = json.loads(json.dumps(asdict(cfg)))  # as JSON has it: tuples are lists
    if path.exists():
        # A setting added after a folder was started is absent from its config.json: it had the default.
        old = {**json.loads(json.dumps(asdict(DataConfig()))), **json.loads(path.read_text())}
        if old != now:
            raise UsageError(f"{out} was collected with {old}; rerun with those settings or use a new folder")
    else:
        write_atomic(path, json.dumps(now, indent=1) + "\n")


class _Recorder:
    """Records finished programs the same way for every executor: the program's file (`_record`), the
    rows count, the periodic pack and the progress bar."""

    def __init__(self, out: Path, total: int, todo: int, progress: bool, pack_every: int):
        from tqdm import tqdm

        self.out, self.pack_every, self.written, self.finished = out, pack_every, 0, 0
        self.warned_busy = False
        self.bar = tqdm(total=total, initial=total - todo, unit="program", disable=not progress)

    def record(self, result: dict) -> None:
        _record(self.out, result)
        load = result["rows"][0]["load"] if result["rows"] else 0.0
        if load > BUSY_LOAD * (os.cpu_count() or 1) and not self.warned_busy:
            self.warned_busy = True  # once: the rows carry the load, the log needs only the warning
            self.bar.write(f"warning: load average {load} on {os.cpu_count()} cores while measuring seed "
                           f"{result['seed']}: other work takes cores from the parallel schedules (module docstring)")
        self.written += len(result["rows"])
        self.finished += 1
        if self.pack_every and self.finished % self.pack_every == 0:
            pack(self.out)
        self.bar.update(1)
        self.bar.set_postfix(rows=self.written)

    def close(self) -> None:
        self.bar.close()


def _check_machine(out: Path, programs: dict[int, list[dict]], here: str) -> None:
    """A folder whose rows (`programs`: its `_program_rows`) were all timed on one machine stays that machine's:
    speedups differ between machines by more than a model's error (docs/results/costmodel), so a resumed job on
    another would mix two sets of labels that nothing downstream tells apart.  Folders that already mix
    machines, or hold no rows, pass."""
    machines = {rows[0].get("machine") for rows in programs.values() if rows}
    if len(machines) == 1 and None not in machines and here not in machines:
        raise UsageError(f"{out} holds labels timed on machine {machines.pop()} only and this is {here}: "
                         "collect into a new folder (e.g. named after this machine), or pass any_machine / "
                         "--any-machine to mix machines on purpose")


def collect(out: str | os.PathLike, seeds: range | list[int], cfg: DataConfig = DataConfig(), workers: int = 1,
            cache_path: str | None = None, progress: bool = True, pack_every: int = 0, executor: str = "local",
            address: str | None = None, quiet: float | None = None, any_machine: bool = False) -> int:
    """Measure every seed's program that has no file in `out` yet; returns the rows written now.

    pack_every=N packs the finished programs after every N of them, so the committable files keep
    up with a long job (a session cut off mid-job loses only what is loose).  executor="ray" runs
    one Ray task per program on the cluster at `address` (None: a local Ray); `workers` is then unused.
    quiet=C guards the timings against other work (module docstring); only with one local worker.
    A folder of one machine's labels is resumed on that machine only, unless `any_machine` (`_check_machine`;
    a Ray cluster's nodes are not this machine, so the check is local only).
    """
    if executor not in ("local", "ray"):
        raise UsageError(f"unknown executor {executor!r}: use local or ray")
    if quiet is not None and (executor != "local" or workers > 1):
        raise UsageError("the busy-machine guard (quiet) needs one local worker: other workers count as busy")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    _check_config(out, cfg)
    programs = _program_rows(out)  # packed and loose: read once, for the machine check and what is done
    if executor == "local" and not any_machine:
        from llmopt.poly.measure import machine_id

        _check_machine(out, programs, machine_id())
    done = set(programs) | failed_seeds(out) | skipped_seeds(out)
    todo = [s for s in seeds if s not in done]
    if executor == "ray" and todo:
        _connect_ray(address, cfg)  # before the progress bar: a wrong --address is one line on stderr
    recorder = _Recorder(out, len(seeds), len(todo), progress, pack_every)
    try:
        if todo:
            if executor == "ray":
                _collect_ray(todo, cfg, cache_path, recorder)
            else:
                _collect_local(todo, cfg, cache_path, recorder, workers, quiet)
    finally:
        recorder.close()
    return recorder.written


def _collect_local(todo: list[int], cfg: DataConfig, cache_path: str | None, recorder: _Recorder,
                   workers: int, quiet: float | None = None) -> None:
    with ProcessPoolExecutor(max(1, workers), initializer=_init_worker, initargs=(cache_path, cfg, quiet)) as pool:
        pending, queue = set(), list(reversed(todo))
        while queue or pending:
            while queue and len(pending) < 2 * max(1, workers):
                pending.add(pool.submit(measure_program, queue.pop()))
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for fut in finished:
                recorder.record(fut.result())


def _connect_ray(address: str | None, cfg: DataConfig) -> None:
    """ray.init on `address` (None: $RAY_ADDRESS, else a new local Ray), and a cluster that can run a task."""
    address = address or os.environ.get("RAY_ADDRESS") or None
    if address and address != "local":
        from data_pipeline.ray_connect import connect_ray  # a JobError: an LlmoptError, printed as one line

        connect_ray(SimpleNamespace(address=address))  # a bounded wait: a wrong address fails in seconds
    else:
        try:
            import ray
        except ImportError:
            raise UsageError('--executor ray needs Ray: pip install "ray[default]"') from None
        if not ray.is_initialized():
            # Here, not in connect_ray's helper thread: the processes of a local Ray are started with
            # PR_SET_PDEATHSIG, so they are killed when the *thread* that started them ends (the tasks
            # then fail after a 60 s wait for the GCS).
            try:
                ray.init(log_to_driver=False)
            except Exception as err:  # noqa: BLE001 - one line for the user
                raise UsageError(f"cannot start a local Ray: {one_line(err)}") from None
    import ray

    cpus = int(ray.cluster_resources().get("CPU", 0))
    if cpus < max(1, cfg.threads):  # a task Ray can never place would wait forever
        raise UsageError(f"the Ray cluster has {cpus} CPUs; a program measured with --threads {cfg.threads} "
                         f"needs {cfg.threads}")


def _collect_ray(todo: list[int], cfg: DataConfig, cache_path: str | None, recorder: _Recorder) -> None:
    """One Ray task per program (Ray already connected); the driver owns the files (tasks only return rows)."""
    import ray

    # A timed run uses `threads` OpenMP threads: a task must own that many cores, or concurrent tasks
    # share cores and the timings (and so the speedups) are noisy.
    per_task = max(1, cfg.threads)
    cpus = int(ray.cluster_resources().get("CPU", 0))
    if cache_path:
        from llmopt.harness.cache import open_cache

        open_cache(cache_path)  # create the file and switch it to WAL once, before the tasks open it
    # By its module's name: run as `python -m`, this module is __main__, which Ray would pickle by value.
    from llmopt.poly.costmodel.data import _ray_measure

    remote = ray.remote(num_cpus=per_task)(_ray_measure)
    limit = 2 * max(1, cpus // per_task)  # queued tasks: enough to keep the cluster busy, not all programs
    pending: dict = {}
    queue = list(reversed(todo))
    try:
        while queue or pending:
            while queue and len(pending) < limit:
                seed = queue.pop()
                pending[remote.remote(seed, cache_path, asdict(cfg))] = seed
            finished, _ = ray.wait(list(pending), num_returns=1)
            pending.pop(finished[0])
            recorder.record(ray.get(finished[0]))
    finally:
        for ref in pending:  # interrupted or failed: stop the rest (finished measurements stay cached)
            ray.cancel(ref)


def _ray_measure(seed: int, cache_path: str | None, cfg: dict) -> dict:
    """measure_program in a Ray worker process: its Measurer is made once per process, as `_init_worker`
    makes it for a local worker (again only when a task brings another cache or config)."""
    key = (cache_path, json.dumps(cfg, sort_keys=True))
    if _worker.get("key") != key:
        _init_worker(cache_path, DataConfig(**cfg))
        _worker["key"] = key
    return measure_program(seed)


def _read_jsonl(path: Path) -> list[dict]:
    text = gzip.decompress(path.read_bytes()).decode() if path.suffix == ".gz" else path.read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def packed_file(out: Path, block: int) -> Path:
    return out / "packed" / f"{block:04d}.jsonl.gz"


def _packed_rows(out: Path) -> dict[int, list[dict]]:
    """seed -> rows of every packed program (programs with rows; failures are in failed.jsonl)."""
    by_seed: dict[int, list[dict]] = {}
    for f in sorted(out.glob("packed/*.jsonl.gz")):
        for row in _read_jsonl(f):
            by_seed.setdefault(row["seed"], []).append(row)
    return by_seed


def packed_seeds(out: Path) -> set[int]:
    return set(_packed_rows(out))


def _logged_seeds(out: Path, log: str) -> set[int]:
    path = out / log
    return {json.loads(line)["seed"] for line in path.read_text().splitlines() if line.strip()} if path.exists() else set()


def failed_seeds(out: Path) -> set[int]:
    return _logged_seeds(out, "failed.jsonl")


def skipped_seeds(out: Path) -> set[int]:
    """Programs under the folder's baseline floor (DataConfig.min_baseline_ms): done, with no rows."""
    return _logged_seeds(out, "skipped.jsonl")


def _loose_files(out: Path) -> dict[int, Path]:
    return {int(f.stem): f for f in out.glob("programs/*/*.jsonl")}


def _program_rows(out: Path) -> dict[int, list[dict]]:
    """seed -> rows of every finished program, packed or loose (a packed seed wins over a loose copy)."""
    rows = _packed_rows(out)
    for seed, f in _loose_files(out).items():
        rows.setdefault(seed, _read_jsonl(f))
    return dict(sorted(rows.items()))


def load_rows(data: str | os.PathLike) -> list[dict]:
    """Every row of a collected folder (programs in seed order), or of a sample's samples.jsonl."""
    data = Path(data)
    if data.is_file():
        return _read_jsonl(data)
    rows = [row for program in _program_rows(data).values() for row in program]
    if not rows:
        rows = [row for f in sorted(data.glob("*.jsonl")) if f.name != "failed.jsonl" for row in _read_jsonl(f)]
    if not rows:
        raise UsageError(f"no cost-model data in {data}: collect it with `python -m llmopt.poly.costmodel.data "
                         f"{data} --programs N`")
    return rows


def first_programs(rows: list[dict], n: int) -> list[dict]:
    """The rows of the first `n` programs in row order (all when `n` is 0)."""
    if not n:
        return rows
    keep = set(list(dict.fromkeys(r["hash"] for r in rows))[:n])
    return [r for r in rows if r["hash"] in keep]


def load_folders(spec: str) -> list[dict]:
    """`load_rows` of each folder in a comma-separated list (e.g. `data/poly-greedy,data/poly-greedy-db`);
    `FOLDER:N` keeps that folder's first N programs (a recipe stays the same while its folders grow)."""
    out: list[dict] = []
    for item in filter(None, spec.split(",")):
        folder, _, n = item.partition(":")
        if n and not n.isdigit():
            raise UsageError(f"{item}: expected FOLDER or FOLDER:N (a program count)")
        out += first_programs(load_rows(folder), int(n or 0))
    return out


def pack(out: str | os.PathLike) -> int:
    """Move every loose finished program into its block's packed file; returns the programs moved."""
    out = Path(out)
    loose, by_seed = _loose_files(out), _packed_rows(out)
    for block in sorted({seed // PACK_BLOCK for seed in loose}):
        seeds = range(block * PACK_BLOCK, (block + 1) * PACK_BLOCK)
        for seed in seeds:
            if seed in loose and seed not in by_seed:
                by_seed[seed] = _read_jsonl(loose[seed])
        text = "".join(json.dumps(r) + "\n" for seed in seeds for r in by_seed.get(seed, []))
        # mtime=0: the same programs pack to the same bytes, so a re-pack changes nothing in git.
        write_atomic(packed_file(out, block), gzip.compress(text.encode(), mtime=0))
        for seed in seeds:
            if seed in loose:
                loose[seed].unlink()
    return len(loose)


def write_sample(data: str | os.PathLike, dest: str | os.PathLike, rows: int = 300) -> int:
    """Copy whole programs (seed order) from `data` until `rows` rows: DEST/samples.jsonl + README.md."""
    data, dest = Path(data), Path(dest)
    picked: list[dict] = []
    for program in _program_rows(data).values():
        if len(picked) >= rows:
            break
        picked += program
    cfg = json.loads((data / "config.json").read_text())
    write_atomic(dest / "samples.jsonl", "".join(json.dumps(r) + "\n" for r in picked))
    write_atomic(dest / "README.md", _card(cfg, picked))
    return len(picked)


def _card(cfg: dict, rows: list[dict]) -> str:
    programs = len({r["seed"] for r in rows})
    return f"""# poly-costmodel-sample

A committed sample of the cost model's training data (issue 16): {len(rows)} measured schedules of
{programs} random affine programs (`llmopt.poly.generator.random_program(seed)`, seeds in `seed`).
One JSON row per schedule: `seed`, `hash`, `program` (program dict, `llmopt.poly.program`),
`schedule` (`Schedule.from_list`), `seconds` (min of {cfg['repeats']} runs, {cfg['threads']} OpenMP
threads, outputs checked), `baseline_seconds` (untransformed -O3, timed alongside), `speedup` (median
over {cfg.get('rounds', 1)} alternating rounds of baseline / schedule time).
Timings are of the machine that collected them (see `llmopt.poly.measure.machine_id`).

Rebuild the full set (about 50,000 schedules) with one command:

    python -m llmopt.poly.costmodel.data data/poly-costmodel --programs 1800 \\
        --schedules-per-program {cfg['schedules_per_program']} --repeats {cfg['repeats']} --workers 1 --pack
"""


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m llmopt.poly.costmodel.data", description=__doc__.split("\n")[0])
    p.add_argument("out", help="output folder (resumes when it exists)")
    p.add_argument("--programs", type=int, default=100, help="random programs: seeds FIRST..FIRST+N-1")
    p.add_argument("--first-seed", type=int, default=0)
    p.add_argument("--seeds", metavar="LIST",
                   help="these seeds instead of --programs/--first-seed: comma-separated, or @FILE with one a line "
                   "(e.g. programs to label again after the action space changed)")
    p.add_argument("--schedules-per-program", type=int, default=DataConfig.schedules_per_program)
    p.add_argument("--repeats", type=int, default=DataConfig.repeats, help="timed runs per schedule (minimum kept)")
    p.add_argument("--threads", type=int, default=DataConfig.threads, help="OpenMP threads of a run")
    p.add_argument("--workers", type=int, default=1, help="programs measured at once (processes)")
    p.add_argument("--executor", choices=("local", "ray"), default="local",
                   help="local: --workers processes here; ray: one Ray task per program, --threads CPUs each")
    p.add_argument("--address", default=None,
                   help="Ray cluster of --executor ray (HOST:PORT or ray://HOST:PORT; default: $RAY_ADDRESS, "
                   "else a new local Ray)")
    p.add_argument("--small", action="store_true", help="test-size programs (microseconds)")
    p.add_argument("--source", choices=SOURCES, default=DataConfig.source,
                   help="random: random legal walks (--schedules-per-program); greedy: the schedules a greedy "
                   "search with execution measures (labels from search, --greedy-width/--greedy-depth)")
    p.add_argument("--greedy-width", type=int, default=DataConfig.greedy_width,
                   help="greedy: candidates measured per step (every parallelization and interchange, then random)")
    p.add_argument("--greedy-depth", type=int, default=DataConfig.greedy_depth, help="greedy: transformations per branch at most")
    p.add_argument("--iterations", type=float, nargs=2, metavar=("LO", "HI"),
                   help="statement instances per program (the generator's default: 4e6 4e7, ~1-50 ms); larger "
                   "programs are where parallelization pays, as in the benchmarks")
    p.add_argument("--min-baseline-ms", type=float, default=DataConfig.min_baseline_ms, metavar="MS",
                   help="time each program's -O3 original first and skip (skipped.jsonl) those shorter than MS: "
                   "rows for a model trained and judged with `train --min-baseline-ms`, ~4x faster")
    p.add_argument("--inner-share", type=float, default=DataConfig.inner_share, metavar="Q",
                   help="random: with chance Q a walk step interchanges the branch's two innermost loops when that is "
                   "legal (the rare large slowdowns and speedups; 0: uniform walks)")
    p.add_argument("--limit", action="append", default=[], metavar="NAME=VALUE",
                   help="override a generator limit (llmopt.poly.generator.Limits), e.g. p_double_buffer=0.5; "
                        "repeatable, recorded in config.json")
    p.add_argument("--quiet-cores", type=float, default=0.15, metavar="C",
                   help="take a timed run again when other processes used more than C cores during it (one "
                   "local worker only; a negative C turns the guard off)")
    p.add_argument("--cache", default=None, help="timing cache (default: poly.sqlite in the llmopt cache folder)")
    p.add_argument("--any-machine", action="store_true",
                   help="resume a folder whose rows were timed on another machine (mixes two machines' labels)")
    p.add_argument("--sample", metavar="DEST", help="then copy a small sample (--sample-rows) to DEST")
    p.add_argument("--sample-rows", type=int, default=300)
    p.add_argument("--pack", action="store_true",
                   help="then pack finished programs into OUT/packed/*.jsonl.gz (the files to commit)")
    p.add_argument("--pack-only", action="store_true", help="only pack what is finished; measure nothing")
    p.add_argument("--pack-every", type=int, default=0, metavar="N",
                   help="also pack after every N finished programs (long jobs: commit packed/ as it grows)")
    return p


def _config(args: argparse.Namespace) -> DataConfig:
    """The row-defining settings of the command line, checked."""
    if args.programs < 1 or args.schedules_per_program < 1 or args.repeats < 1 or args.workers < 1:
        raise UsageError("--programs, --schedules-per-program, --repeats and --workers must be at least 1")
    if args.greedy_width < 1 or args.greedy_depth < 1:
        raise UsageError("--greedy-width and --greedy-depth must be at least 1")
    if not 0.0 <= args.inner_share <= 1.0:
        raise UsageError("--inner-share is a chance: 0 to 1")
    return DataConfig(args.schedules_per_program, args.repeats, args.threads, args.small, source=args.source,
                      greedy_width=args.greedy_width, greedy_depth=args.greedy_depth,
                      iterations=tuple(args.iterations) if args.iterations else None,
                      limits=parse_limits(args.limit) or None, min_baseline_ms=args.min_baseline_ms,
                      inner_share=args.inner_share)


def parse_limits(items: list[str]) -> dict:
    """`--limit NAME=VALUE` options as generator overrides (values are JSON: 0.5, [1, 2]), checked."""
    from llmopt.poly.generator import Limits

    known = {f.name for f in dataclasses.fields(Limits)} - {"iterations"}
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or name not in known:
            raise UsageError(f"--limit {item!r}: expected NAME=VALUE with NAME one of {sorted(known)}")
        try:
            out[name] = json.loads(value)
        except json.JSONDecodeError:
            raise UsageError(f"--limit {item!r}: the value must be a number or a JSON list") from None
        if isinstance(out[name], list):
            out[name] = tuple(out[name])
    return out


def _seeds(args: argparse.Namespace) -> range | list[int]:
    if not args.seeds:
        return range(args.first_seed, args.first_seed + args.programs)
    try:
        text = Path(args.seeds[1:]).read_text() if args.seeds.startswith("@") else args.seeds.replace(",", " ")
        seeds = [int(x) for x in text.split()]
    except OSError as err:
        raise UsageError(f"--seeds {args.seeds!r}: {err.strerror or err}") from None
    except ValueError:
        raise UsageError(f"--seeds {args.seeds!r}: expected integers, comma-separated or one a line") from None
    if not seeds:
        raise UsageError(f"--seeds {args.seeds!r}: no seeds")
    return seeds


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.pack_only:
        print(f"packed {pack(args.out)} programs in {args.out}/packed")
        return 0
    if args.address and args.executor != "ray":
        raise UsageError("--address is the Ray cluster of --executor ray")
    cfg = _config(args)
    from llmopt.harness.cache import DEFAULT_CACHE_DIR

    alone = args.executor == "local" and args.workers == 1
    quiet = args.quiet_cores if alone and args.quiet_cores >= 0 else None  # other workers would count as busy
    cache = args.cache or str(DEFAULT_CACHE_DIR / "poly.sqlite")
    rows = collect(args.out, _seeds(args), cfg, args.workers, cache,
                   pack_every=max(0, args.pack_every), executor=args.executor, address=args.address,
                   quiet=quiet, any_machine=args.any_machine)
    print(f"{rows} new rows in {args.out}")
    if args.pack:
        print(f"packed {pack(args.out)} programs in {args.out}/packed")
    if args.sample:
        print(f"sample: {write_sample(args.out, args.sample, args.sample_rows)} rows in {args.sample}")
    return 0


if __name__ == "__main__":
    run_main(main)
