"""Resumable output directories remember the settings their job started with.

A datagen job or an evaluation appends finished work to its output directory and skips it on a rerun;
mixing in work done with other settings would corrupt the result, so both store their settings in a
JSON file next to the work and compare on every start.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from llmopt.outputs import write_atomic


def settings_diff(path: Path, settings: dict[str, Any], defaults: dict[str, Any] | None = None
                  ) -> dict[str, tuple[Any, Any]]:
    """{key: (stored, given)} for every setting that differs from those stored at `path`; {} if none.

    A setting added after a job started is absent from its file: `defaults` gives the value it had
    then (its default), so adding a setting never makes old work unresumable."""
    stored = {**(defaults or {}), **json.loads(path.read_text())}
    return {k: (stored.get(k), v) for k, v in settings.items() if stored.get(k) != v}


def store_settings(path: Path, settings: dict[str, Any]) -> None:
    """Write `settings` to `path` atomically (a killed job never leaves half a file)."""
    write_atomic(path, json.dumps(settings, indent=1))
