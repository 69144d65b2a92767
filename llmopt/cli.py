"""`llmopt` command line: count, opt, passes, predict, datagen, train, eval, loops.

Subcommands of the other top-level packages (data_pipeline, training, eval) and the loop path
are imported lazily so `llmopt count` starts fast and works without them.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from typing import NoReturn

from llmopt import __version__
from llmopt.cli_options import add_cache_flags, add_json_flag, cache_choice
from llmopt.errors import EXIT_INTERRUPTED, EXIT_USAGE, LlmoptError, UsageError, one_line
from llmopt.inputs import prepare_input, read_ir_file
from llmopt.llvm.toolchain import ToolchainError


def _count_without_system_llvm(path: str) -> tuple[dict[str, int], str]:
    """Counting needs no optimizer: with no system LLVM, llvmlite's bundled LLVM counts."""
    from llmopt.llvm import llvmlite_counts

    if not llvmlite_counts.llvmlite_available():
        raise ToolchainError("no LLVM found: `apt-get install llvm-19` (or `pip install llvmlite` to count only)")
    try:
        counts = llvmlite_counts.instcount_by_function(read_ir_file(path))
    except RuntimeError as err:
        raise UsageError(f"{path}: malformed LLVM IR: {str(err).strip().splitlines()[0]}") from None
    return counts, f"llvmlite-{llvmlite_counts.bundled_llvm_version()}"


def _cmd_count(args: argparse.Namespace) -> int:
    notes: list[str] = []
    try:
        from llmopt.llvm.capi import Context

        ir, notes = prepare_input(args.file)
        per_function = Context().parse(ir).instcount_by_function()
        version: int | str = _version()
    except ToolchainError:
        per_function, version = _count_without_system_llvm(args.file)
    total = sum(per_function.values())
    if args.json:
        print(json.dumps({"functions": per_function, "instcount": total, "llvm_version": version}))
    else:
        for note in notes:
            print(f"note: {note}", file=sys.stderr)
        width = max((len(n) for n in per_function), default=8)
        for name, count in per_function.items():
            print(f"{name:<{width}}  {count:>7}")
        print(f"{'total':<{width}}  {total:>7}")
    return 0


def _cmd_opt(args: argparse.Namespace) -> int:
    from llmopt.harness import Harness
    from llmopt.llvm.capi import Context
    from llmopt.llvm.passes import OZ, resolve_pipeline
    from llmopt.metrics import improvement
    from llmopt.outputs import check_output_file

    output = check_output_file(args.output, "-o") if args.output else None  # before the work, not after
    pipeline, passes = resolve_pipeline(args.passes)
    ir, notes = prepare_input(args.file)
    instcount_input = Context().parse(ir).instcount()
    with Harness(workers=1, cache=cache_choice(args)) as harness:
        oz = harness.evaluate(ir, [OZ])
        result = harness.evaluate_pipeline(ir, pipeline, want_ir=output is not None)
    if not result.ok:
        raise UsageError(f"pipeline failed: {result.error}")
    if output is not None:
        output.write_text(result.ir or "")
    report = {"instcount_input": instcount_input, "instcount_oz": oz.instcount, "instcount_result": result.instcount,
              "passes": passes, "pipeline": pipeline, "llvm_version": _version()}
    if args.json:
        print(json.dumps(report))
    else:
        for note in notes:
            print(f"note: {note}", file=sys.stderr)
        saving = improvement(oz.instcount, result.instcount)
        print(f"input     {instcount_input:>7} instructions")
        print(f"-Oz       {oz.instcount:>7}")
        print(f"result    {result.instcount:>7}  ({saving:+.2f}% vs -Oz)")
        print(f"pipeline  opt -passes='{pipeline}'")
    return 0


def _cmd_passes(args: argparse.Namespace) -> int:
    from llmopt.llvm.passes import load_vocabulary

    vocab = load_vocabulary()
    if args.json:
        print(json.dumps({"llvm_version": vocab.llvm_version,
                          "passes": [{"name": n, "kind": vocab.kinds[n]} for n in vocab.names]}))
    else:
        for name in vocab.names:
            print(f"{name:<36} {vocab.kinds[name]}")
        print(f"{len(vocab.names)} passes (LLVM {vocab.llvm_version})", file=sys.stderr)
    return 0


def _version() -> int:
    from llmopt.llvm.toolchain import find_toolchain

    return find_toolchain().version


# Subcommands owned by other packages: (module, description). Each module has add_parser(subparsers).
RAW_COMMANDS = ("cc", "c++")  # wrappers whose every later argument belongs to clang (llmopt.cc_cli)
_PLUGINS = ("llmopt.predict_cli", "llmopt.cc_cli", "llmopt.cache_cli", "data_pipeline.cli", "training.cli", "eval.cli", "llmopt.loops.cli")


class Parser(argparse.ArgumentParser):
    """argparse with llmopt's error contract: a bad option is one line on stderr and exit code 2
    (subcommand parsers inherit the class)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def split_global_options(argv: list[str]) -> tuple[list[str], int | None, bool]:
    """(argv without them, --llvm-version, --debug): global options may come before or after the
    subcommand, so they are taken out before argparse sees the subcommand's own options."""
    rest, version, debug, i = [], None, False, 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--" or (not rest and arg in RAW_COMMANDS):  # `llmopt cc ARGS`: ARGS are all clang's
            rest += argv[i:]
            break
        if arg == "--debug":
            debug = True
        elif arg == "--llvm-version" or arg.startswith("--llvm-version="):
            value = arg.partition("=")[2] if "=" in arg else (argv[i + 1] if i + 1 < len(argv) else "")
            i += 0 if "=" in arg else 1
            if not value.isdigit():
                raise UsageError(f"--llvm-version expects a major version number such as 19, got {value!r}")
            version = int(value)
        else:
            rest.append(arg)
        i += 1
    return rest, version, debug


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="llmopt", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"llmopt {__version__}")
    parser.add_argument("--llvm-version", type=int, help="LLVM major version (default 19 or $LLMOPT_LLVM_VERSION); "
                        "accepted before or after the subcommand")
    parser.add_argument("--debug", action="store_true", help="show tracebacks (before or after the subcommand)")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("count", help="instruction count per function and total")
    p.add_argument("file", help="LLVM IR (.ll) or bitcode (.bc); - reads stdin")
    add_json_flag(p)
    p.set_defaults(func=_cmd_count)

    p = sub.add_parser("opt", help="apply a pass list or any opt pipeline; compare with -Oz")
    p.add_argument("file", help="LLVM IR (.ll) or bitcode (.bc); - reads stdin")
    p.add_argument("-p", "--passes", required=True,
                   help='vocabulary passes, e.g. "sroa,instcombine,simplifycfg" (wrapped by kind), or any '
                        '`opt -passes=` pipeline, e.g. "function(instcombine<max-iterations=2>),cgscc(inline)"')
    p.add_argument("-o", "--output", help="write the optimized IR here")
    add_json_flag(p)
    add_cache_flags(p)
    p.set_defaults(func=_cmd_opt)

    p = sub.add_parser("passes", help="the pass vocabulary with kinds")
    add_json_flag(p)
    p.set_defaults(func=_cmd_passes)

    for module_name in _PLUGINS:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as err:
            if err.name and module_name.startswith(err.name):
                continue  # that part is not installed / not written yet
            raise
        module.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    try:
        argv, llvm_version, debug = split_global_options(argv)
        if llvm_version:  # must be known before anything looks up the toolchain
            os.environ["LLMOPT_LLVM_VERSION"] = str(llvm_version)
        if argv and argv[0] in RAW_COMMANDS:  # straight to clang's arguments, without building every parser
            from llmopt.cc_cli import run_raw

            return run_raw(argv[0], argv[1:])
        try:
            args = build_parser().parse_args(argv)
        except SystemExit as done:  # --help, --version, a bad option: its exit code, also when called as a function
            return done.code if isinstance(done.code, int) else EXIT_USAGE
        args.debug = debug
        return int(args.func(args) or 0)
    except LlmoptError as err:
        if debug:
            raise
        print(f"llmopt: error: {one_line(err)}", file=sys.stderr)
        return err.exit_code
    except BrokenPipeError:  # e.g. `llmopt passes | head`
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        print("llmopt: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
