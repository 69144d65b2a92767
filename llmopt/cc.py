"""`llmopt cc` / `llmopt c++`: a clang wrapper that builds each translation unit with verified pass lists.

    CC="llmopt cc" CXX="llmopt c++" make

A unit (one C/C++ source compiled to an object, assembly or a program; `llmopt.cc_args`) is built in
three steps: (1) clang emits its IR the way llmopt's inputs are made (`-Oz -Xclang
-disable-llvm-passes -emit-llvm`, with the user's own -I/-D/-std/target flags and dependency
files); (2) `llmopt.cc_optimize` predicts and verifies pass lists per function in a child process
(or the answer cache has them); (3) clang compiles the optimized IR with the user's own flags to the
output they asked for.  The unit is also measured against what `clang -Oz` makes of it and recorded
for `llmopt cc-summary`.

A build never breaks because of llmopt: if any step fails, the unit is built by plain clang with
the user's arguments (and -Oz when they gave no -O level), and one warning line says why.  A source
that clang itself rejects gets clang's own diagnostics and exit code, and no llmopt warning.  Calls
that are not units (-E, -M, --version, linking only, several sources, ...) run clang unchanged.
Quiet on success; LLMOPT_CC_VERBOSE=1 prints one line per call, LLMOPT_CC_DISABLE=1 turns llmopt off.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from llmopt.cc_args import Invocation, classify, codegen_args, fallback_args, frontend_args
from llmopt.cc_store import AnswerCache, SummaryStore, UnitRecord
from llmopt.errors import one_line
from llmopt.llvm.toolchain import ToolchainError, find_toolchain, requested_version

DRIVERS = {"cc": "clang", "c++": "clang++"}


class StepFailed(Exception):
    """A step of the optimized build failed; `step` names it (frontend, predict, codegen)."""

    def __init__(self, step: str, message: str):
        super().__init__(f"{step}: {message}")
        self.step = step


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() not in ("", "0", "no", "false")


def _say(message: str) -> None:
    print(f"llmopt cc: {message}", file=sys.stderr, flush=True)


def driver(lang: str) -> str:
    """clang (cc) or clang++ (c++) of llmopt's LLVM; the PATH's one if that LLVM is missing."""
    name = DRIVERS[lang]
    try:
        return find_toolchain().tool(name)
    except ToolchainError:
        found = shutil.which(f"{name}-{requested_version()}") or shutil.which(name)
        if not found:
            raise
        return found


def _exec(clang: str, args: list[str]) -> int:
    """Become clang: same stdio, signals and exit code as calling it directly."""
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(clang, [clang, *args])
    return 127  # not reached


def _plain(clang: str, args: list[str]) -> int:
    return subprocess.run([clang, *args]).returncode


def _capture(clang: str, args: list[str], stdout: int | None = subprocess.DEVNULL) -> subprocess.CompletedProcess:
    """Run clang keeping its stderr for later (shown once, or dropped when plain clang runs instead)."""
    return subprocess.run([clang, *args], stdout=stdout, stderr=subprocess.PIPE)


def _first_error(stderr: bytes | str) -> str:
    text = stderr.decode(errors="replace") if isinstance(stderr, bytes) else stderr
    errors = [ln for ln in text.splitlines() if "error" in ln.lower()]
    return one_line(RuntimeError(errors[-1] if errors else text or "failed"))


def run(lang: str, args: list[str]) -> int:
    """Compile like `clang` / `clang++` with `args`; returns clang's exit code."""
    clang = driver(lang)
    if _flag("LLMOPT_CC_DISABLE"):
        return _exec(clang, args)
    inv = classify(args)
    if inv.kind == "pass":
        if _flag("LLMOPT_CC_VERBOSE"):
            _say(f"passed to clang ({inv.reason})")
        return _exec(clang, args)
    start = time.monotonic()
    if inv.kind == "skip":
        rc = _plain(clang, fallback_args(inv))
        record = _record_for(inv, "skipped" if rc == 0 else "error", inv.reason)
    else:
        rc, record = _build_unit(clang, inv)
    record.seconds = round(time.monotonic() - start, 3)
    if inv.reason != "configure probe":
        _save(record)
    return rc


def _record_for(inv: Invocation, status: str, reason: str = "") -> UnitRecord:
    output = inv.output_path()
    output = f"{os.path.abspath(inv.source or '')} -> stdout" if output == "-" else os.path.abspath(output)
    return UnitRecord(output, os.path.abspath(inv.source or ""), status, reason)


def _build_unit(clang: str, inv: Invocation) -> tuple[int, UnitRecord]:
    """The optimized build of a unit, or plain clang when any step of it fails."""
    record = _record_for(inv, "optimized")
    with tempfile.TemporaryDirectory(prefix="llmopt-cc-") as tmp:
        try:
            messages = _optimized_build(clang, inv, Path(tmp), record)
        except Exception as err:  # whatever went wrong, the build goes on with clang
            step = err.step if isinstance(err, StepFailed) else "llmopt"
            rc = _plain(clang, fallback_args(inv))
            if step == "frontend" and rc != 0:  # the source does not compile: clang has said why
                record.status, record.reason = "error", f"clang exit code {rc}"
            else:
                record.status, record.reason = "fallback", one_line(err)
                _say(f"warning: {inv.source}: {record.reason}; built by plain clang")
            return rc, record
    sys.stderr.buffer.write(messages)  # the compiler's own warnings, once
    sys.stderr.flush()
    if _flag("LLMOPT_CC_VERBOSE"):
        _say(_describe(record))
    return 0, record


def _optimized_build(clang: str, inv: Invocation, tmp: Path, record: UnitRecord) -> bytes:
    """Steps 1-3 (module docstring); fills `record`; returns the compiler's stderr to show."""
    stem = Path(inv.source or "unit").stem
    ir_path, opt_path = tmp / f"{stem}.ll", tmp / "opt" / f"{stem}.ll"
    frontend = _capture(clang, frontend_args(inv, str(ir_path)))
    if frontend.returncode != 0:
        raise StepFailed("frontend", _first_error(frontend.stderr))
    ir = ir_path.read_text(errors="replace")
    cache = AnswerCache()
    from llmopt.llvm.ir import defined_functions

    optimize = not defined_functions(ir)  # nothing to predict: what clang -Oz makes of it
    if optimize:
        record.status, record.reason = "skipped", "no function definitions"
        source = ir_path
    else:
        optimized, report, record.cache_hit = _answer(ir, ir_path, tmp, cache)
        opt_path.parent.mkdir()
        opt_path.write_text(optimized)
        _fill(record, report)
        record.objsize_oz = _objsize(clang, inv, ir_path, ir, True, cache)
        record.objsize_result = _objsize(clang, inv, opt_path, optimized, False, cache)
        optimize = _keep_clang_oz(record)
        source = ir_path if optimize else opt_path
    codegen = _capture(clang, codegen_args(inv, str(source), optimize=optimize), stdout=None)  # `-o -` writes there
    if codegen.returncode != 0:
        raise StepFailed("codegen", _first_error(codegen.stderr))
    return frontend.stderr + codegen.stderr


def _keep_clang_oz(record: UnitRecord) -> bool:
    """Whether clang -Oz's own object is smaller than llmopt's (its pipeline adds the SLP vectorizer,
    which the -Oz instruction baseline `default<Oz>` lacks): then the unit is built from that and
    counted as -Oz.  LLMOPT_CC_GUARD=none keeps llmopt's object whatever its size."""
    oz, ours = record.objsize_oz, record.objsize_result
    if os.environ.get("LLMOPT_CC_GUARD", "objsize") == "none" or oz is None or ours is None or oz >= ours:
        return False
    record.detail["answer"] = {"instcount_result": record.instcount_result, "objsize_result": ours}
    record.detail["kept"] = "clang -Oz"
    record.reason = f"kept clang -Oz's smaller object ({oz} < {ours} bytes)"
    record.instcount_result, record.objsize_result = record.instcount_oz, oz
    return True


def _answer(ir: str, ir_path: Path, tmp: Path, cache: AnswerCache) -> tuple[str, dict[str, Any], bool]:
    """(optimized IR, report, from the cache) for the unit's IR: predicted once per IR and settings."""
    from llmopt.cc_optimize import Settings
    from llmopt.harness.cache import make_key
    from llmopt.llvm.ir import ir_hash

    settings = Settings.from_env()
    key = make_key("cc-answer", find_toolchain().version, ir_hash(ir), settings.fingerprint())
    hit = cache.get_ir(key)
    if hit is not None:
        return hit[0], hit[1], True
    out, report = tmp / "predicted.ll", tmp / "report.json"
    try:
        proc = subprocess.run([sys.executable, "-m", "llmopt.cc_optimize", str(ir_path), str(out), str(report)],
                              capture_output=True, text=True, timeout=settings.timeout)
    except subprocess.TimeoutExpired:
        raise StepFailed("predict", f"timed out after {settings.timeout:g}s (LLMOPT_CC_TIMEOUT)") from None
    if proc.returncode != 0:
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        raise StepFailed("predict", lines[-1] if lines else f"exit code {proc.returncode}")
    optimized, answer = out.read_text(), json.loads(report.read_text())
    cache.put_ir(key, optimized, answer)
    return optimized, answer, False


def _fill(record: UnitRecord, report: dict[str, Any]) -> None:
    record.functions = len(report["functions"])
    record.instcount_input = report["instcount_input"]
    record.instcount_oz = report["instcount_oz"]
    record.instcount_result = report["instcount_result"]
    record.detail = {"mode": report["mode"], "compilations": report["compilations"], "notes": report["notes"],
                     "functions": [{k: f[k] for k in ("name", "instcount_oz", "instcount_result", "passes", "source")}
                                   for f in report["functions"]]}


def _objsize(clang: str, inv: Invocation, ir_path: Path, ir: str, optimize: bool, cache: AnswerCache) -> int | None:
    """.text + .data bytes of the unit's object from `ir` (`optimize`: by clang's own -Oz pipeline).

    Memoized per (IR, codegen flags); None where it cannot be measured (not ELF, codegen failed)."""
    from llmopt.harness.cache import make_key
    from llmopt.llvm.elf import text_and_data_bytes
    from llmopt.llvm.ir import ir_hash

    key = make_key("cc-objsize", find_toolchain().version, ir_hash(ir), codegen_args(inv, "IR", optimize=optimize,
                                                                                      output="OBJ"))
    known = cache.get(key)
    if known is not None:
        return known["bytes"]
    obj = ir_path.with_suffix(".oz.o" if optimize else ".o")
    if _capture(clang, codegen_args(inv, str(ir_path), optimize=optimize, output=str(obj))).returncode != 0:
        return None
    try:
        size = text_and_data_bytes(obj.read_bytes())
    except (ValueError, OSError):
        return None
    cache.put(key, {"bytes": size})
    return size


def _save(record: UnitRecord) -> None:
    """Record the unit for `llmopt cc-summary`; a summary problem never fails the build."""
    try:
        store = SummaryStore()
        try:
            store.record(record)
        finally:
            store.close()
    except Exception as err:
        if _flag("LLMOPT_CC_VERBOSE"):
            _say(f"could not record {record.output} in the summary: {one_line(err)}")


def _describe(record: UnitRecord) -> str:
    """One line for LLMOPT_CC_VERBOSE."""
    if record.status != "optimized":
        return f"{record.source}: {record.status} ({record.reason})"
    return (f"{record.source}: {record.functions} functions, {record.instcount_result} instructions "
            f"(-Oz {record.instcount_oz}), {record.objsize_result} bytes (-Oz {record.objsize_oz})"
            + (", from the cache" if record.cache_hit else ""))
