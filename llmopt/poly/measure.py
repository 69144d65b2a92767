"""Compile, check and time scheduled programs; memoized; the -O3 and Polly baselines.

`Measurer.measure(program, schedule)` emits the program (`llmopt.poly.emit`), compiles it with
clang-19 (`-O3 -march=native`, plus `-fopenmp` when a loop is parallel), runs it in a subprocess
with a timeout and `OMP_NUM_THREADS=threads`, compares every output tensor with the reference run
(the original schedule, same compiler and flags; rtol 1e-6 for double, 1e-4 for float) and only
then reports the time: the minimum of `repeats` kernel runs timed inside the program.  A wrong
result is `{"ok": False, "error": "wrong result ..."}`, never a time.

Results are memoized in the harness `ResultCache` (key: `MEASURE_VERSION`, emitter version,
program hash, schedule, machine, repeats, threads), so a repeated question never compiles;
`stats()` reports the hit rate.  `measure(..., cutoff=s)` stops timing at the first run slower than
`s` seconds (searches pass a multiple of their best time): the result then says `"cut": True` and
its seconds are a lower bound on the schedule's minimum that is already over `s`; a later question
with a looser cut-off (or none) measures again.  `legality(program)` hands out one memoized
`llmopt.poly.legality.Legality` per program on the same cache.

`paired(program, schedule, rounds)` is the speedup for noisy machines (the cost model's data): the
untransformed and the scheduled executables run in alternation, `rounds` times `repeats / rounds`
runs each, and the speedup is the median of the per-round ratios (minimum times of each side).  On
a shared 2-core machine the minimum of 10 runs of one binary varied up to 2.8x between calls a few
seconds apart (load from other jobs), so two times taken seconds apart make a noisy ratio; a burst
that slows one round slows both sides of its ratio, and the median drops the rounds it skews.
`side_by_side(program, schedules, rounds)` does the same for several schedules at once (the original,
then each schedule, every round), unmemoized: two searches' answers compared in the same rounds.

`Measurer(quiet=c)` guards every timed run against other work (`llmopt.poly.cpu_watch`): a run
during which other processes used more than `c` cores is thrown away, the measurer waits until the
machine is quiet and runs it again, for up to `patience` seconds; a time it still cannot take
cleanly is `{"ok": False, "error": "busy: ..."}`, not memoized, so a later call measures it.
`stats()` counts the runs taken again.  Off by default (benchmarks compare in one run); the cost
model's collector turns it on, since its rows are kept for good.

Baselines: `baseline_o3(program)` is the original program at `-O3` (the "unoptimized" time that
speedups divide: speedup = unoptimized time / optimized time), and `baseline_polly(program)` the
same C with Polly: `clang-19 -O3 -march=native -fopenmp -mllvm -polly -mllvm -polly-parallel
-mllvm -polly-tiling`.  Debian's clang-19 has Polly linked into libLLVM, so the `-mllvm -polly`
flags work as they are; loading `LLVMPolly.so` with `-fplugin`/`-fpass-plugin` on top aborts with
"Option 'polly-dependences-computeout' registered more than once".  Polly's parallel code calls
the GNU OpenMP entry points (GOMP_*), which LLVM's libomp provides: `-fopenmp` needs
`libomp-19-dev` (scripts/setup.sh installs it).
"""

from __future__ import annotations

import hashlib
import math
import os
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from llmopt.harness.cache import DEFAULT_CACHE_DIR, ResultCache, make_key, open_cache, scratch_cache
from llmopt.llvm.toolchain import find_toolchain
from llmopt.poly.cpu_watch import CpuWatch, wait_until_quiet
from llmopt.poly.emit import EMIT_VERSION, program_c
from llmopt.poly.legality import Legality
from llmopt.poly.program import Program, ProgramError, extent
from llmopt.poly.schedule import Schedule

MEASURE_VERSION = 1
O3_FLAGS = ["-O3", "-march=native", "-w"]
POLLY_FLAGS = ["-mllvm", "-polly", "-mllvm", "-polly-parallel", "-mllvm", "-polly-tiling"]
RTOL = {"double": 1e-6, "float": 1e-4}
KEPT_REFERENCES = 8  # reference dumps kept per measurer (megabytes each)
SIDE_BY_SIDE_SECONDS = 0.2  # timed seconds a side per round of `Measurer.side_by_side`, at least
SIDE_BY_SIDE_MAX_RUNS = 200


def machine_id() -> str:
    """Short hash of what a timing depends on: CPU model and flags, the clang binary and version."""
    try:
        cpu = [ln for ln in Path("/proc/cpuinfo").read_text().splitlines() if ln.startswith(("model name", "flags"))]
    except OSError:
        cpu = []
    tc = find_toolchain()
    blob = "|".join(cpu[:2] + [tc.clang, str(tc.version), str(os.cpu_count())])
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


@dataclass
class Run:
    """One compiled-and-run program: ok, seconds (min of repeats) or error, and its dump file."""

    ok: bool
    seconds: float = 0.0
    error: str = ""
    dump: Path | None = None
    cut: bool = False  # timing stopped early at a run slower than the cut-off
    busy: bool = False  # other processes took CPU during every try (Measurer(quiet=...))


class Measurer:
    """Times schedules of programs with correctness checks; see the module docstring."""

    def __init__(self, cache: ResultCache | None = None, repeats: int = 30, threads: int = 2,
                 timeout: float = 120.0, workdir: str | os.PathLike | None = None,
                 quiet: float | None = None, patience: float = 600.0):
        self.cache = cache if cache is not None else open_cache(DEFAULT_CACHE_DIR / "poly.sqlite") or scratch_cache()
        self.repeats, self.threads, self.timeout = repeats, threads, timeout
        self.quiet, self.patience = quiet, patience  # the busy-machine guard (module docstring)
        self._tmp = tempfile.TemporaryDirectory(prefix="llmopt-poly-", dir=workdir)
        self.workdir = Path(self._tmp.name)
        self._clang = find_toolchain().clang
        self._machine = machine_id()
        self._refs: dict[str, Path] = {}  # program hash -> reference dump of this process
        self._legal: dict[str, Legality] = {}
        self.hits = self.misses = self.compiles = self.runs = self.retimed = 0

    def key(self, prog: Program, variant: str, schedule: Schedule) -> str:
        return make_key("poly-time", MEASURE_VERSION, EMIT_VERSION, prog.hash(), variant, schedule.key(),
                        self._machine, self.repeats, self.threads)

    def legality(self, prog: Program) -> Legality:
        """The memoized legality checker of `prog` (shares this measurer's cache)."""
        return self._legal.setdefault(prog.hash(), Legality(prog, self.cache))

    def compile(self, source: str, flags: list[str], stem: str) -> Path | str:
        """Executable built from `source`, or clang's first error lines."""
        c_file, exe = self.workdir / f"{stem}.c", self.workdir / stem
        c_file.write_text(source)
        proc = subprocess.run([self._clang, *flags, str(c_file), "-o", str(exe), "-lm"],
                              capture_output=True, text=True, timeout=300)
        c_file.unlink()  # the work folder keeps executables only (a long job builds tens of thousands)
        self.compiles += 1
        if proc.returncode != 0:
            return "clang failed: " + " ".join(proc.stderr.splitlines()[:3])
        return exe

    def run(self, exe: Path, repeats: int, dump: Path | None, cutoff: float | None = None) -> Run:
        """Run `exe` (timed kernel runs, optional output dump, optional cut-off) with a timeout; with
        `quiet` set, a timed run that shared the machine is taken again (module docstring)."""
        if self.quiet is None or repeats == 0:
            return self._run_once(exe, repeats, dump, cutoff)
        deadline = time.monotonic() + self.patience
        while True:
            with CpuWatch() as watch:
                got = self._run_once(exe, repeats, dump, cutoff)
            if not got.ok or watch.foreign_cores() <= self.quiet:
                return got
            self.retimed += 1
            left = deadline - time.monotonic()
            if left <= 0 or not wait_until_quiet(self.quiet, left):
                return Run(False, error=f"busy: other processes used {watch.foreign_cores():.2f} cores while "
                                        f"timing, for {self.patience:g} s", busy=True)

    def _run_once(self, exe: Path, repeats: int, dump: Path | None, cutoff: float | None) -> Run:
        env = {**os.environ, "OMP_NUM_THREADS": str(self.threads)}
        args = [str(exe), str(repeats), str(dump) if dump else "-"] + ([repr(float(cutoff))] if cutoff else [])
        self.runs += 1
        try:
            proc = subprocess.run(args, capture_output=True, text=True, timeout=self.timeout, env=env)
        except subprocess.TimeoutExpired:
            return Run(False, error=f"timeout after {self.timeout:g} s")
        if proc.returncode != 0:
            return Run(False, error=f"exit code {proc.returncode}: {proc.stderr.strip()[:200]}")
        seconds = float(proc.stdout.split("seconds", 1)[1].split()[0])
        return Run(True, seconds, dump=dump, cut="\ncut " in proc.stdout)

    def executable(self, prog: Program, schedule: Schedule, flags: list[str]) -> Path | str:
        """The built program (compiled once per process and kept in the work folder), or clang's error."""
        stem = make_key(prog.hash(), schedule.key(), flags)[:20]
        exe = self.workdir / stem
        return exe if exe.exists() else self.compile(program_c(prog, schedule), flags, stem)

    def build_and_run(self, prog: Program, schedule: Schedule, flags: list[str], repeats: int,
                      cutoff: float | None = None) -> Run:
        exe = self.executable(prog, schedule, flags)
        if isinstance(exe, str):
            return Run(False, error=exe)
        return self.run(exe, repeats, exe.with_suffix(".out"), cutoff)

    def reference(self, prog: Program, timed: bool = True) -> Path:
        """The reference output of `prog` (original schedule, -O3), made once per process; its
        timed runs fill the -O3 baseline when that is not cached yet (unless `timed` is False: a
        caller that times the original itself, in rounds beside its schedules, needs only the outputs)."""
        if prog.hash() not in self._refs:
            key = self.key(prog, "o3", Schedule())
            timed = timed and self.cache.get(key) is None
            ref = self.build_and_run(prog, Schedule(), O3_FLAGS, self.repeats if timed else 0)
            if ref.busy:  # no clean time to keep, but the outputs are what the reference is for
                timed, ref = False, self.build_and_run(prog, Schedule(), O3_FLAGS, 0)
            if not ref.ok:
                raise ProgramError(f"program {prog.name} does not run as written: {ref.error}")
            if timed:
                self.cache.put(key, {"ok": True, "seconds": ref.seconds})
            self._refs[prog.hash()] = ref.dump
            while len(self._refs) > KEPT_REFERENCES:  # the oldest program's dump, made again if asked
                self._refs.pop(next(iter(self._refs))).unlink(missing_ok=True)
        return self._refs[prog.hash()]

    def _cached(self, key: str, compute, cutoff: float | None = None) -> dict:
        hit = self.cache.get(key)
        if hit is not None and hit.get("cut") and not (cutoff and hit["seconds"] >= cutoff):
            hit = None  # a cut time answers only questions whose cut-off it already exceeds
        if hit is not None:
            self.hits += 1
            return hit
        self.misses += 1
        result = compute()
        if not result.get("error", "").startswith(("timeout", "busy")):  # not the program's fault: ask again
            self.cache.put(key, result)
        return result

    def _checked(self, prog: Program, schedule: Schedule, flags: list[str], cutoff: float | None = None) -> dict:
        reference = self.reference(prog)
        got = self.build_and_run(prog, schedule, flags, self.repeats, cutoff)
        if error := _failure(prog, reference, got):
            return {"ok": False, "error": error}
        return {"ok": True, "seconds": got.seconds, **({"cut": True} if got.cut else {})}

    def measure(self, prog: Program, schedule: Schedule, cutoff: float | None = None) -> dict:
        """{"ok": True, "seconds"[, "cut"]} or {"ok": False, "error"}; correctness checked, memoized.
        `cutoff` (seconds): stop timing at the first run slower than that (module docstring)."""
        flags = schedule_flags(prog, schedule)
        return self._cached(self.key(prog, "schedule", schedule),
                            lambda: self._checked(prog, schedule, flags, cutoff), cutoff)

    def paired(self, prog: Program, schedule: Schedule, rounds: int = 5, slower: float | None = None) -> dict:
        """{"ok": True, "speedup", "seconds", "baseline_seconds"} of `schedule` over the untransformed
        program timed in alternation (module docstring), or {"ok": False, "error"}; memoized.
        `slower=F`: a schedule more than F times slower than the original in the first round is not
        timed again (its speedup is that round's, marked "stopped"): a search needs to know it lost, not by
        how much, and ten runs of a 100x slower variant of a 100 ms program take minutes."""
        flags = schedule_flags(prog, schedule)
        variant = f"paired{rounds}" + (f"-slower{slower:g}" if slower else "")
        return self._cached(self.key(prog, variant, schedule),
                            lambda: self._paired(prog, schedule, flags, rounds, slower))

    def _paired(self, prog: Program, schedule: Schedule, flags: list[str], rounds: int,
                slower: float | None = None) -> dict:
        reference = self.reference(prog)
        base = self.executable(prog, Schedule(), O3_FLAGS)
        checked = self._checked_once(prog, schedule, base, reference)
        if not checked["ok"]:
            return checked
        exe, per, base_t, got_t = checked["exe"], max(1, self.repeats // rounds), [], []
        for _ in range(rounds):  # base, schedule, base, ...: a load burst slows both sides of a ratio
            b, g = self.run(base, per, None), self.run(exe, per, None)
            if not (b.ok and g.ok):
                return {"ok": False, "error": (g if b.ok else b).error}
            base_t.append(b.seconds)
            got_t.append(g.seconds)
            if slower and round_ratio(base_t[:1], got_t[:1]) * slower < 1:
                return {"ok": True, "speedup": round_ratio(base_t, got_t), "seconds": g.seconds,
                        "baseline_seconds": b.seconds, "stopped": True}  # not "cut": a time below a cut-off (_cached)
        return {"ok": True, "speedup": round_ratio(base_t, got_t), "seconds": min(got_t), "baseline_seconds": min(base_t)}

    def side_by_side(self, prog: Program, schedules: list[Schedule], rounds: int = 5,
                     min_seconds: float = SIDE_BY_SIDE_SECONDS) -> dict:
        """Several schedules of one program timed in the same rounds: each round runs the original, then
        every schedule, each `repeats / rounds` times or, for a fast one, as often as fills `min_seconds`
        (from its time in the round before: two runs of a 5 ms kernel are too few to trust).  Returns
        {"baseline": [seconds per round], "schedules": [{"ok": True, "rounds": [seconds per round],
        "speedup"} or {"ok": False, "error"}]} in the order given; compare two schedules by the median over
        rounds of their ratio (`round_ratio`), which a load burst that slows one round slows on both sides.
        Never memoized: it is for an independent measurement (the answers of two searches, compared without
        the flattery of each search's own best timing)."""
        reference = self.reference(prog, timed=False)  # a ProgramError if the original does not run
        base = self.executable(prog, Schedule(), O3_FLAGS)
        out = [self._checked_once(prog, sched, base, reference) for sched in schedules]
        per, base_t = max(1, self.repeats // rounds), []

        def times(exe: Path, last: list[float]) -> Run:
            filling = math.ceil(min_seconds / max(last[-1], 1e-6)) if last else per
            return self.run(exe, max(per, min(SIDE_BY_SIDE_MAX_RUNS, filling)), None)

        for _ in range(rounds):
            b = times(base, base_t)
            if not b.ok:
                raise ProgramError(f"program {prog.name} failed while timed side by side: {b.error}")
            base_t.append(b.seconds)
            for got in out:
                if got["ok"]:
                    run = times(got["exe"], got["rounds"])
                    if run.ok:
                        got["rounds"].append(run.seconds)
                    else:
                        got.clear()
                        got.update({"ok": False, "error": run.error})
        for got in out:
            if got.pop("exe", None) is not None:
                got["speedup"] = round_ratio(base_t, got["rounds"])
        return {"baseline": base_t, "schedules": out}

    def _checked_once(self, prog: Program, sched: Schedule, base: Path, reference: Path) -> dict:
        """{"ok": True, "exe", "rounds": []} for a schedule whose outputs match the reference (one untimed run,
        before `paired` or `side_by_side` times it; the original is the reference), else {"ok": False, "error"}."""
        if not sched.transforms:
            return {"ok": True, "exe": base, "rounds": []}
        exe = self.executable(prog, sched, schedule_flags(prog, sched))
        if isinstance(exe, str):
            return {"ok": False, "error": exe}
        error = _failure(prog, reference, self.run(exe, 0, exe.with_suffix(".out")))
        return {"ok": False, "error": error} if error else {"ok": True, "exe": exe, "rounds": []}

    def baseline_o3(self, prog: Program) -> dict:
        """The original program with plain -O3: the unoptimized time of every speedup."""
        key = self.key(prog, "o3", Schedule())
        hit = self.cache.get(key)
        if hit is not None:
            self.hits += 1
            return hit
        self.misses += 1
        self._refs.pop(prog.hash(), None)  # the reference run records the time
        self.reference(prog)
        return self.cache.get(key)

    def baseline_polly(self, prog: Program) -> dict:
        """The original program through Polly (flags in the module docstring), result checked."""
        flags = O3_FLAGS + ["-fopenmp"] + POLLY_FLAGS
        return self._cached(self.key(prog, "polly", Schedule()), lambda: self._checked(prog, Schedule(), flags))

    def speedup(self, prog: Program, schedule: Schedule) -> float:
        """-O3 time of the original / time of `schedule`; 0.0 when the schedule failed."""
        base, got = self.baseline_o3(prog), self.measure(prog, schedule)
        return base["seconds"] / got["seconds"] if got.get("ok") and got["seconds"] > 0 else 0.0

    def stats(self) -> dict:
        """Cache hits, misses, hit rate, compilations, runs and busy runs taken again of this measurer."""
        asked = self.hits + self.misses
        return {"hits": self.hits, "misses": self.misses, "hit_rate": self.hits / asked if asked else 0.0,
                "compiles": self.compiles, "runs": self.runs, "retimed": self.retimed,
                "legality_hit_rate": {h[:12]: lg.hit_rate() for h, lg in self._legal.items()}}

    def close(self) -> None:
        self._tmp.cleanup()


def round_ratio(slower: list[float], faster: list[float]) -> float:
    """Median over rounds of slower / faster time (`Measurer.side_by_side`): how many times faster the
    second side runs, each round's load shared by both."""
    return float(np.median([s / max(f, 1e-12) for s, f in zip(slower, faster, strict=True)]))


def schedule_flags(prog: Program, schedule: Schedule) -> list[str]:
    return O3_FLAGS + (["-fopenmp"] if schedule.is_parallel(prog) else [])


def _failure(prog: Program, reference: Path, got: Run) -> str:
    """"" when `got` ran and its outputs match the reference, else why not.  The checked output is
    deleted (megabytes each: a long job would fill the disk), never the reference itself (the
    original schedule's executable writes to the reference's file)."""
    if not got.ok:
        return got.error
    error = compare_outputs(prog, reference, got.dump)
    if got.dump != reference:
        got.dump.unlink(missing_ok=True)
    return error


def compare_outputs(prog: Program, reference: Path, got: Path) -> str:
    """"" when every output tensor matches the reference within tolerance, else what differs."""
    ref_all, got_all = reference.read_bytes(), got.read_bytes()
    if len(ref_all) != len(got_all):
        return f"wrong result: dump has {len(got_all)} bytes, reference {len(ref_all)}"
    offset = 0
    for name in prog.outputs():
        t = prog.tensors[name]
        dtype = np.float64 if t.dtype == "double" else np.float32
        count = int(np.prod([extent(e, prog.params) for e in t.shape]))
        a = np.frombuffer(ref_all, dtype, count, offset)
        b = np.frombuffer(got_all, dtype, count, offset)
        offset += count * np.dtype(dtype).itemsize
        if not np.allclose(b, a, rtol=RTOL[t.dtype], atol=1e-9, equal_nan=True):
            worst = int(np.nanargmax(np.abs(b - a)))
            return f"wrong result: {name} differs at flat index {worst} ({b[worst]!r} vs {a[worst]!r})"
    return ""
