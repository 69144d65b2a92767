"""`llmopt predict FILE...`: model-predicted pass lists, verified by LLVM.

Every input is read, compiled (C / C++) and checked, and every output place checked, before the
model loads: a bad input or option is a one-line error (exit 2) that costs no work.  The model and
the compile workers start once for all inputs.  Imports of torch happen inside the commands, so
`llmopt --help` and bad-input errors stay fast.

`add_prediction_flags`, `build_strategy` and `load_lm` are shared with other commands that use the model
(llmopt cc, llmopt feedback-data).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from llmopt.cli_options import (
    add_cache_flags,
    add_json_flag,
    add_metric_flag,
    add_progress_flag,
    add_workers_flag,
    cache_choice,
    nonnegative_int,
    positive_int,
    samples_int,
    temperature_float,
    top_p_float,
)
from llmopt.sampling.config import DEFAULTS, PREFILL_DTYPES, PRIORITIES

DEFAULT_SAMPLES = DEFAULTS.samples


def _strategy_name(text: str) -> str:
    """A `llmopt.sampling.registry` name (as `llmopt eval --methods` takes them)."""
    from llmopt.sampling.registry import is_known

    if not is_known(text):
        raise argparse.ArgumentTypeError(f"unknown strategy {text!r}: choose greedy, nucleus[_tT], "
                                         "priority[_noregex|_geomean|_token|_branchN], feedback[_fast|_short|_long], "
                                         "random, coreset, or NAME_polishK")
    return text


def add_prediction_flags(p: argparse.ArgumentParser) -> None:
    """Strategy, sample count, metric and -Oz backup: what `build_strategy` and `predict_module` read."""
    p.add_argument("--strategy", type=_strategy_name, default=DEFAULTS.strategy, metavar="NAME",
                   help="greedy, nucleus, priority, random, coreset, or any `llmopt eval` model method name "
                        f"(nucleus_t0.8, priority_geomean_branch3, priority_polish10, ...; default {DEFAULTS.strategy})")
    p.add_argument("--samples", "-k", type=samples_int, default=DEFAULT_SAMPLES,
                   help=f"candidates per function (default {DEFAULT_SAMPLES})")
    add_metric_flag(p, "instcount", "the answers")
    p.add_argument("--temperature", type=temperature_float, default=DEFAULTS.temperature,
                   help=f"nucleus sampling temperature (default {DEFAULTS.temperature})")
    p.add_argument("--top-p", type=top_p_float, default=DEFAULTS.top_p,
                   help=f"nucleus sampling top-p in (0, 1] (default {DEFAULTS.top_p})")
    p.add_argument("--max-branch", type=positive_int, help="Priority Sampling: alternatives pushed per token")
    p.add_argument("--priority", choices=PRIORITIES, default=DEFAULTS.priority,
                   help="Priority Sampling queue order (default: prefix probability)")
    p.add_argument("--seed", type=int, default=DEFAULTS.seed)
    p.add_argument("--feedback", choices=("fast", "short", "long"), help="add compiler-feedback rounds (thesis ch. 5)")
    p.add_argument("--rounds", type=nonnegative_int, default=2, help="feedback rounds (default 2)")
    p.add_argument("--model", help="model directory (default: the shipped model, a gated ensemble directory); several "
                   "joined by commas decode as one ensemble, ungated")
    p.add_argument("--int8", action="store_true",
                   help="run the model's decoder layers with dynamic int8 quantization (faster on CPU, logits differ a little)")
    p.add_argument("--prefill-dtype", choices=PREFILL_DTYPES, default="auto",
                   help="encode the prompt in bfloat16 (1.6x faster on CPUs with native bf16; log-probabilities move "
                        "~0.01, same validation results), float32, or auto (default: bfloat16 where native, float32 "
                        "elsewhere and with --int8)")
    p.add_argument("--threads", type=positive_int, metavar="N",
                   help="torch threads for the model (default: every core; the compile workers wait while it samples)")
    p.add_argument("--max-passes", type=positive_int, default=DEFAULTS.max_passes, metavar="N",
                   help=f"longest pass list the model may generate (default {DEFAULTS.max_passes})")
    p.add_argument("--data", help="dataset directory for --strategy coreset (its train split)")
    p.add_argument("--no-oz-backup", action="store_true", help="keep the best model answer even if -Oz is better")
    p.add_argument("--polish", type=nonnegative_int, default=0, metavar="N",
                   help="refine the best verified candidates with greedy steps (append or drop one pass), at most N "
                        "more compilations per function (default 0: off; ~300 is one or two steps)")


def add_parser(subparsers: Any) -> None:
    """Register `predict`; its `func(args)` returns an exit code."""
    p = subparsers.add_parser(
        "predict", help="predict pass lists with the model, verify them with LLVM, write the optimized IR",
        description="Sample candidate pass lists from the model for each function, compile each distinct one, keep "
                    "the best by --metric (never worse than -Oz unless --no-oz-backup), and print the `opt -passes=` "
                    "pipeline that reproduces each count. Inputs: .ll / .bc files, C / C++ files (compiled like the "
                    "-Oz baseline), directories (their such files, sorted) and `-` (IR on stdin).")
    p.add_argument("files", nargs="+", metavar="FILE", help="LLVM IR (.ll), bitcode (.bc), C/C++, a directory, or -")
    out = p.add_mutually_exclusive_group()
    out.add_argument("-o", "--output", metavar="FILE",
                     help="write the optimized module here (one input only; `-` = stdout, the report then goes "
                          "to stderr)")
    out.add_argument("--output-dir", metavar="DIR", help="write DIR/<input stem>.opt.ll for every input")
    add_prediction_flags(p)
    p.add_argument("-I", dest="include_dirs", action="append", default=[], metavar="DIR",
                   help="C/C++ inputs: include directory")
    p.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME[=VALUE]",
                   help="C/C++ inputs: macro")
    p.add_argument("--cflags", default="", help="C/C++ inputs: more clang flags in one string: --cflags='-std=gnu11 -fno-builtin'")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="show each function's ranked candidates (pass list, count, error); in JSON: `candidates`")
    add_workers_flag(p, 2)
    add_cache_flags(p)
    add_progress_flag(p)
    add_json_flag(p)
    p.set_defaults(func=run_predict)


def load_lm(path: str | None, *, int8: bool = False, max_passes: int = DEFAULTS.max_passes,
            prefill_dtype: str = "float32", threads: int | None = None) -> Any:
    """The model at `path` (default: the shipped one); a missing model or a bad option is a UsageError."""
    from llmopt.errors import UsageError
    from llmopt.model.loading import ModelNotFoundError

    try:
        from llmopt.sampling.lm import PassListLM

        return PassListLM.load(path, int8=int8, max_passes=max_passes, prefill_dtype=prefill_dtype, threads=threads)
    except (ModelNotFoundError, ValueError) as err:
        raise UsageError(str(err)) from None


def build_strategy(args: argparse.Namespace, harness: Any = None) -> tuple[Any, str | None]:
    """(strategy, model directory or None) for arguments declared by `add_prediction_flags`."""
    from llmopt.errors import UsageError, one_line
    from llmopt.sampling.config import SamplingConfig
    from llmopt.sampling.registry import needs_model, split_polish, strategy_from_name

    if args.samples < 1:
        raise UsageError("--samples must be at least 1")
    lm, model = None, None
    train_lists = None
    if needs_model(args.strategy) or args.feedback:
        # Sampling and verifying alternate (predict_many), so the model may use every core.
        lm = load_lm(args.model, int8=args.int8, max_passes=args.max_passes, prefill_dtype=args.prefill_dtype,
                     threads=args.threads or (None if "LLMOPT_TORCH_THREADS" in os.environ else os.cpu_count()))
        model = lm.path
    if (split_polish(args.strategy) or (args.strategy,))[0] == "coreset":  # coreset or coreset_polishK
        from llmopt.sampling.baselines import Coreset

        if not args.data:
            raise UsageError("--strategy coreset needs --data DIR (a dataset with a train split)")
        try:
            train_lists = Coreset.from_dataset(args.data).lists
        except FileNotFoundError as err:
            raise UsageError(str(err)) from None
        except (OSError, ValueError, KeyError) as err:  # pyarrow: not parquet, no `passes` column
            raise UsageError(f"{args.data}: cannot read the train split's pass lists ({one_line(err)})") from None
    config = SamplingConfig(strategy=args.strategy, samples=args.samples, temperature=args.temperature,
                            top_p=args.top_p, max_branch=args.max_branch, priority=args.priority, seed=args.seed,
                            max_passes=args.max_passes)
    try:
        strategy = strategy_from_name(args.strategy, lm=lm, config=config, harness=harness, metric=args.metric,
                                      train_pass_lists=train_lists, passes=lm.passes if lm is not None else None,
                                      feedback_rounds=args.rounds)
    except ValueError as err:
        raise UsageError(f"--strategy {args.strategy}: {err}") from None
    if args.feedback:
        from llmopt.feedback import FeedbackStrategy

        strategy = FeedbackStrategy(lm, harness, form=args.feedback, rounds=args.rounds, base=strategy)
    return strategy, model


def _cflags(args: argparse.Namespace) -> list[str]:
    from llmopt.errors import UsageError

    try:
        extra = shlex.split(args.cflags)
    except ValueError as err:
        raise UsageError(f"--cflags: {err}") from None
    return [*(f"-I{d}" for d in args.include_dirs), *(f"-D{d}" for d in args.defines), *extra]


@contextmanager
def _progress(enabled: bool, total: int):
    """A function-count bar on stderr (only on a terminal), or None."""
    if not enabled or not sys.stderr.isatty():
        yield None
        return
    from tqdm import tqdm

    with tqdm(total=total, unit="fn", desc="predict", file=sys.stderr, leave=False) as bar:
        yield bar


def _about(args: argparse.Namespace, model: str | None, version: int) -> str:
    feedback = f" + {args.feedback} feedback x{args.rounds}" if args.feedback else ""
    return (f"strategy {args.strategy}@{args.samples}{feedback}; metric {args.metric}; "
            f"{'model ' + model + '; ' if model else ''}LLVM {version}")


def _notes(inp: Any, result: Any) -> list[str]:
    """The input's notes, the prediction's, and why the module line is not the sum of the rows."""
    from llmopt.llvm.ir import defined_functions
    from llmopt.predict_report import count_note

    removed = [f.name for f in result.functions if f.name not in set(defined_functions(result.ir or ""))]
    note = count_note(result, removed)
    return [*inp.notes, *result.notes, *([note] if note else [])]


@dataclass
class _Session:
    """What every input of one `llmopt predict` run shares: the model, the workers, the report stream."""

    args: argparse.Namespace
    strategy: Any
    harness: Any
    model: str | None
    report: TextIO
    bar: Any = None

    def emit(self, text: str) -> None:
        if self.bar is not None:  # keeps the progress bar below the report
            self.bar.write(text, file=self.report)
        else:
            print(text, file=self.report, flush=True)

    def predict(self, inp: Any, output: str | None, first: bool) -> Any:
        """Predict one input, write its module, report it; returns its ModulePrediction."""
        from llmopt.predict import predict_module
        from llmopt.predict_inputs import write_output
        from llmopt.predict_report import render_text, to_json

        args, bar = self.args, self.bar
        if bar is not None:
            bar.set_description(Path(inp.name).name[:30])
        result = predict_module(inp.ir, self.strategy, args.samples, self.harness, oz_backup=not args.no_oz_backup,
                                metric=args.metric, on_function=(lambda _name: bar.update(1)) if bar else None,
                                polish=args.polish)
        if output is not None:
            write_output(output, result.ir if result.ir is not None else inp.ir)
        notes = _notes(inp, result)
        if args.json:
            self.emit(json.dumps(to_json(result, notes=notes, verbose=args.verbose, input=inp.path, output=output,
                                         strategy=args.strategy, samples=args.samples, feedback=args.feedback,
                                         llvm_version=self.harness.version, model=self.model)))
        else:
            name = inp.name + (f" -> {output}" if output not in (None, "-") else "")
            self.emit(("" if first else "\n") + "\n".join(render_text(result, name=name, notes=notes,
                                                                       verbose=args.verbose)))
        return result


def run_predict(args: argparse.Namespace) -> int:
    from llmopt.llvm.ir import defined_functions
    from llmopt.predict_inputs import expand_inputs, load_input, plan_outputs

    paths = expand_inputs(args.files)
    outputs = plan_outputs(paths, args.output, args.output_dir)  # before any work: a bad -o costs nothing
    cflags = _cflags(args)
    inputs = [load_input(path, cflags) for path in paths]
    from llmopt.harness import Harness

    total = sum(len(defined_functions(inp.ir)) for inp in inputs)
    with Harness(workers=args.workers, cache=cache_choice(args)) as harness, \
            _progress(not args.no_progress, total) as bar:
        harness.pool.start()  # workers start up while the model loads
        strategy, model = build_strategy(args, harness)  # once for all inputs
        session = _Session(args, strategy, harness, model, sys.stderr if args.output == "-" else sys.stdout, bar)
        if not args.json:
            session.emit(f"llmopt predict: {len(inputs)} input{'s' if len(inputs) != 1 else ''}; "
                         f"{_about(args, model, harness.version)}")
        results = [session.predict(inp, out, i == 0) for i, (inp, out) in enumerate(zip(inputs, outputs, strict=True))]
    if not args.json and len(results) > 1:
        from llmopt.predict_report import total_line

        print(f"\n{total_line(results)}", file=session.report)
    return 0

