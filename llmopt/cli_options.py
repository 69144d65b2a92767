"""Flags and value types shared by every `llmopt` subcommand, declared once with one meaning each.

A subcommand calls `add_cache_flags(p)`, `add_progress_flag(p)`, ... instead of spelling its own
`--no-cache` / `--quiet` / `--workers`; values are checked by the argparse types below, so a bad
value is a one-line error with exit code 2 before any work starts.
"""

from __future__ import annotations

import argparse
from typing import Any

MAX_SAMPLES = 10_000  # candidates per function: beyond this Priority Sampling's queue alone exhausts memory


def _number(text: str, kind: type) -> Any:
    try:
        return kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {'a whole number' if kind is int else 'a number'}, "
                                         f"got {text!r}") from None


def int_at_least(low: int, high: int | None = None):
    """argparse type: an int in [low, high]."""
    def parse(text: str) -> int:
        value = _number(text, int)
        if value < low or (high is not None and value > high):
            bound = f">= {low}" if high is None else f"in [{low}, {high}]"
            raise argparse.ArgumentTypeError(f"must be {bound}, got {value}")
        return value
    parse.__name__ = "integer"
    return parse


positive_int = int_at_least(1)
nonnegative_int = int_at_least(0)
samples_int = int_at_least(1, MAX_SAMPLES)


def float_in(low: float, high: float | None = None, low_open: bool = False, what: str = ""):
    """argparse type: a float in [low, high] (or (low, high] with low_open)."""
    def parse(text: str) -> float:
        value = _number(text, float)
        too_low = value <= low if low_open else value < low
        if too_low or (high is not None and value > high) or value != value:
            left = "(" if low_open else "["
            bound = f"in {left}{low}, {high}]" if high is not None else f"{'>' if low_open else '>='} {low}"
            raise argparse.ArgumentTypeError(f"{what or 'value'} must be {bound}, got {text}")
        return value
    parse.__name__ = "number"
    return parse


temperature_float = float_in(0.0, what="temperature")
top_p_float = float_in(0.0, 1.0, low_open=True, what="top-p")
seconds_float = float_in(0.0, low_open=True, what="seconds")


def add_metric_flag(p: argparse.ArgumentParser, default: str | None, what: str) -> None:
    """`--metric instcount|objsize`: `what` minimizes IR instructions or .text+.data object bytes."""
    from llmopt.metrics import METRICS

    p.add_argument("--metric", choices=METRICS, default=default,
                   help=f"what {what} minimize: IR instructions (default) or .text+.data bytes of the object file")


def add_json_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")


def add_cache_flags(p: argparse.ArgumentParser) -> None:
    """`--cache FILE` moves the result cache, `--no-cache` turns it off (same spelling everywhere)."""
    p.add_argument("--cache", metavar="FILE",
                   help="result cache SQLite file (default $LLMOPT_CACHE_DIR or ~/.cache/llmopt/results.sqlite)")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the result cache")


def cache_choice(args: argparse.Namespace) -> bool | str:
    """The Harness `cache` argument for add_cache_flags' --cache FILE / --no-cache."""
    return False if args.no_cache else (args.cache or True)


def add_progress_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-progress", action="store_true", help="no progress bars")


def add_workers_flag(p: argparse.ArgumentParser, default: int | None, what: str = "compile worker processes") -> None:
    shown = "all cores" if default is None else str(default)
    p.add_argument("--workers", type=positive_int, default=default, help=f"{what} (default {shown})")
