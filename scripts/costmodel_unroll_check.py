"""How often the cost model's compiler view agrees with what clang does (issue 16).

The features' compiler view (`llmopt.poly.costmodel.features._compiler_vector`) predicts, from the loop nest
alone, which innermost loops LLVM's full unroller removes and whether the loop left innermost gets
vectorized.  This script asks clang itself: it emits sampled (program, schedule) rows of collected folders
as the harness does (`emit.program_c`, `measure.schedule_flags`), compiles them with optimization remarks
(`-Rpass=loop-unroll|loop-vectorize`, one regex: a second `-Rpass` replaces the first), maps each remark's line to the kernel loop there (isl names
the loop of level L `c{2L+1}`) and the statements inside it, and counts agreements per statement:

- unrolled: each statement's innermost loop, "completely unrolled" remark (of the simplification pipeline)
  against the feature `inner_unrolled` (LLVM also unrolls outer loops of a few trips around small nests:
  their inner loops run as before, so the features leave them out and so does this count);
- vectorized: the statement's predicted vector loop (the innermost one not unrolled) got a "vectorized
  loop" remark, against the feature `vector_ok`.

No timing: compiling only, so it may run beside other work.

    python scripts/costmodel_unroll_check.py data/poly-costmodel-fa56 data/poly-costmodel-fa56-inner \
        --rows 300 [--seed 0] [--out check.json]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from llmopt.llvm.toolchain import find_toolchain  # noqa: E402
from llmopt.poly.costmodel.data import load_rows  # noqa: E402
from llmopt.poly.costmodel.features import COMPILER_NAMES, PLAIN_FEATURES, VIEW_FEATURES, featurize  # noqa: E402
from llmopt.poly.emit import program_c  # noqa: E402
from llmopt.poly.measure import schedule_flags  # noqa: E402
from llmopt.poly.program import program_from_dict  # noqa: E402
from llmopt.poly.schedule import Schedule  # noqa: E402

_FOR = re.compile(r"^\s*for \(int c(\d+) ")
_CALL = re.compile(r"\b(S\d+)\(")
_REMARK = re.compile(r":(\d+):\d+: remark: (completely unrolled loop|vectorized loop|loop not vectorized)")


def loops_of_statements(source: str) -> dict[str, dict[int, set[int]]]:
    """{statement: {loop level: source lines of the loops around its calls}} of the kernel's `for (int cK`
    loops (braces always open a loop's body in the emitted C)."""
    out: dict[str, dict[int, set[int]]] = {}
    stack: list[tuple[int, int]] = []  # (level, line) of the open loops
    for number, line in enumerate(source.splitlines(), start=1):
        if m := _FOR.match(line):
            stack.append(((int(m[1]) - 1) // 2, number))
        elif stack and line.strip() == "}":
            stack.pop()
        for name in _CALL.findall(line) if stack and "#define" not in line else []:
            for level, at in stack:
                out.setdefault(name, {}).setdefault(level, set()).add(at)
    return out


def remarks(clang: str, source: str, flags: list[str]) -> dict[str, set[int]]:
    """{"completely unrolled loop" / "vectorized loop": source lines clang reported it at}.  Only the full
    unrolls of the simplification pipeline count, the ones the vectorizer sees: those reported before the
    first loop-vectorize remark (every function's simplification runs before any vectorization, and with
    -Rpass-missed every innermost loop gets one); later ones are remainder loops of vectorized loops."""
    with tempfile.TemporaryDirectory() as tmp:
        c_file = Path(tmp) / "k.c"
        c_file.write_text(source)
        proc = subprocess.run([clang, *flags, "-c", str(c_file), "-o", str(Path(tmp) / "k.o"),
                               "-Rpass=loop-unroll|loop-vectorize", "-Rpass-missed=loop-vectorize"],
                              capture_output=True, text=True, timeout=300)
    out: dict[str, set[int]] = {"completely unrolled loop": set(), "vectorized loop": set()}
    vectorizing = False
    for m in _REMARK.finditer(proc.stderr):
        vectorizing = vectorizing or m[2] != "completely unrolled loop"
        if m[2] == "vectorized loop" or not vectorizing:
            out.setdefault(m[2], set()).add(int(m[1]))
    return out


def check_row(clang: str, row: dict, counts: dict[str, np.ndarray]) -> None:
    """Add one row's agreements to `counts` ([[predicted no & clang no, no & yes], [yes & no, yes & yes]])."""
    prog = program_from_dict(row["program"])
    schedule = Schedule.from_list(row["schedule"])
    tree = featurize(prog, schedule)
    source = program_c(prog, schedule)
    loops = loops_of_statements(source)
    said = remarks(clang, source, schedule_flags(prog, schedule))
    view = {name: tree.comps[k, PLAIN_FEATURES:VIEW_FEATURES] for k, name in
            enumerate(s.name for s in prog.statements)}
    col = {name: k for k, name in enumerate(COMPILER_NAMES)}
    for name, levels in loops.items():
        depth = max(levels) + 1
        removed = int(round(view[name][col["unrolled_loops"]] * 2))
        inner = levels.get(depth - 1, set())
        counts["unrolled"][int(removed > 0), int(bool(inner & said["completely unrolled loop"]))] += 1
        v = depth - 1 - removed
        if v >= 0 and v in levels:
            counts["vectorized"][int(view[name][col["vector_ok"]] > 0.5),
                                 int(bool(levels[v] & said["vectorized loop"]))] += 1


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("data", nargs="+", help="collected folders")
    p.add_argument("--rows", type=int, default=300, help="rows drawn at random (identity rows included)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", help="also write the counts here (JSON)")
    args = p.parse_args(argv)
    rows = [r for d in args.data for r in load_rows(d)]
    pick = np.random.default_rng(args.seed).choice(len(rows), size=min(args.rows, len(rows)), replace=False)
    clang = find_toolchain().clang
    counts = {"unrolled": np.zeros((2, 2), int), "vectorized": np.zeros((2, 2), int)}
    for k in pick:
        check_row(clang, rows[k], counts)
    report = {"rows": len(pick)}
    for what, c in counts.items():
        report[what] = {"predicted_no_clang_no": int(c[0, 0]), "predicted_no_clang_yes": int(c[0, 1]),
                        "predicted_yes_clang_no": int(c[1, 0]), "predicted_yes_clang_yes": int(c[1, 1]),
                        "agreement": float(np.trace(c) / max(c.sum(), 1))}
    print(json.dumps(report, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
