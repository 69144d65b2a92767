"""The one error hierarchy every subsystem reports through.

Anything that derives from `LlmoptError` is a problem the user can act on (bad input, a missing
tool, a job in a state that cannot resume): the CLI prints its message on one line and exits with
its `exit_code`, never with a traceback (`--debug` shows one). Subsystem errors keep their own
names and builtin bases (ValueError, RuntimeError, ...) so library callers can still catch those.
"""

from __future__ import annotations

EXIT_USAGE = 2  # bad input or options, as argparse itself uses
EXIT_INTERRUPTED = 130  # Ctrl-C, as shells report SIGINT


class LlmoptError(Exception):
    """Base of every user-facing llmopt error: one line on stderr, exit code `exit_code`."""

    exit_code = EXIT_USAGE


class UsageError(LlmoptError):
    """Bad input from the user: a file, an option value, a combination of options."""


def one_line(err: BaseException) -> str:
    """The message of `err` as one line (LLVM diagnostics span several)."""
    text = str(err).strip() or type(err).__name__
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0] if len(lines) == 1 else f"{lines[0]} ({' '.join(lines[1:3])[:200]})"


def run_main(main) -> None:
    """`sys.exit(main())` for a module run as a script (`python -m ...`): an `LlmoptError` becomes one
    line on stderr and its exit code, as the `llmopt` command reports it."""
    import sys

    try:
        sys.exit(main())
    except LlmoptError as err:
        print(f"error: {one_line(err)}", file=sys.stderr)
        sys.exit(err.exit_code)
