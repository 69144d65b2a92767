"""Priority Sampling over the policy (`Policy.candidates`), batched compilation, `tune --candidates`."""

import numpy as np
import pytest

from llmopt.harness.cache import ResultCache
from llmopt.loops import DEFAULT_POLICY
from llmopt.loops.actions import ACTIONS, action_mask, apply, apply_all
from llmopt.loops.backend import Backend
from llmopt.loops.nest import Nest, matmul, validate
from llmopt.loops.policy import Policy
from llmopt.loops.tune import best_candidate, tune

needs_policy = pytest.mark.skipif(not DEFAULT_POLICY.exists(), reason="no shipped policy")


@pytest.fixture(scope="module")
def policy():
    return Policy()


@needs_policy
def test_log_probs_are_a_masked_distribution(policy):
    nest = Nest.untiled(matmul(96, 112, 128))
    for a in ["split_16", "down", "swap_down"]:
        logp = policy.log_probs(nest)
        assert logp.shape == (len(ACTIONS),)
        assert np.array_equal(np.isfinite(logp), action_mask(nest))
        assert np.isclose(np.exp(logp[np.isfinite(logp)]).sum(), 1.0)
        nest = apply(nest, a)


@needs_policy
@pytest.mark.parametrize("shape", [(96, 112, 128), (64, 256, 80)])
def test_candidates_distinct_first_greedy_priorities_non_increasing(policy, shape):
    start = Nest.untiled(matmul(*shape))
    cands = policy.candidates(start, 12)
    assert len(cands) == 12
    greedy_nest, greedy_actions = policy.actions(start)
    assert cands[0].actions == greedy_actions and cands[0].priority == 0.0
    assert cands[0].nest.schedule_key() == greedy_nest.schedule_key()
    assert len({c.nest.schedule_key() for c in cands}) == len(cands)
    priorities = [c.priority for c in cands]
    assert all(a >= b for a, b in zip(priorities, priorities[1:], strict=False))
    for c in cands:
        assert len(c.actions) == 10 and c.nest.schedule_key() == apply_all(start, c.actions).schedule_key()
        validate(c.nest)
        # log_prob is the sum of the policy's log-probabilities along the actions, and the
        # priority (the log-probability of the prefix it branched at) is at least that.
        nest, lp = start, 0.0
        for a in c.actions:
            lp += policy.log_probs(nest)[ACTIONS.index(a)]
            nest = apply(nest, a)
        assert np.isclose(c.log_prob, lp) and c.priority >= c.log_prob - 1e-9


@needs_policy
def test_priority_is_the_probability_of_the_branching_prefix(policy):
    """Each later rollout's priority is the log-probability of one of its own prefixes, and no
    rollout is more probable there than the best way to leave the greedy path."""
    start = Nest.untiled(matmul(96, 112, 128))
    cands = policy.candidates(start, 6)
    nest, lp, best_deviation = start, 0.0, -np.inf
    for a in cands[0].actions:
        logp = policy.log_probs(nest)
        best_deviation = max(best_deviation, lp + np.delete(logp, ACTIONS.index(a)).max())
        lp += logp[ACTIONS.index(a)]
        nest = apply(nest, a)
    for c in cands[1:]:
        nest, prefix_lps, lp = start, [], 0.0
        for a in c.actions:
            lp += policy.log_probs(nest)[ACTIONS.index(a)]
            prefix_lps.append(lp)
            nest = apply(nest, a)
        assert np.isclose(prefix_lps, c.priority).any() and c.priority <= best_deviation + 1e-9


@needs_policy
def test_best_candidate_is_the_fastest_measured(policy, backend):
    start = Nest.untiled(matmul(64, 80, 96))
    nest, actions, rank = best_candidate(start, policy, backend, 6)
    cands = policy.candidates(start, 6)
    gs = backend.gflops_many([c.nest for c in cands])  # cache hits: the same numbers it compared
    assert backend.gflops(nest) == max(gs) and nest.schedule_key() == cands[rank].nest.schedule_key()
    assert actions == cands[rank].actions
    res = tune(64, 80, 96, policy, backend, candidates=6)
    assert res["gflops"] == max(gs) >= gs[0] and res["candidates"] == 6 and res["candidate_rank"] == rank


def test_batched_compilation_uses_fewer_clang_runs(tmp_path):
    b = Backend(ResultCache(tmp_path / "c.sqlite"), tmp_path / "so", min_seconds=0.0, max_batch=4)
    start = Nest.untiled(matmul(24, 40, 20))
    seqs = [["split_4"], ["split_8"], ["swap_down"], ["down", "split_4"], ["down", "split_8"],
            ["down", "swap_down"], ["down", "down", "split_4"]]
    nests = [apply_all(start, s) for s in seqs]
    assert len({n.schedule_key() for n in nests}) == 7
    res = b.measure_many(nests)
    assert all(r["ok"] for r in res)  # every kernel of the batch checked against numpy
    assert b.compiles == 2 and b.measurements == 7  # 2 batches (the 2 compile threads): 4 + 3
    b.close()


def test_batches_split_evenly(tmp_path):
    b = Backend(ResultCache(tmp_path / "c.sqlite"), tmp_path / "so", max_batch=8)
    assert [len(x) for x in b.batches(list(range(1)))] == [1]
    assert [len(x) for x in b.batches(list(range(5)))] == [2, 3]
    assert [len(x) for x in b.batches(list(range(16)))] == [8, 8]
    assert [len(x) for x in b.batches(list(range(20)))] == [7, 6, 7]
    assert sum(b.batches(list(range(20))), []) == list(range(20))
    b.close()
