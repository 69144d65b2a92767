"""Evaluation metrics on hand-made inputs: sum-based improvement, improved/regressed, -Oz backup, compilations."""

import pytest

from eval.metrics import Candidate, objsize_honesty, outcome_at, overall_improvement, size_bin, summarize
from eval.plots import compilation_series, write_plots
from eval.quality import error_category
from eval.tables import Table
from llmopt.llvm.passes import OZ


def test_overall_improvement_is_sum_based_not_mean():
    # -Oz 100 and 10; results 90 and 20: per-function mean is (10% - 100%)/2 = -45%, the sum says +0%.
    assert overall_improvement([100, 10], [90, 20]) == pytest.approx(0.0)
    assert overall_improvement([100, 100], [90, 100]) == pytest.approx(5.0)
    assert overall_improvement([], []) == 0.0


def test_best_of_first_k_and_compilations_count_distinct_lists():
    cands = [Candidate(["a"], 12), Candidate(["a"], 12), Candidate(["b"], 8), Candidate(["c"], 5)]
    o1 = outcome_at(cands, 1, instcount_input=30, instcount_oz=10)
    assert (o1.instcount, o1.compilations, o1.passes, o1.unique) == (12, 1, ["a"], 1)
    o3 = outcome_at(cands, 3, 30, 10)
    assert (o3.instcount, o3.compilations, o3.passes) == (8, 2, ["b"])  # the repeat of ["a"] compiles once
    o9 = outcome_at(cands, 9, 30, 10)  # more budget than candidates: all of them
    assert (o9.instcount, o9.compilations) == (5, 3)


def test_failed_lists_count_as_unoptimized_input_without_backup():
    cands = [Candidate(["bad"], None, "unknown pass"), Candidate(["worse"], None, "crash")]
    raw = outcome_at(cands, 2, instcount_input=30, instcount_oz=10)
    assert raw.instcount == 30 and raw.failed and raw.passes is None
    backed = outcome_at(cands, 2, 30, 10, backup=True)
    assert backed.instcount == 10 and backed.passes == [OZ] and backed.compilations == 3


def test_backup_takes_min_and_charges_oz_only_when_needed():
    worse = [Candidate(["x"], 14)]
    assert outcome_at(worse, 1, 30, 10).instcount == 14
    b = outcome_at(worse, 1, 30, 10, backup=True)
    assert (b.instcount, b.compilations, b.passes) == (10, 2, [OZ])
    better = [Candidate(["y"], 7)]
    b = outcome_at(better, 1, 30, 10, backup=True)
    assert (b.instcount, b.compilations, b.passes) == (7, 2, ["y"])
    oz_itself = [Candidate([OZ], 10)]
    assert outcome_at(oz_itself, 1, 30, 10, backup=True).compilations == 1  # -Oz predicted: nothing extra


def test_extra_compilations_replace_the_distinct_count():
    assert outcome_at([Candidate(["a"], 5)], 1, 30, 10, extra_compilations=1000).compilations == 1000


def test_summary_counts_improved_regressed_and_instructions():
    pairs = [(10, outcome_at([Candidate(["a"], 8)], 1, 20, 10)),      # saves 2
             (10, outcome_at([Candidate(["b"], 13)], 1, 20, 10)),     # regresses 3
             (10, outcome_at([Candidate(["c"], 10)], 1, 20, 10)),     # tie
             (10, outcome_at([Candidate(["d"], None)], 1, 20, 10))]   # failed: input count 20, regresses 10
    s = summarize(pairs)
    assert (s.functions_improved, s.functions_regressed) == (1, 2)
    assert (s.instructions_saved, s.instructions_regressed) == (2, 13)
    assert s.overall_improvement_pct == pytest.approx(100.0 * (40 - 51) / 40)
    assert s.compilations == 4 and s.failed == 1 and s.n_functions == 4
    assert s.mean_improvement_pct == pytest.approx((20 - 30 + 0 - 100) / 4)


def test_objsize_honesty_flags_instcount_wins_that_lose_bytes():
    rows = [(10, 8, 100, 120),   # wins on instcount, loses on bytes
            (10, 8, 100, 90),    # wins both
            (10, 12, 100, 95),   # loses instcount, wins bytes
            (10, 9, None, 80)]   # no size: left out
    h = objsize_honesty(rows)
    assert h["functions_sized"] == 3 and h["instcount_wins"] == 2
    assert h["instcount_win_objsize_loss"] == 1 and h["objsize_wins"] == 2 and h["objsize_losses"] == 1
    assert h["objsize_improvement_pct"] == pytest.approx(100.0 * (300 - 305) / 300)


def test_size_bins_and_error_categories():
    assert size_bin(3) == "0-24" and size_bin(25) == "25-49" and size_bin(5000) == ">=800"
    assert error_category("error: '%15' defined with type 'i32' but expected 'i1'") == "type error"
    assert error_category("error: use of undefined value '%x'") == "undefined value"
    assert error_category("error: use of undefined value '@foo'") == "undefined function"
    assert error_category("error: instruction forward referenced with type 'i32'") == "instruction forward referenced"
    assert error_category("error: invalid redefinition of function 'f'") == "invalid redefinition"
    assert error_category("error: expected instruction opcode") == "syntax error"
    assert error_category("something new") == "other"


def test_table_writes_markdown_csv_json(tmp_path):
    t = Table("t", "Title", ["method", "x"], [["a", 1.23456], ["b", None]])
    paths = t.write(tmp_path)
    assert "| a | 1.23 |" in paths["md"].read_text() and "| b | - |" in paths["md"].read_text()
    assert paths["csv"].read_text().splitlines() == ["method,x", "a,1.2346", "b,"]
    assert '"method": "a"' in paths["json"].read_text()


def _budgets(n_functions, *points):
    """A results entry: per k, (backup improvement %, backup compilations); the raw numbers differ on purpose."""
    return {"n_functions": n_functions, "samples": {
        str(k): {"overall_improvement_pct": -50.0, "compilations": 1,
                 "oz_backup": {"overall_improvement_pct": pct, "compilations": comp}} for k, pct, comp in points}}


def test_improvement_vs_compilations_plots_the_backup_numbers_per_function(tmp_path):
    results = {"n_functions": 4, "samples": [1, 10], "methods": {
        "oz": _budgets(4, (1, 0.0, 4), (10, 0.0, 4)),
        "random": _budgets(4, (1, 0.5, 8), (10, 1.5, 44)),
        "priority_polish10": _budgets(4, (1, 0.25, 4), (10, 2.0, 40)),
        "priority_geomean": _budgets(4, (1, 9.0, 4), (10, 9.0, 40)),  # an ablation: not on this plot
        "autotuner": _budgets(2, (1, 3.0, 2000), (10, 3.0, 2000)),  # labelled functions only, its own budget
    }}
    assert compilation_series(results) == {"random": [(1, 2.0, 0.5), (10, 11.0, 1.5)],
                                           "priority_polish10": [(1, 1.0, 0.25), (10, 10.0, 2.0)],
                                           "autotuner": [(10, 1000.0, 3.0)]}
    assert write_plots(results, tmp_path)["improvement_vs_compilations"].stat().st_size > 1000
    only_oz = dict(results, methods={"oz": results["methods"]["oz"]})
    assert "improvement_vs_compilations" not in write_plots(only_oz, tmp_path / "oz")
