"""`remeasure`: the benchmark's final numbers, medians over fresh measuring processes."""

from eval.loops_bench import remeasure
from llmopt.harness.cache import ResultCache
from llmopt.loops.actions import apply_all
from llmopt.loops.backend import Backend
from llmopt.loops.nest import Nest, matmul


def test_remeasure_medians_per_name(tmp_path):
    b = Backend(ResultCache(tmp_path / "c.sqlite"), tmp_path / "so", min_seconds=0.0)
    groups = []
    for shape in [(16, 32, 8), (24, 16, 16)]:
        start = Nest.untiled(matmul(*shape))
        tiled = apply_all(start, ["split_4", "down", "swap_down", "swap_down"])
        groups.append({"start": start, "tiled": tiled, "same as start": apply_all(start, ["down"])})
    out = remeasure(groups, b, workers=2, numpy_seconds=0.0)
    assert len(out) == 2
    for medians, spreads in out:
        assert set(medians) == set(spreads) == {"start", "tiled", "same as start", "numpy"}
        assert all(v > 0 for v in medians.values())
        assert medians["same as start"] == medians["start"]  # one kernel, measured once per process
    assert b.compiles == 2  # one library per group
    b.close()
