"""`llmopt train CONFIG` (and `python -m training.cli CONFIG`): train or resume a model from a config file."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register the `train` subcommand on an argparse subparsers object; `func(args)` returns an exit code."""
    parser = subparsers.add_parser(
        "train", help="train (or resume) a pass-list model from a config file",
        description="Train a model per CONFIG (JSON/YAML/TOML, keys of training/config.py TrainConfig). "
                    "Rerunning the same command resumes from out_dir/checkpoint.")
    parser.add_argument("config", help="config file, e.g. training/configs/tiny.json")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override a config value (JSON-parsed), e.g. --set max_steps=100; repeatable")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    parser.set_defaults(func=run)
    return parser


def run(args: argparse.Namespace) -> int:
    from training.config import load_config, parse_override

    try:
        cfg = load_config(args.config, dict(parse_override(o) for o in args.overrides))
        from training.train import train

        final = train(cfg, progress=not args.no_progress)
    except (FileNotFoundError, ValueError) as err:
        if getattr(args, "debug", False):
            raise
        print(f"llmopt train: error: {err}", file=sys.stderr)
        return 2
    print(f"model saved to {final}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.cli")
    sub = parser.add_subparsers(dest="command", required=True)
    add_parser(sub)
    args = parser.parse_args(["train", *(sys.argv[1:] if argv is None else argv)])
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
