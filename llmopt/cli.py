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
from pathlib import Path

from llmopt.llvm.toolchain import ToolchainError


class UsageError(Exception):
    """Bad input from the user: one line on stderr, exit code 2."""


def read_ir_file(path: str) -> str:
    """The text of an IR (.ll) or bitcode (.bc) file, or a UsageError that says what is wrong."""
    p = Path(path)
    if not p.exists():
        raise UsageError(f"{path}: no such file")
    if p.is_dir():
        raise UsageError(f"{path}: is a directory, expected an LLVM IR file (.ll)")
    data = p.read_bytes()
    if not data.strip():
        raise UsageError(f"{path}: file is empty")
    if data[:4] in (b"BC\xc0\xde", b"\xde\xc0\x17\x0b"):
        import subprocess

        from llmopt.llvm.toolchain import find_toolchain

        proc = subprocess.run([find_toolchain().tool("llvm-dis"), "-o", "-", str(p)], capture_output=True)
        if proc.returncode != 0:
            raise UsageError(f"{path}: cannot read bitcode: {proc.stderr.decode(errors='replace').strip()}")
        return proc.stdout.decode()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"{path}: binary file, expected LLVM IR text (.ll) or bitcode (.bc)") from None
    if "\0" in text:
        raise UsageError(f"{path}: binary file, expected LLVM IR text (.ll) or bitcode (.bc)")
    return text


def prepare_input(path: str) -> tuple[str, list[str]]:
    """Read, check (parses?) and un-optnone an input; returns (ir, notes for the user)."""
    from llmopt.llvm.capi import Context, LLVMError
    from llmopt.llvm.ir import defined_functions, strip_optnone

    ir = read_ir_file(path)
    notes = []
    ctx = Context()
    try:
        module = ctx.parse(ir)
    except LLVMError as err:
        raise UsageError(f"{path}: malformed LLVM IR: {str(err).splitlines()[0]}") from None
    module.dispose()
    ctx.dispose()
    if not defined_functions(ir):
        raise UsageError(f"{path}: no function definitions to optimize")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ir, had_optnone = strip_optnone(ir)
    if had_optnone:
        notes.append("input was built with -O0 (optnone): stripped optnone; build with "
                     "`clang -Oz -Xclang -disable-llvm-passes` for a faithful -Oz baseline")
    return ir, notes


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
    from llmopt.llvm.passes import OZ, UnknownPassError, check_pass_list, parse_pass_list

    passes = parse_pass_list(args.passes)
    try:
        check_pass_list(passes)
    except UnknownPassError as err:
        raise UsageError(str(err)) from None
    ir, notes = prepare_input(args.file)
    instcount_input = Context().parse(ir).instcount()
    with Harness(workers=1, cache=not args.no_cache) as harness:
        oz, result = harness.evaluate_many(ir, [[OZ], passes], want_ir=bool(args.output))
    if not result.ok:
        raise UsageError(f"pass list failed: {result.error}")
    if args.output:
        Path(args.output).write_text(result.ir or "")
    report = {"instcount_input": instcount_input, "instcount_oz": oz.instcount, "instcount_result": result.instcount,
              "passes": passes, "llvm_version": _version()}
    if args.json:
        print(json.dumps(report))
    else:
        for note in notes:
            print(f"note: {note}", file=sys.stderr)
        saving = 100.0 * (oz.instcount - result.instcount) / oz.instcount if oz.instcount else 0.0
        print(f"input     {instcount_input:>7} instructions")
        print(f"-Oz       {oz.instcount:>7}")
        print(f"result    {result.instcount:>7}  ({saving:+.2f}% vs -Oz)  passes: {','.join(passes)}")
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
_PLUGINS = ("llmopt.predict_cli", "data_pipeline.cli", "training.cli", "eval.cli", "llmopt.loops.cli")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="llmopt", description=__doc__.splitlines()[0])
    parser.add_argument("--llvm-version", type=int, help="LLVM major version (default 19 or $LLMOPT_LLVM_VERSION)")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("count", help="instruction count per function and total")
    p.add_argument("file")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_count)

    p = sub.add_parser("opt", help="apply a pass list from the vocabulary; compare with -Oz")
    p.add_argument("file")
    p.add_argument("-p", "--passes", required=True, help='comma-separated, e.g. "sroa,instcombine,simplifycfg"')
    p.add_argument("-o", "--output", help="write the optimized IR here")
    p.add_argument("--json", action="store_true")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the result cache")
    p.set_defaults(func=_cmd_opt)

    p = sub.add_parser("passes", help="the pass vocabulary with kinds")
    p.add_argument("--json", action="store_true")
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
    # --llvm-version must be known before anything looks up the toolchain.
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--llvm-version", type=int)
    known, _ = pre.parse_known_args(argv)
    if known.llvm_version:
        os.environ["LLMOPT_LLVM_VERSION"] = str(known.llvm_version)
    debug = "--debug" in argv
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        return int(args.func(args) or 0)
    except (UsageError, ToolchainError) as err:
        if debug:
            raise
        print(f"llmopt: error: {err}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. `llmopt passes | head`
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        print("llmopt: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    # Run the imported `llmopt.cli`, not this `__main__` copy: plugins raise llmopt.cli.UsageError,
    # which must be the class that `main` catches.
    from llmopt.cli import main as _main

    sys.exit(_main())
