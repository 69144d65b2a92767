"""The v3 autotuner's rules: greedy runs until a step stops helping, every good list is kept, the broadcast
reaches every function, ties go to the shorter list, labels reproduce with `opt` run as a subprocess."""

from __future__ import annotations

import hashlib

import pytest

from data_pipeline.autotune import GoodLists, TuneConfig, TuneResult, drive, rank, refine, search
from llmopt.harness import Harness
from llmopt.llvm.passes import OZ, vocabulary
from llmopt.llvm.subprocess_opt import count_instructions_text, run_opt

pytestmark = pytest.mark.timeout(300)


def _tune(functions: dict[str, str], harness: Harness, cfg: TuneConfig) -> dict[str, TuneResult]:
    vocab = vocabulary(harness.version)
    results = {h: TuneResult(h, None, None) for h in functions}
    drive(((h, search(h, cfg, results[h], vocab)) for h in functions), harness, functions)
    return results


def _functions(corpus: list[str], n: int) -> dict[str, str]:
    picked = sorted(corpus, key=len)[-n:]  # the largest: most room for a search to find something
    return {hashlib.sha256(ir.encode()).hexdigest(): ir for ir in picked}


def test_ties_go_to_the_shorter_list_then_to_oz():
    assert rank(5, ["gvn"]) < rank(5, ["gvn", "dce"])
    assert rank(5, [OZ]) < rank(5, ["default<O2>"])
    assert rank(4, ["gvn", "dce", "sroa"]) < rank(5, [OZ])


def test_greedy_runs_until_a_step_no_longer_improves(corpus, harness):
    functions = _functions(corpus, 6)
    results = _tune(functions, harness, TuneConfig(budget=1, greedy_steps=40, minimize=False))
    n_plain = len([p for p in vocabulary(harness.version) if not p.startswith("default<")])
    for res in results.values():
        steps = (res.evaluations - 1) / n_plain  # -Oz, then about one vocabulary sweep a step
        assert 1 <= steps < 40, "greedy ended on its own, not at the cap"
        # The last sweep found nothing better than the list it extended: no single appended pass helps.
        best = res.best
        extended = [list(ls) for ls in res.good.counts if len(ls) == len(best.passes) + 1
                    and list(ls[:-1]) == best.passes]
        assert all(res.good.counts[tuple(ls)] >= best.instcount for ls in extended)
    capped = _tune(functions, harness, TuneConfig(budget=1, greedy_steps=1, minimize=False))
    assert sum(r.evaluations for r in capped.values()) < sum(r.evaluations for r in results.values())


def test_good_lists_keep_ties_and_the_top_distinct_lists():
    good = GoodLists()
    for ls, n in [([OZ], 7), (["gvn"], 7), (["gvn", "dce"], 7), (["dce"], 9), (["sroa"], 8), (["licm"], 12)]:
        good.add(ls, n)
    summary = good.summary()
    assert summary["ties"] == [[OZ], ["gvn"], ["gvn", "dce"]] and summary["n_ties"] == 3
    assert [n for _, n in summary["top"]] == [7, 7, 7, 8, 9, 12]
    assert GoodLists.from_summary(summary).counts == good.counts


def test_full_broadcast_reaches_every_function(corpus, harness):
    """Every function is measured with every broadcast list, and no label gets worse."""
    functions = _functions(corpus, 5)
    first = _tune(functions, harness, TuneConfig(budget=20, greedy_steps=0))
    lists = [["instcombine", "simplifycfg"], ["sroa", "gvn", "dce"], [OZ, "instcombine"], ["mem2reg"]]
    vocab = vocabulary(harness.version)
    before = {h: r.best.key() for h, r in first.items()}
    drive(((h, refine(h, TuneConfig(greedy_steps=0), first[h], lists, vocab)) for h in functions), harness,
          functions)
    for h, res in first.items():
        assert all(tuple(ls) in res.evaluated for ls in lists)
        assert res.best.key() <= before[h]
        assert res.best.instcount <= res.instcount_oz


def test_labels_reproduce_with_opt_as_a_subprocess(corpus, harness):
    functions = _functions(corpus, 4)
    results = _tune(functions, harness, TuneConfig(budget=60))
    for h, res in results.items():
        for passes, count in [(res.best.passes, res.best.instcount), ([OZ], res.instcount_oz)]:
            assert sum(count_instructions_text(run_opt(functions[h], passes)).values()) == count


def test_committed_v3_labels_reproduce_with_opt():
    """A sample of the committed dataset's final labels (every split), re-measured by opt-19 as a subprocess."""
    import random
    from pathlib import Path

    from llmopt.dataset import read_rows

    data = Path(__file__).resolve().parent.parent / "data" / "llmopt-v3"
    if not (data / "test.parquet").exists():
        pytest.skip("no committed v3 dataset")
    for split in ("train", "test"):
        rows = list(read_rows(data, split))
        for row in random.Random(0).sample(rows, 8):
            for passes, count in [(row["passes"], row["instcount_best"]), ([OZ], row["instcount_oz"])]:
                assert sum(count_instructions_text(run_opt(row["ir"], passes)).values()) == count, row["name"]
            assert row["instcount_best"] <= row["instcount_oz"]
            assert row["good_lists"][0]["passes"] == row["passes"]
