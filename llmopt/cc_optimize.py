"""The prediction step of `llmopt cc`, run in a child process: unoptimized IR in, verified optimized IR out.

    python -m llmopt.cc_optimize IN.ll OUT.ll REPORT.json      (settings from LLMOPT_CC_* variables)

It is `llmopt predict` on one translation unit (`llmopt.predict.predict_module` with the strategy
that `llmopt.predict_cli.build_strategy` makes), in its own process so that no crash, hang or
out-of-memory kill of the model or of LLVM can fail the build: the wrapper only sees an exit code
and falls back to clang.  A build system passes no options, so the settings come from the
environment (`Settings.from_env`); they are part of the answer-cache key.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from llmopt import __version__
from llmopt.errors import UsageError

DEFAULT_SAMPLES = 5        # per function; a build runs prediction once per changed unit
STRATEGIES = ("greedy", "nucleus", "priority", "random")


@dataclass(frozen=True)
class Settings:
    samples: int = DEFAULT_SAMPLES
    strategy: str = "priority"
    model: str | None = None         # model directory (None: the shipped model)
    workers: int = 1                 # compile workers per unit (make -j runs units in parallel)
    timeout: float = 600.0           # seconds for the prediction of one unit

    @classmethod
    def from_env(cls) -> Settings:
        """LLMOPT_CC_SAMPLES, LLMOPT_CC_STRATEGY, LLMOPT_CC_MODEL, LLMOPT_CC_WORKERS, LLMOPT_CC_TIMEOUT."""
        env = os.environ
        try:
            settings = cls(int(env.get("LLMOPT_CC_SAMPLES", DEFAULT_SAMPLES)), env.get("LLMOPT_CC_STRATEGY", "priority"),
                           env.get("LLMOPT_CC_MODEL") or None, int(env.get("LLMOPT_CC_WORKERS", 1)),
                           float(env.get("LLMOPT_CC_TIMEOUT", 600)))
        except ValueError as err:
            raise UsageError(f"bad LLMOPT_CC_* setting: {err}") from None
        if settings.samples < 1 or settings.workers < 1 or settings.timeout <= 0:
            raise UsageError("LLMOPT_CC_SAMPLES, LLMOPT_CC_WORKERS and LLMOPT_CC_TIMEOUT must be positive")
        if settings.model and not Path(settings.model).is_dir():
            raise UsageError(f"LLMOPT_CC_MODEL={settings.model}: no such model directory")
        if settings.strategy not in STRATEGIES:
            raise UsageError(f"LLMOPT_CC_STRATEGY must be one of {', '.join(STRATEGIES)}, got {settings.strategy!r}")
        return settings

    def fingerprint(self) -> dict[str, Any]:
        """What decides the answer for a given IR: llmopt, strategy, samples and the model's files."""
        from llmopt.model.loading import default_model_dir

        model = Path(self.model) if self.model else default_model_dir()
        files = sorted((str(p.relative_to(model)), p.stat().st_size, p.stat().st_mtime_ns)
                       for p in model.rglob("*") if p.is_file()) if model.is_dir() else []  # an ensemble's members too
        return {"llmopt": __version__, "strategy": self.strategy, "samples": self.samples,
                "model": str(model.resolve()), "model_files": files}


def _predict_args(settings: Settings) -> argparse.Namespace:
    """`llmopt predict`'s own parsed options for these settings (its defaults for everything else)."""
    from llmopt import predict_cli

    parser = argparse.ArgumentParser()
    predict_cli.add_parser(parser.add_subparsers())
    # One model thread: `make -j` runs several compilers at once.
    argv = ["predict", "-", "--samples", str(settings.samples), "--strategy", settings.strategy, "--threads", "1"]
    return parser.parse_args(argv + (["--model", settings.model] if settings.model else []))


def without_debug_info(ir: str) -> tuple[str, bool]:
    """(IR without debug info, whether it had any): the model was trained on IR without it."""
    if "!llvm.dbg.cu" not in ir:
        return ir, False
    from llmopt.llvm.toolchain import find_toolchain

    proc = subprocess.run([find_toolchain().opt, "--strip-debug", "-S", "-o", "-", "-"], input=ir,
                          capture_output=True, text=True, check=True)
    return proc.stdout, True


def _apply(ir: str, prediction: Any, harness: Any) -> tuple[str, int | None]:
    """The answer of `prediction` (made on IR without debug info) applied to `ir` itself."""
    if prediction.mode == "per-function":
        lists = [(f.name, f.passes) for f in prediction.functions if f.passes]
        result = harness.evaluate_per_function(ir, lists, want_ir=True)
    elif prediction.passes:
        result = harness.evaluate(ir, prediction.passes, want_ir=True)
    else:
        return ir, prediction.instcount_input
    if not result.ok:
        raise RuntimeError(f"the predicted passes failed on the unit with debug info: {result.error}")
    return result.ir, result.instcount


def optimize(ir: str, settings: Settings) -> tuple[str, dict[str, Any]]:
    """(optimized IR, report) for a translation unit's IR; never more instructions than -Oz."""
    from llmopt.harness import Harness
    from llmopt.predict import predict_module
    from llmopt.predict_cli import build_strategy

    plain, had_debug = without_debug_info(ir)
    with Harness(workers=settings.workers) as harness:
        harness.pool.start()  # the workers start while the model loads
        strategy, model = build_strategy(_predict_args(settings), harness)
        prediction = predict_module(plain, strategy, settings.samples, harness)
        optimized, count = _apply(ir, prediction, harness) if had_debug else (prediction.ir, None)
    report = {"functions": [f.to_json() for f in prediction.functions], "mode": prediction.mode,
              "passes": prediction.passes, "compilations": prediction.compilations, "notes": prediction.notes,
              "instcount_input": prediction.instcount_input, "instcount_oz": prediction.instcount_oz,
              "instcount_result": prediction.instcount_result if count is None else count,
              "settings": asdict(settings), "model": model}
    return optimized or ir, report


def main(argv: list[str] | None = None) -> int:
    source, target, report_path = argv if argv is not None else sys.argv[1:]
    optimized, report = optimize(Path(source).read_text(), Settings.from_env())
    Path(target).write_text(optimized)
    Path(report_path).write_text(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
