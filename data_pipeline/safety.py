"""Label safety: run the whole program with a function's label applied and compare its output.

Csmith programs print a checksum of their globals.  For a program whose functions got labels
that beat -Oz, we build it with the *optimized IR of those functions as stored in the dataset*
linked to the rest of the program at -Oz, run it with a timeout, and compare exit code + output
with the plain `clang -Oz` build.  One build per program first (all labels at once); only if that
one differs is each labeled function checked alone, so a correct program costs two builds.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

from data_pipeline.compile import compile_unit
from data_pipeline.sources import Unit
from llmopt.llvm.passes import OZ
from llmopt.llvm.toolchain import find_toolchain

# Internal/private symbols would not link across the split modules: give them hidden linkage
# (what llvm-extract itself does to the function and globals it extracts).
_LOCAL_DEFINE = re.compile(r"^define (internal|private) ", re.M)
_LOCAL_GLOBAL = re.compile(r"^(@[\w.$\-\"]+ = )(internal|private) ", re.M)


@dataclass
class RunResult:
    ok: bool  # built and finished in time
    returncode: int | None = None
    stdout: str = ""
    error: str | None = None

    def same_as(self, other: RunResult) -> bool:
        return self.ok and other.ok and (self.returncode, self.stdout) == (other.returncode, other.stdout)


def _run(cmd: list[str], timeout: float = 120, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)


def externalize(module_ir: str) -> str:
    module_ir = _LOCAL_DEFINE.sub("define hidden ", module_ir)
    return _LOCAL_GLOBAL.sub(r"\1hidden ", module_ir)


def _execute(exe: Path, timeout: float) -> RunResult:
    try:
        proc = subprocess.run([str(exe)], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return RunResult(False, error="timeout")
    return RunResult(True, proc.returncode, proc.stdout)


def run_reference(module_ir: str, tmp: Path, timeout: float) -> RunResult:
    """The program as `clang -Oz` builds it."""
    src, exe = tmp / "ref.ll", tmp / "ref"
    src.write_text(module_ir)
    proc = _run([find_toolchain().clang, "-Oz", "-w", str(src), "-o", str(exe)])
    if proc.returncode != 0:
        return RunResult(False, error=f"reference build failed: {proc.stderr.strip()[:200]}")
    return _execute(exe, timeout)


def run_with_functions(module_ir: str, optimized: dict[str, str], tmp: Path, timeout: float) -> RunResult:
    """The program with each function in `optimized` replaced by that (single-function) module,
    every other function at -Oz; linked without further optimization (clang -O0 on the IR)."""
    tc = find_toolchain()
    base = tmp / "base.ll"
    base.write_text(externalize(module_ir))
    rest = tmp / "rest.bc"
    cmd = [tc.tool("llvm-extract"), "--delete", *[f"--func={n}" for n in optimized], str(base), "-o", str(rest)]
    proc = _run(cmd)
    if proc.returncode != 0:
        return RunResult(False, error=f"llvm-extract --delete failed: {proc.stderr.strip()[:200]}")
    rest_oz = tmp / "rest-oz.bc"
    proc = _run([tc.opt, f"-passes={OZ}", str(rest), "-o", str(rest_oz)])
    if proc.returncode != 0:
        return RunResult(False, error=f"opt on the rest failed: {proc.stderr.strip()[:200]}")
    parts = [str(rest_oz)]
    for i, ir in enumerate(optimized.values()):
        path = tmp / f"label-{i}.ll"
        path.write_text(ir)
        parts.append(str(path))
    linked, exe = tmp / "linked.bc", tmp / "labeled"
    proc = _run([tc.tool("llvm-link"), *parts, "-o", str(linked)])
    if proc.returncode != 0:
        return RunResult(False, error=f"llvm-link failed: {proc.stderr.strip()[:200]}")
    proc = _run([tc.clang, "-O0", "-w", str(linked), "-o", str(exe)])
    if proc.returncode != 0:
        return RunResult(False, error=f"build failed: {proc.stderr.strip()[:200]}")
    return _execute(exe, timeout)


def check_program(module_ir: str, optimized: dict[str, str], timeout: float = 10.0) -> dict[str, str]:
    """{function: optimized module} -> {function: "ok" | "changed" | "timeout" | "error" | "unverified"}.

    "unverified": the reference build failed, timed out or exited non-zero, so nothing can be accepted.
    """
    with tempfile.TemporaryDirectory(prefix="llmopt-safety-") as tmpdir:
        tmp = Path(tmpdir)
        ref = run_reference(module_ir, tmp, timeout)
        if not ref.ok or ref.returncode != 0:
            # A program that hangs, crashes or exits non-zero at -Oz has no trustworthy output to
            # compare (seen: a csmith program exiting 44 at -Oz and segfaulting in the split build).
            return {name: "unverified" for name in optimized}
        limit = timeout  # the reference finished within `timeout`; a label may not take longer

        def verdict(run: RunResult) -> str:
            if run.same_as(ref):
                return "ok"
            if run.error == "timeout":
                return "timeout"
            return "error" if not run.ok else "changed"

        together = run_with_functions(module_ir, optimized, tmp, limit)
        if together.same_as(ref):
            return {name: "ok" for name in optimized}
        if len(optimized) == 1:
            return {name: verdict(together) for name in optimized}
        return {name: verdict(run_with_functions(module_ir, {name: ir}, tmp, limit))
                for name, ir in optimized.items()}


def check_rows(rows: list[dict], harness, stats: Counter, timeout: float = 10.0) -> None:
    """Check every runnable row whose label beats -Oz; a rejected label falls back to -Oz."""
    by_unit: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        metric = row.get("metric", "instcount")  # the label beats -Oz in what it was tuned for
        if row.get("runnable") and row[f"{metric}_best"] < row[f"{metric}_oz"]:
            by_unit[row["unit"]].append(row)
    for uid, unit_rows in by_unit.items():
        unit = Unit(**{k: tuple(v) if isinstance(v, list) else v for k, v in rows_unit_spec(unit_rows).items()})
        try:
            module_ir = compile_unit(unit)
        except Exception as err:  # noqa: BLE001 - any failure means the labels stay unverified
            verdicts = {r["name"]: f"unverified ({err})" for r in unit_rows}
        else:
            verdicts = check_program(module_ir, {r["name"]: r["optimized_ir"] for r in unit_rows}, timeout)
        stats["safety_programs"] += 1
        for row in unit_rows:
            verdict = verdicts.get(row["name"], "error")
            stats["safety_checked"] += 1
            if verdict == "ok":
                continue
            stats[f"safety_rejected_{verdict.split(' ')[0]}"] += 1
            stats["safety_rejected"] += 1
            oz = harness.evaluate(row["ir"], [OZ], want_ir=True)
            from llmopt.llvm.ir import normalize_ir

            row.update(passes=[OZ], instcount_best=oz.instcount, search_method="oz",
                       optimized_ir=normalize_ir(oz.ir), label_rejected=verdict)
            if "objsize_oz" in row:
                row["objsize_best"] = row["objsize_oz"]
        del uid


def rows_unit_spec(unit_rows: list[dict]) -> dict:
    return unit_rows[0]["unit_spec"]
