"""The measures every part reports the same way (DESIGN.md, Metrics): improvement over -Oz, size bins,
and the generated-answer quality measures (count error, IR BLEU, "the generated IR parses").

The runtime, the dataset card, training validation and the evaluation all import these, so
"improvement" or "parses" means one thing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

METRICS = ("instcount", "objsize")  # what a search minimizes: IR instructions, or .text+.data bytes
SIZE_EDGES = (25, 50, 100, 200, 400, 800)
SIZE_BINS = ("0-24", "25-49", "50-99", "100-199", "200-399", "400-799", ">=800")

NO_IR = "no optimized IR in the answer"
NO_FUNCTION = "expected a function definition (no `define` in the generated IR)"


def improvement(oz: int, result: int) -> float:
    """(oz - result) / oz in % (positive: smaller than -Oz); 0.0 when -Oz is 0."""
    return 100.0 * (oz - result) / oz if oz else 0.0


def overall_improvement(oz_counts: Iterable[int], result_counts: Iterable[int]) -> float:
    """(sum -Oz - sum result) / sum -Oz, in %; 0.0 for an empty or all-zero set."""
    return improvement(sum(oz_counts), sum(result_counts))


def share(part: int, total: int) -> float:
    """`part` of `total` in % (0.0 for an empty total)."""
    return 100.0 * part / total if total else 0.0


def size_bin(instcount_input: int, edges: Sequence[int] = SIZE_EDGES) -> str:
    """Label of the input-size bin (unoptimized instructions) for thesis Fig. 4.9."""
    low = 0
    for edge in edges:
        if instcount_input < edge:
            return f"{low}-{edge - 1}"
        low = edge
    return f">={low}"


def mape(pairs: Sequence[tuple[int, int]]) -> float | None:
    """Mean absolute percentage error of (predicted, true) counts (a true 0 counts as 1); None for no pairs."""
    if not pairs:
        return None
    return 100.0 * sum(abs(p - t) / max(t, 1) for p, t in pairs) / len(pairs)


def corpus_ir_bleu(generated: Sequence[str], reference: Sequence[str]) -> float:
    """Corpus BLEU (sacrebleu, 0..1 as in thesis Fig. 4.4) of generated vs reference IR texts; 0.0 for none."""
    if not generated:
        return 0.0
    from sacrebleu import corpus_bleu

    return corpus_bleu(list(generated), [list(reference)]).score / 100.0


def ir_bleu(generated: str, compiled: str) -> float:
    """BLEU (0..1) of one generated vs compiled IR, both normalized (sacrebleu sentence BLEU: feedback)."""
    import sacrebleu

    from llmopt.llvm.ir import normalize_ir

    return sacrebleu.sentence_bleu(normalize_ir(generated), [normalize_ir(compiled)]).score / 100.0


def parse_generated_ir(irs: Sequence[str | None], evaluate_tasks: Callable[..., Sequence[Any]]
                       ) -> list[tuple[bool, int | None, str | None]]:
    """(parses, instcount, error) of each generated IR, parsed and verified by LLVM through the harness.

    `evaluate_tasks` is shaped like `Harness.evaluate_tasks`; an empty pass list is the no-op pipeline.
    IR that is missing or holds no `define` does not parse (an empty module would).
    """
    todo = [i for i, ir in enumerate(irs) if ir and "define " in ir]
    results = evaluate_tasks([(irs[i], []) for i in todo]) if todo else []
    out: list[tuple[bool, int | None, str | None]] = [
        (False, None, NO_IR if ir is None else NO_FUNCTION) for ir in irs]
    for i, res in zip(todo, results, strict=True):
        out[i] = (True, res.instcount, None) if res.ok else (False, None, res.error or "")
    return out


def metric_value(result: Any, metric: str) -> int:
    """A measured EvalResult's value in `metric` (`METRICS`); objsize is None when llc failed: worst."""
    value = result.objsize if metric == "objsize" else result.instcount
    return value if value is not None else 1 << 62
