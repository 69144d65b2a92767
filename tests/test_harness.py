"""The harness survives LLVM aborts and hangs, and its cache is shared safely."""

import multiprocessing as mp

from llmopt.harness import Harness, ResultCache, WorkerPool, make_key
from llmopt.harness.llvm_worker import evaluate


def test_llvm_abort_kills_only_a_worker(example_ir):
    with WorkerPool("llmopt.harness.llvm_worker:evaluate", workers=1, timeout=30) as pool:
        tasks = [{"ir": example_ir, "pipeline": p, "version": None} for p in
                 ("default<Oz>", "function(loop(licm))", "default<Oz>", "function(loop(licm))", "sroa")]
        outcomes = pool.run(tasks)
    assert [o.ok for o in outcomes] == [True, False, True, False, True]
    assert "LICM requires MemorySSA" in outcomes[1].error and outcomes[1].crashed
    assert outcomes[0].value == outcomes[2].value
    assert pool.restarts == 2


def test_timeout_fires_and_pool_recovers():
    with WorkerPool("time:sleep", workers=1, timeout=0.5) as pool:
        outcomes = pool.run([0.0, 5.0, 0.0])
    assert outcomes[0].ok and outcomes[2].ok
    assert not outcomes[1].ok and "timed out" in outcomes[1].error


def test_harness_reports_bad_input_and_bad_pass(example_ir):
    with Harness(workers=1, cache=False) as harness:
        bad_ir, unknown, good = harness.evaluate_tasks([("define i32 @f( {", ["sroa"]),
                                                        (example_ir, ["no-such-pass"]), (example_ir, ["sroa"])])
    assert not bad_ir.ok and "invalid IR" in bad_ir.error
    assert not unknown.ok and "unknown pass" in unknown.error
    assert good.ok and good.instcount > 0


def test_cache_hit_costs_no_compilation(tmp_path, example_ir):
    cache = ResultCache(tmp_path / "c.sqlite")
    with Harness(workers=1, cache=cache) as harness:
        first = harness.evaluate(example_ir, ["default<Oz>", "gvn"])
        assert harness.stats.evaluations == 1 and not first.cached
        second = harness.evaluate(example_ir, ["default<Oz>", "gvn"])
        assert harness.stats.evaluations == 1 and second.cached and second.instcount == first.instcount
        with_ir = harness.evaluate(example_ir, ["default<Oz>", "gvn"], want_ir=True)  # another metric: a miss
        assert harness.stats.evaluations == 2 and "define" in with_ir.ir


def _writer(path: str, start: int) -> None:
    cache = ResultCache(path)
    for i in range(start, start + 200):
        cache.put(make_key("k", i), {"instcount": i})


def test_concurrent_writers(tmp_path):
    path = str(tmp_path / "shared.sqlite")
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(path, s)) for s in (0, 200, 400)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
        assert p.exitcode == 0
    cache = ResultCache(path)
    assert len(cache) == 600
    assert cache.get(make_key("k", 450)) == {"instcount": 450}
    assert cache.get(make_key("k", 9999)) is None


def test_worker_function_in_process(example_ir):
    assert evaluate({"ir": example_ir, "pipeline": "default<Oz>"})["instcount"] > 0
    assert "error" in evaluate({"ir": example_ir, "pipeline": "not-a-pass"})
