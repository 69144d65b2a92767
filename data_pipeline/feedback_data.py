"""Compiler-feedback training datasets (thesis ch. 5): a base model answers each row, the compiler says what happened.

`write_feedback_dataset` answers every row of a dataset split with the base model (the runtime's
`llmopt.feedback`) and writes the rows with two extra columns, `feedback_history` (the turn: answer +
feedback text) and `verdict` (SURE when the predicted output count equals the real one, as in the
thesis), whose target stays the autotuner's answer.  `llmopt.model.format.build_example` reads these
columns, so the ordinary trainer fine-tunes on them: `llmopt train training/configs/feedback-fast.json`.
`llmopt feedback-data` (data_pipeline/cli.py) is the command.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from llmopt.dataset import check_columns, read_rows, split_files, write_split
from llmopt.errors import UsageError
from llmopt.feedback import FeedbackFormat, as_turn, compute_feedback, generate_answer
from llmopt.model import format as fmt
from llmopt.sampling.base import PromptTooLongError


def build_feedback_rows(lm: Any, rows: list[dict[str, Any]], harness: Any, *, form: FeedbackFormat = "fast",
                        progress: bool = True) -> list[dict[str, Any]]:
    """Feedback training rows: each dataset row + the base model's round-0 answer with its feedback.

    Extra columns: `feedback_history` = [{passes, instcount_input, instcount_output, optimized_ir,
    feedback}] and `verdict` (SURE if the model predicted the real output count, else RETRY).  The
    target stays the row's best answer.  Rows whose prompt does not fit the context are skipped.
    """
    from tqdm import tqdm

    out = []
    for row in tqdm(rows, disable=not progress, desc=f"feedback ({form})"):
        try:
            answer, _ = generate_answer(lm, row["ir"], form=form)
        except PromptTooLongError:
            continue
        fb = compute_feedback(row["ir"], answer, harness, form)
        turn = as_turn(answer, form)
        out.append({**row, "feedback_history": [{
            "passes": turn.passes, "instcount_input": turn.instcount_input, "instcount_output": turn.instcount_output,
            "optimized_ir": turn.optimized_ir or "", "feedback": fb.render(form)}],
            "verdict": fmt.SURE if fb.correct else fmt.RETRY})
    return out


def check_dataset(data_dir: str | Path, splits: Sequence[str]) -> None:
    """UsageError / DatasetError unless `data_dir` holds every split as readable parquet with an `ir` column.

    Reads the parquet footers only, so a bad input fails before the model loads."""
    path = Path(data_dir)
    if not path.is_dir():
        raise UsageError(f"{data_dir}: no such dataset directory")
    have = sorted(p.stem for p in path.glob("*.parquet"))
    for split in splits:
        files = split_files(path, split)
        if not files:
            raise UsageError(f"{data_dir}: no split {split!r} (has: {', '.join(have) or 'no .parquet files'})")
        for file in files:
            check_columns(file, ("ir",))


def write_feedback_dataset(lm: Any, data_dir: str | Path, out_dir: str | Path, harness: Any, *,
                           form: FeedbackFormat = "fast", splits: Sequence[str] = ("train", "validation"),
                           limit: int | None = None, progress: bool = True) -> dict[str, int]:
    """`build_feedback_rows` for each split of `data_dir`, written as `out_dir/{split}.parquet` (+ README.md).

    Returns {split: rows written}; a split missing from `data_dir` is skipped (count 0 is not written).
    """
    present = [split for split in splits if split_files(data_dir, split)]
    check_dataset(data_dir, present)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    counts = {}
    for split in present:
        built = build_feedback_rows(lm, read_rows(data_dir, split, limit=limit), harness, form=form, progress=progress)
        counts[split] = len(built)
        if built:
            write_split(out / f"{split}.parquet", built)
    (out / "README.md").write_text(
        f"# llmopt feedback dataset ({form})\n\nMade by `llmopt feedback-data` from `{data_dir}` with the model "
        f"`{lm.path}`. Rows: {counts}. Columns: those of docs/interfaces.md plus `feedback_history` and "
        "`verdict` (data_pipeline/feedback_data.py). Train with `llmopt train training/configs/feedback-fast.json`.\n")
    return counts
