"""`llmopt cc`, `llmopt c++` (clang wrappers for builds) and `llmopt cc-summary` (what they did).

Every argument after `cc` / `c++` belongs to clang, untouched: `llmopt.cli.main` hands them over
before any llmopt option parsing (`llmopt.cli.RAW_COMMANDS`), and the parsers below take them verbatim too.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

_NO_OPTIONS = "\x01"  # prefix character no clang argument starts with: argparse sees only positionals


def run_raw(lang: str, clang_args: list[str]) -> int:
    """`llmopt cc ARGS` / `llmopt c++ ARGS`: compile like clang / clang++ would (llmopt.cc)."""
    from llmopt.cc import run

    return run(lang, clang_args)


def _run_wrapper(args: argparse.Namespace) -> int:
    return run_raw(args.command, args.clang_args)


def _run_summary(args: argparse.Namespace) -> int:
    from llmopt.cc_store import SummaryStore
    from llmopt.cc_summary import format_text, to_json

    directory = None if args.all else os.path.abspath(args.dir)
    store = SummaryStore()
    try:
        if args.clear:
            print(f"forgot {store.clear(directory)} units")
            return 0
        units = store.units(directory)
    finally:
        store.close()
    if args.json:
        print(json.dumps(to_json(units, directory)))
    else:
        print(format_text(units, directory), end="")
    return 0


def add_parser(subparsers: Any) -> None:
    """Register `cc`, `c++` and `cc-summary`."""
    for name, compiler in (("cc", "clang"), ("c++", "clang++")):
        p = subparsers.add_parser(
            name, add_help=False, prefix_chars=_NO_OPTIONS,
            help=f"{compiler} wrapper for builds ({'CXX' if name == 'c++' else 'CC'}=\"llmopt {name}\"): verified pass lists per function; "
                 "see `llmopt cc-summary`",
            description=f"Compile like {compiler}-19 with every argument given, optimizing each C/C++ unit with "
                        "model-predicted, LLVM-verified pass lists (never worse than -Oz in instructions); any "
                        "failure falls back to plain clang. Settings: LLMOPT_CC_SAMPLES, LLMOPT_CC_STRATEGY, "
                        "LLMOPT_CC_MODEL, LLMOPT_CC_VERBOSE, LLMOPT_CC_DISABLE (README).")
        p.add_argument("clang_args", nargs=argparse.REMAINDER, help=f"{compiler} arguments, passed as they are")
        p.set_defaults(func=_run_wrapper)

    s = subparsers.add_parser(
        "cc-summary", help="what `llmopt cc` builds did: instructions and object bytes vs -Oz, fallbacks",
        description="Summarize the units built by `llmopt cc` / `llmopt c++` whose output or source lies under "
                    "a directory (default: the current one): functions, instructions and object bytes against "
                    "clang -Oz, answers taken from the cache, and the units that fell back and why.")
    s.add_argument("--dir", default=".", help="project directory (default: the current directory)")
    s.add_argument("--all", action="store_true", help="every unit recorded, wherever it is")
    s.add_argument("--clear", action="store_true", help="forget the selected units")
    s.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    s.set_defaults(func=_run_summary)
