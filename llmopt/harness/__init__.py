"""Compile-and-measure machinery shared by every path: worker pool, timeouts, result cache."""

from llmopt.harness.cache import ResultCache, make_key, open_cache
from llmopt.harness.evaluate import EvalResult, Harness
from llmopt.harness.pool import TaskOutcome, WorkerPool

__all__ = ["EvalResult", "Harness", "ResultCache", "TaskOutcome", "WorkerPool", "make_key", "open_cache"]
