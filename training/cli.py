"""`llmopt train CONFIG` (and `python -m training.cli CONFIG`): train or resume a model from a config file."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from llmopt.cli_options import add_progress_flag


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register the `train` subcommand on an argparse subparsers object; `func(args)` returns an exit code."""
    parser = subparsers.add_parser(
        "train", help="train (or resume) a pass-list model from a config file",
        description="Train a model per CONFIG (JSON/YAML/TOML, keys of training/config.py TrainConfig). "
                    "Rerunning the same command resumes from out_dir/checkpoint.")
    parser.add_argument("config", help="config file, e.g. training/configs/tiny.json")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override a config value (JSON-parsed), e.g. --set max_steps=100; repeatable")
    add_progress_flag(parser)
    parser.set_defaults(func=run)
    return parser


def _load(args: argparse.Namespace):
    """The TrainConfig of the command line, or a UsageError: everything that can go wrong here is the input
    (a missing, empty, binary or malformed file, an unknown key, a bad value)."""
    from pathlib import Path

    from llmopt.errors import UsageError, one_line
    from training.config import load_config, parse_override

    path = Path(args.config)
    if path.is_dir():
        raise UsageError(f"{path}: is a directory, expected a config file (e.g. training/configs/tiny.json)")
    try:
        overrides = dict(parse_override(o) for o in args.overrides)
    except ValueError as err:
        raise UsageError(one_line(err)) from err
    try:
        return load_config(path, overrides)
    except Exception as err:  # json/yaml/toml each raise their own kinds for a malformed file
        raise UsageError(f"{path}: {one_line(err)}") from err


def run(args: argparse.Namespace) -> int:
    from llmopt.errors import UsageError, one_line

    cfg = _load(args)
    from training.train import train

    try:
        final = train(cfg, progress=not args.no_progress)
    except (FileNotFoundError, ValueError) as err:  # no training rows, a dataset from another LLVM, ...
        raise UsageError(one_line(err)) from err
    print(f"model saved to {final}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """`python -m training.cli ARGS` = `llmopt train ARGS`: the same options and error contract."""
    from llmopt.cli import main as llmopt_main

    return llmopt_main(["train", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
