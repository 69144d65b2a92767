"""C code for a scheduled program: isl's AST generator for the loops, a driver around them.

`kernel_c(program, schedule)` builds the loop nest with isl (`AstBuild.node_from_schedule_map` on
the replayed 2d+1 schedule) and prints it ourselves, so that loops marked parallel get
`#pragma omp parallel for` (only the outermost one of a nest: nested regions would run serially
anyway) and unrolled innermost loops get `#pragma clang loop unroll_count(f)`.  isl names the loop
of schedule dimension d `c{d}`, so loop level L is iterator `c{2L+1}`.  Statements are macros
`S(i, j)` that expand to the assignment, the way isl's own code generators do it.

`program_c(program, schedule)` is a complete C program (tensors are static arrays sized by the
parameter values, which are `#define`d): `./prog REPEATS [DUMP [CUTOFF]]` initializes the tensors
deterministically, runs the kernel once and writes every output tensor in order, raw, to DUMP (`-`:
no dump); then it re-initializes and times the kernel REPEATS times with `clock_gettime` and prints
`seconds <min>`.  A run slower than CUTOFF seconds ends the timing early and adds `cut <runs>`: a
search only needs to know that a schedule is much slower than its best, not by how much.  The reference of a program is its own original schedule emitted the same way.
"""

from __future__ import annotations

import re

import islpy as isl

from llmopt.poly.polyhedral import context
from llmopt.poly.program import Program
from llmopt.poly.schedule import Schedule, State, schedule_map, state

EMIT_VERSION = 2

HEADER = """#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#define floord(n, d) (((n) < 0) ? -((-(n) + (d) - 1) / (d)) : (n) / (d))
#define min(x, y) ((x) < (y) ? (x) : (y))
#define max(x, y) ((x) > (y) ? (x) : (y))
"""

DRIVER = """
static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

int main(int argc, char **argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 1;
  double cutoff = argc > 3 ? atof(argv[3]) : 0.0;
  int cut = 0;
  init();
  kernel();
  if (argc > 2 && strcmp(argv[2], "-") != 0) {
    FILE *f = fopen(argv[2], "wb");
    if (!f) { perror("dump"); return 2; }
%DUMP%
    fclose(f);
  }
  double best = 1e300;
  for (int r = 0; r < reps; r++) {
    init();
    double t0 = now();
    kernel();
    double t1 = now();
    if (t1 - t0 < best) best = t1 - t0;
    if (cutoff > 0 && t1 - t0 > cutoff) { cut = r + 1; break; }
  }
  printf("seconds %.9f\\n", reps > 0 ? best : 0.0);
  if (cut) printf("cut %d\\n", cut);
  return 0;
}
"""


def _statement_macro(prog: Program, name: str) -> str:
    stmt = prog.statement(name)
    body = f"{stmt.lhs} = {stmt.expr}"
    if stmt.iterators:
        body = re.sub(r"\b(" + "|".join(map(re.escape, stmt.iterators)) + r")\b", r"(\1)", body)
    return f"#define {name}({', '.join(stmt.iterators)}) {body}"


def _tensor_decl(prog: Program, name: str) -> str:
    t = prog.tensors[name]
    dims = "".join(f"[{e}]" for e in t.shape)
    return f"static {t.dtype} {name}{dims} __attribute__((aligned(64)));"


def _init(prog: Program) -> str:
    """Deterministic values in [0.5, 1.5): each tensor from its own seed, element by flat index."""
    lines = ["static void init(void) {"]
    for k, t in enumerate(prog.tensors.values()):
        lines.append(f"  {{ {t.dtype} *p = ({t.dtype} *){t.name};")
        lines.append(f"    for (long x = 0; x < (long)(sizeof({t.name}) / sizeof(*p)); x++)")
        lines.append(f"      p[x] = ({t.dtype})((x * 7 + {13 * k + 1}) % 101) / 101 + 0.5; }}")
    return "\n".join(lines + ["}"])


def _user_names(node: isl.AstNode) -> set[str]:
    kind = node.get_type()
    if kind == isl.ast_node_type.user:
        return {node.user_get_expr().get_op_arg(0).get_id().get_name()}
    if kind == isl.ast_node_type.for_:
        return _user_names(node.for_get_body())
    if kind == isl.ast_node_type.if_:
        out = _user_names(node.if_get_then_node())
        return out | (_user_names(node.if_get_else_node()) if node.if_has_else_node() else set())
    if kind == isl.ast_node_type.block:
        kids = node.block_get_children()
        return set().union(*(_user_names(kids.get_at(i)) for i in range(kids.n_ast_node())))
    return _user_names(node.mark_get_node()) if kind == isl.ast_node_type.mark else set()


def _pragmas(node: isl.AstNode, st: State, in_parallel: bool) -> list[str]:
    level = (int(node.for_get_iterator().get_id().get_name()[1:]) - 1) // 2
    names = _user_names(node)
    out = []
    if not in_parallel and names and all(level in st[n].parallel for n in names):
        out.append("#pragma omp parallel for")
    factors = {st[n].unroll for n in names}
    if len(factors) == 1 and factors != {1} and all(st[n].depth - 1 == level for n in names):
        out.append(f"#pragma clang loop unroll_count({factors.pop()})")
    return out


class _Printer:
    """Prints an isl AST as C with our pragmas (see module docstring)."""

    def __init__(self, st: State):
        self.st = st
        self.lines: list[str] = []

    def emit(self, node: isl.AstNode, ind: int, par: bool) -> None:
        pad, kind = "  " * ind, node.get_type()
        if kind == isl.ast_node_type.for_:
            self._for(node, ind, par)
        elif kind == isl.ast_node_type.block:
            kids = node.block_get_children()
            for i in range(kids.n_ast_node()):
                self.emit(kids.get_at(i), ind, par)
        elif kind == isl.ast_node_type.if_:
            self.lines.append(f"{pad}if ({node.if_get_cond().to_C_str()}) {{")
            self.emit(node.if_get_then_node(), ind + 1, par)
            if node.if_has_else_node():
                self.lines.append(f"{pad}}} else {{")
                self.emit(node.if_get_else_node(), ind + 1, par)
            self.lines.append(f"{pad}}}")
        elif kind == isl.ast_node_type.user:
            self.lines.append(f"{pad}{node.user_get_expr().to_C_str()};")
        elif kind == isl.ast_node_type.mark:
            self.emit(node.mark_get_node(), ind, par)

    def _for(self, node: isl.AstNode, ind: int, par: bool) -> None:
        pad, it = "  " * ind, node.for_get_iterator().to_C_str()
        init = node.for_get_init().to_C_str()
        if node.for_is_degenerate():
            self.lines.append(f"{pad}{{ const int {it} = {init};")
            self.emit(node.for_get_body(), ind + 1, par)
            self.lines.append(f"{pad}}}")
            return
        pragmas = _pragmas(node, self.st, par)
        self.lines += [pad + p for p in pragmas]
        cond, inc = node.for_get_cond().to_C_str(), node.for_get_inc().to_C_str()
        self.lines.append(f"{pad}for (int {it} = {init}; {cond}; {it} += {inc}) {{")
        self.emit(node.for_get_body(), ind + 1, par or any("omp" in p for p in pragmas))
        self.lines.append(f"{pad}}}")


def loop_nest(prog: Program, st: State) -> str:
    """The loops of `st` as C statements (isl's AST generator, our printer)."""
    build = isl.AstBuild.from_context(context(prog))
    root = build.node_from_schedule_map(schedule_map(prog, st))
    printer = _Printer(st)
    printer.emit(root, 1, False)
    return "\n".join(printer.lines)


def kernel_c(prog: Program, schedule: Schedule) -> str:
    """`void kernel(void)` for `schedule`, with the statement macros before it."""
    st = state(prog, schedule)
    macros = "\n".join(_statement_macro(prog, s.name) for s in prog.statements)
    return f"{macros}\n\n__attribute__((noinline)) void kernel(void) {{\n{loop_nest(prog, st)}\n}}\n"


def program_c(prog: Program, schedule: Schedule | None = None) -> str:
    """A complete, self-timing C program for `schedule` (default: the original order)."""
    schedule = schedule or Schedule()
    defines = "\n".join(f"#define {k} {v}" for k, v in prog.params.items())
    # Tensor names go through a macro so that names libc already uses (y1, j0, index) still work.
    tensors = "\n".join(f"#define {n} poly_{n}\n{_tensor_decl(prog, n)}" for n in prog.tensors)
    dump = "\n".join(f"    fwrite({n}, sizeof({n}), 1, f);" for n in prog.outputs())
    driver = DRIVER.replace("%DUMP%", dump)
    return "\n\n".join([HEADER + defines, tensors, _init(prog), kernel_c(prog, schedule), driver])
