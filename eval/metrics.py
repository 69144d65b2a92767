"""The numbers of an evaluation (DESIGN.md "Metrics"), as pure functions of measured counts.

A method proposes, per function, an ordered list of candidate pass lists; each was measured
(`instcount`, None when the list failed).  At a sample budget k the method's answer is the best
of its first k candidates:

* without -Oz backup, a function whose first k candidates all failed keeps its unoptimized
  input count (the raw model answer is unusable, so nothing was optimized);
* with -Oz backup (thesis Fig. 4.6), the answer is min(best, -Oz), and one more compilation is
  spent whenever some candidate is not -Oz itself.

Compilations count distinct lists compiled.  Overall improvement is sum-based:
(sum of -Oz counts - sum of result counts) / sum of -Oz counts, in %.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

from llmopt.llvm.passes import OZ
from llmopt.metrics import SIZE_BINS, improvement, overall_improvement, size_bin  # noqa: F401 - re-exported for eval


@dataclass
class Candidate:
    """One measured candidate: its pass list and instruction count (None: the list failed)."""

    passes: list[str]
    instcount: int | None
    error: str | None = None
    score: float | None = None


@dataclass
class Outcome:
    """A method's answer for one function at one budget."""

    instcount: int  # what the function ends up with
    compilations: int  # distinct lists compiled (+ -Oz when backed up)
    passes: list[str] | None  # the chosen list (None: no candidate usable, or -Oz chosen by the backup)
    unique: int  # distinct lists among the first k samples
    failed: bool  # no usable candidate among the first k


def outcome_at(candidates: Sequence[Candidate], k: int, instcount_input: int, instcount_oz: int,
               backup: bool = False, extra_compilations: int | None = None) -> Outcome:
    """The best of the first `k` candidates (see module docstring for the backup semantics).

    `extra_compilations` replaces the distinct-list count (e.g. the autotuner's own search budget).
    """
    first = list(candidates)[:k]
    seen: set[tuple[str, ...]] = set()
    best: Candidate | None = None
    for cand in first:
        seen.add(tuple(cand.passes))
        if cand.instcount is None:
            continue
        if best is None or cand.instcount < best.instcount:  # type: ignore[operator]
            best = cand
    compilations = len(seen) if extra_compilations is None else extra_compilations
    failed = best is None
    if best is None:
        count, passes = instcount_input, None
    else:
        count, passes = best.instcount, list(best.passes)
    if backup:
        if any(key != (OZ,) for key in seen) or not seen:
            compilations += 1
        if failed or instcount_oz < count:
            count, passes = instcount_oz, [OZ]
    return Outcome(int(count), compilations, passes, len(seen), failed)


@dataclass
class Summary:
    """Aggregate of outcomes over a set of functions (all w.r.t. -Oz)."""

    n_functions: int
    instcount_oz: int
    instcount_result: int
    overall_improvement_pct: float
    mean_improvement_pct: float
    functions_improved: int
    functions_regressed: int
    instructions_saved: int
    instructions_regressed: int
    compilations: int
    failed: int
    unique_samples: float  # mean distinct lists per function

    def to_dict(self) -> dict:
        return asdict(self)


def summarize(pairs: Sequence[tuple[int, Outcome]]) -> Summary:
    """Summary of (instcount_oz, outcome) pairs."""
    oz_total = sum(oz for oz, _ in pairs)
    res_total = sum(o.instcount for _, o in pairs)
    improved = [(oz, o) for oz, o in pairs if o.instcount < oz]
    regressed = [(oz, o) for oz, o in pairs if o.instcount > oz]
    per_function = [improvement(oz, o.instcount) for oz, o in pairs if oz > 0]
    n = len(pairs)
    return Summary(
        n_functions=n,
        instcount_oz=oz_total,
        instcount_result=res_total,
        overall_improvement_pct=overall_improvement([oz for oz, _ in pairs], [o.instcount for _, o in pairs]),
        mean_improvement_pct=sum(per_function) / len(per_function) if per_function else 0.0,
        functions_improved=len(improved),
        functions_regressed=len(regressed),
        instructions_saved=sum(oz - o.instcount for oz, o in improved),
        instructions_regressed=sum(o.instcount - oz for oz, o in regressed),
        compilations=sum(o.compilations for _, o in pairs),
        failed=sum(o.failed for _, o in pairs),
        unique_samples=sum(o.unique for _, o in pairs) / n if n else 0.0,
    )


def objsize_honesty(rows: Sequence[tuple[int, int, int | None, int | None]]) -> dict:
    """The proxy's honesty: rows of (instcount_oz, instcount_result, objsize_oz, objsize_result).

    Returns objsize improvement over -Oz (sum-based, rows with both sizes) and how often a list
    that wins on instcount loses (or ties) on object size.
    """
    sized = [r for r in rows if r[2] is not None and r[3] is not None]
    wins = [r for r in sized if r[1] < r[0]]
    return {
        "functions_sized": len(sized),
        "objsize_oz": sum(r[2] for r in sized),  # type: ignore[misc]
        "objsize_result": sum(r[3] for r in sized),  # type: ignore[misc]
        "objsize_improvement_pct": overall_improvement([r[2] for r in sized], [r[3] for r in sized]),  # type: ignore[misc]
        "instcount_wins": len(wins),
        "instcount_win_objsize_loss": sum(r[3] > r[2] for r in wins),  # type: ignore[operator]
        "instcount_win_objsize_tie": sum(r[3] == r[2] for r in wins),
        "objsize_wins": sum(r[3] < r[2] for r in sized),  # type: ignore[operator]
        "objsize_losses": sum(r[3] > r[2] for r in sized),  # type: ignore[operator]
    }


