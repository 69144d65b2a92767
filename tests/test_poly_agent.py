"""Pearl's agent (llmopt.poly.agent): the state graph, the env's mask and reward, a PPO update,
pre-training, checkpoints and the greedy policy, on small benchmark programs with 1 timed run."""

from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest
import torch
from torch_geometric.data import Batch

import llmopt.poly.agent.train as agent_train
from llmopt.errors import UsageError
from llmopt.harness.cache import ResultCache
from llmopt.poly.actions import ACTIONS, NEXT
from llmopt.poly.agent.env import PearlEnv
from llmopt.poly.agent.model import ActorCritic
from llmopt.poly.agent.policy import AgentPolicy
from llmopt.poly.agent.ppo import PPOConfig, collect, update, value_of
from llmopt.poly.agent.pretrain import pretrain
from llmopt.poly.agent.state import (
    COMP_FOCUS,
    COMP_WORK,
    EDGE_FEATURES,
    LOOP_COLUMNS,
    NODE_FEATURES,
    graph,
    instances,
    squash,
    work,
)
from llmopt.poly.agent.train import TrainConfig, save_checkpoint, train
from llmopt.poly.agent.walk import Position, advance, start
from llmopt.poly.benchmarks import benchmark
from llmopt.poly.costmodel.model import CostModel, ModelConfig, load_model, predict, save_model
from llmopt.poly.legality import check
from llmopt.poly.measure import Measurer
from llmopt.poly.schedule import Parallel, Reversal, Schedule, Skew, Tile, Unroll

torch.set_num_threads(1)  # two threads on a loaded 2-core machine spin-wait each other


@pytest.fixture(scope="module")
def measurer(tmp_path_factory):
    m = Measurer(ResultCache(tmp_path_factory.mktemp("agent") / "cache.sqlite"), repeats=1, timeout=60)
    yield m
    m.close()


def loops(g):
    return g.x[g.node_type == 0]


def test_gemm_graph_has_its_loops_computations_and_buffers():
    g = graph(benchmark("gemm", small=True), start())  # for i, j { S0; for k { S1 } }, tensors A, B, C
    assert g.node_type.tolist() == [0, 0, 0, 1, 1, 2, 2, 2]
    assert g.x.shape == (8, NODE_FEATURES) and g.edge_attr.shape == (20, EDGE_FEATURES)
    # nesting 2 + contains 2 + writes 2 + distinct reads 4, each in both directions
    assert g.edge_index.shape == (2, 20)
    extents = loops(g)[:, LOOP_COLUMNS["extent"]]
    assert torch.allclose(extents, torch.tensor([squash(18), squash(20), squash(22)]))
    assert loops(g)[:, LOOP_COLUMNS["focus"]].tolist() == [1, 1, 0]  # branch 0 is S0, inside i and j
    assert g.x[g.node_type == 1][:, COMP_FOCUS].tolist() == [1, 0]
    g1 = graph(benchmark("gemm", small=True), Position(Schedule(), 1))
    assert loops(g1)[:, LOOP_COLUMNS["focus"]].tolist() == [1, 1, 1]


def test_work_features_tell_the_dominant_statement():
    gemm = benchmark("gemm", small=True)  # S0 (C *= beta) over i < 18, j < 20; S1 also over k < 22
    assert [instances(gemm, s) for s in gemm.statements] == [360, 7920]
    shares = {name: share for name, (_, share) in work(gemm).items()}
    assert sum(shares.values()) == pytest.approx(1.0) and shares["S1"] > 0.9
    g = graph(gemm, start())
    comps = g.x[g.node_type == 1]
    assert comps[:, COMP_WORK].tolist() == pytest.approx([squash(360), squash(7920)])
    assert comps[:, COMP_WORK + 1].tolist() == pytest.approx([shares["S0"], shares["S1"]])
    # i and j hold both statements, k only S1
    assert loops(g)[:, LOOP_COLUMNS["work_share"]].tolist() == pytest.approx([1.0, 1.0, shares["S1"]])
    assert loops(g)[:, LOOP_COLUMNS["instances"]].tolist() == pytest.approx([squash(8280)] * 2 + [squash(7920)])
    syrk = benchmark("syrk", small=True)  # S0 over 0 <= j <= i < 20: 210 points, its bounding box 400
    assert instances(syrk, syrk.statements[0]) == 400


def test_loop_features_record_the_transformations():
    gemm = benchmark("gemm", small=True)
    g = graph(gemm, Position(Schedule((Parallel("S1", 0), Tile("S1", 0, (4, 8)), Unroll("S1", 0, 4))), 1))
    col = LOOP_COLUMNS
    assert loops(g)[:, col["tiled"]].tolist() == [1, 1, 0, 0, 0]
    assert loops(g)[:, col["point"]].tolist() == [0, 0, 1, 1, 0]
    assert loops(g)[:, col["parallel"]].tolist() == [1, 0, 0, 0, 0]
    assert loops(g)[4, col["unroll"]] == pytest.approx(math.log2(4) / 5)
    seidel = benchmark("seidel2d", small=True)
    g = graph(seidel, Position(Schedule((Skew("S0", 1), Reversal("S0", 0))), 0))
    assert loops(g)[:, col["reversed"]].tolist() == [1, 0, 0]
    assert loops(g)[:, col["skewed"]].tolist() == [0, 0, 1]


def test_walk_next_moves_on_and_ends_after_the_last_branch():
    gemm = benchmark("gemm", small=True)
    pos, done = advance(gemm, start(), NEXT)
    assert (pos.branch, done) == (1, False)
    assert advance(gemm, pos, NEXT)[1]


def test_env_masks_illegal_actions_and_rewards_log4_speedup(measurer):
    env = PearlEnv([benchmark("seidel2d", small=True)], measurer, max_steps=4)
    obs, info = env.reset(seed=0)
    mask = info["action_mask"]
    assert not any(mask[a] for a, act in enumerate(ACTIONS) if act.kind in ("interchange", "parallelization"))
    assert mask[NEXT] and obs.x.shape[1] == NODE_FEATURES
    _, reward, done, _, info = env.step(0)  # I(0,1): masked -> penalty, schedule unchanged
    assert reward == pytest.approx(math.log(0.9, 4)) and not done and info["schedule"] == Schedule()
    legal = int(np.flatnonzero(info["action_mask"][:NEXT])[0])
    _, reward, done, _, info = env.step(legal)
    assert check(env.program, info["schedule"])[0] and len(info["schedule"].transforms) == 1
    assert reward == pytest.approx(math.log(env.speedup, 4))
    assert env.step(NEXT)[2], "Next on the only branch ends the episode"


def test_env_skips_a_drawn_program_that_cannot_run_and_refuses_a_chosen_one(tmp_path):
    from llmopt.poly.program import ProgramError

    # seidel2d at full size runs ~0.2 s a kernel: it cannot finish inside a 0.2 s timeout, the small one can.
    slow, fine = benchmark("seidel2d"), benchmark("heat2d", small=True)
    m = Measurer(ResultCache(tmp_path / "c.sqlite"), repeats=1, timeout=0.2)
    draws = iter([slow, fine])
    env = PearlEnv(lambda rng: next(draws), m)
    env.reset(seed=0)
    assert env.program is fine
    with pytest.raises(ProgramError, match="cannot be measured"):
        env.reset(options={"program": slow})
    m.close()


def test_ppo_update_changes_the_parameters(measurer):
    torch.manual_seed(0)
    model = ActorCritic(hidden=16, heads=2)
    env = PearlEnv([benchmark("gemm", small=True)], measurer, max_steps=3)
    obs, info = env.reset(seed=0)
    rollout, obs, _ = collect(env, model, 6, obs, info)
    before = [p.detach().clone() for p in model.parameters()]
    cfg = PPOConfig(batch_size=6, minibatch=3, epochs=2, lr=1e-3)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    stats = update(model, opt, rollout, value_of(model, obs), cfg, 0.5, np.random.default_rng(0))
    assert all(math.isfinite(v) for v in stats.values())
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))


def test_kl_to_the_reference_policy_pulls_a_fine_tune_back_to_it(measurer):
    """`kl_ref`: with the advantages of a rollout whose rewards all tie (no policy gradient to follow), the KL
    term alone moves a perturbed policy back towards the one it started from; off, it is not computed."""
    torch.manual_seed(0)
    reference = ActorCritic(hidden=16, heads=2).eval().requires_grad_(False)
    model = ActorCritic(hidden=16, heads=2)
    model.load_state_dict(reference.state_dict())
    with torch.no_grad():
        for p in model.policy.parameters():
            p.add_(0.3 * torch.randn_like(p))
    env = PearlEnv([benchmark("gemm", small=True)], measurer, max_steps=3)
    obs, info = env.reset(seed=0)
    rollout, obs, _ = collect(env, model, 6, obs, info)
    for step in rollout.steps:
        step.reward, step.value, step.next_value = 0.0, 0.0, 0.0
    cfg = PPOConfig(batch_size=6, minibatch=6, epochs=1, lr=3e-3, value_coef=0.0, kl_ref=1.0)
    opt = torch.optim.Adam(model.policy.parameters(), lr=cfg.lr)
    first = update(model, opt, rollout, 0.0, cfg, 0.0, np.random.default_rng(0), reference)["kl_ref"]
    for _ in range(20):
        last = update(model, opt, rollout, 0.0, cfg, 0.0, np.random.default_rng(0), reference)["kl_ref"]
    assert first > 0.01 and last < 0.5 * first
    off = update(model, opt, rollout, 0.0, PPOConfig(batch_size=6, minibatch=6, epochs=1), 0.0,
                 np.random.default_rng(0), reference)
    assert off["kl_ref"] == 0.0


def test_pretraining_fits_execution_times():
    torch.manual_seed(0)
    samples = [{"hash": p.hash(), "program": p.to_dict(), "schedule": [], "seconds": s}
               for p, s in [(benchmark(n, small=True), t) for n, t in
                            [("gemm", 1e-5), ("seidel2d", 1e-4), ("heat2d", 3e-5), ("mvt", 2e-6)]]]
    model = ActorCritic(hidden=16, heads=2)
    policy_before = [p.detach().clone() for p in model.policy.parameters()]
    losses = pretrain(model, samples, epochs=30, lr=3e-3, log=None)
    assert losses[-1] < 0.5 * losses[0]
    assert all(torch.equal(a, b) for a, b in zip(policy_before, model.policy.parameters(), strict=True))


def test_pretraining_on_speedups_writes_weights_that_imitation_starts_from(measurer, tmp_path, capsys):
    from llmopt.poly.agent import pretrain as pretrain_module
    from llmopt.poly.agent.imitate import ImitateConfig, imitate
    from llmopt.poly.costmodel.data import load_rows

    data = _pretrain_folder(tmp_path / "data")  # 2 programs; Parallel(S0, 0) runs 2x (made-up times)
    rows = load_rows(data)
    torch.manual_seed(0)
    model = ActorCritic(hidden=16, heads=2)
    losses = pretrain_module.pretrain(model, rows, epochs=40, lr=3e-3, log=None, target="speedup", held_out=rows)
    assert losses[-1] < 0.25 * losses[0]  # log4 speedups 0 and 0.5: fitted, not standardized away
    with pytest.raises(ValueError, match="target"):
        pretrain_module.pretrain(model, rows, epochs=1, target="seconds")

    weights = tmp_path / "pre" / "pretrained.pt"
    policy = tmp_path / "policy.pt"
    save_checkpoint(policy, ActorCritic(), torch.optim.Adam(ActorCritic().parameters()), 0, TrainConfig(),
                    np.random.default_rng(0))
    assert pretrain_module.main([str(data), "--out", str(weights), "--epochs", "2", "--validation", "0",
                                 "--critic-of", str(policy), "--policy-out", str(tmp_path / "guided.pt")]) == 0
    assert AgentPolicy(tmp_path / "guided.pt").critic is not None
    saved = torch.load(weights)
    assert saved and all(k.startswith(pretrain_module.PRETRAINED) for k in saved)
    assert "held out" not in capsys.readouterr().out  # nothing held out with --validation 0
    ckpt = imitate(rows, tmp_path / "run", ImitateConfig(epochs=1, lr=0.0, validation=0.0, init=str(weights)), log=None)
    started = torch.load(ckpt, weights_only=False)["model"]
    assert all(torch.equal(started[k], v) for k, v in saved.items())  # lr 0: still the pre-trained weights


def test_checkpoint_round_trips_and_policy_schedule_is_legal_and_correct(measurer, tmp_path):
    torch.manual_seed(1)
    model = ActorCritic(hidden=16, heads=2)
    opt = torch.optim.Adam(model.parameters())
    save_checkpoint(tmp_path / "ckpt.pt", model, opt, 0, TrainConfig(), np.random.default_rng(0))
    policy = AgentPolicy(tmp_path / "ckpt.pt", max_steps=6)
    prog = benchmark("jacobi2d", small=True)
    batch = Batch.from_data_list([graph(prog, start())])
    assert torch.allclose(policy.models[0](batch)[0], model(batch)[0])
    sched = policy.schedule(prog, measurer)
    assert check(prog, sched)[0]
    assert measurer.measure(prog, sched)["ok"], "the emitted C matches the reference"
    # The lazy greedy walk checks legality best-first; it must take the full mask's argmax every step.
    pos = start()
    for _ in range(policy.max_steps):
        pos, done = advance(prog, pos, int(np.argmax(policy.log_probs(prog, pos, measurer))))
        if done:
            break
    assert pos.schedule == sched
    cands = policy.candidates(prog, measurer, k=3)
    assert 1 <= len(cands) <= 3 and all(check(prog, c.schedule)[0] for c in cands)
    assert [c.log_prob for c in cands] == sorted((c.log_prob for c in cands), reverse=True)


def test_training_writes_a_log_and_resumes(measurer, tmp_path):
    cfg = TrainConfig(ppo=PPOConfig(batch_size=4, minibatch=4, epochs=1), updates=1, max_steps=3, hidden=16, heads=2)
    progs = [benchmark("gemm", small=True)]
    train(tmp_path, cfg, measurer, programs=progs, log=lambda *_: None)
    cfg.updates = 2
    train(tmp_path, cfg, measurer, programs=progs, log=lambda *_: None)
    rows = list(csv.DictReader((tmp_path / "log.csv").open()))
    assert [r["update"] for r in rows] == ["0", "1"]


@pytest.fixture
def cost_model_file(tmp_path):
    """A tiny untrained cost model whose predictions differ between schedules (its head is not zero)."""
    torch.manual_seed(0)
    model = CostModel(ModelConfig.tiny())
    torch.nn.init.normal_(model.head[-1].weight, std=1.0)
    save_model(model, tmp_path / "costmodel.pt")
    return tmp_path / "costmodel.pt"


def test_costmodel_reward_returns_log4_of_the_predicted_final_speedup(measurer, cost_model_file):
    prog = benchmark("gemm", small=True)
    env = PearlEnv([prog], measurer, max_steps=10, reward="costmodel", cost_model=cost_model_file)
    compiles = measurer.compiles
    _, info = env.reset(seed=0)
    rng, done, rewards = np.random.default_rng(0), False, []
    while not done:  # two random legal transformations per branch, then Next
        legal = np.flatnonzero(info["action_mask"][:NEXT])
        action = NEXT if env.steps % 3 == 2 or not len(legal) else int(rng.choice(legal))
        _, reward, done, truncated, info = env.step(action)
        rewards.append(reward)
        assert not truncated
    final = info["schedule"]
    expected = predict(load_model(cost_model_file)[0], prog, final)
    assert len(final.transforms) >= 2 and any(abs(r) > 1e-6 for r in rewards)
    assert env.speedup == pytest.approx(expected)
    assert env.episode_return == pytest.approx(math.log(expected, 4))
    assert measurer.compiles == compiles, "a cost-model reward compiles nothing"


def _pretrain_folder(path):
    """A cost-model data folder (the collector's layout) with two programs, two schedules each."""
    rows = [{"seed": k, "hash": p.hash(), "program": p.to_dict(), "schedule": sched, "seconds": t,
             "baseline_seconds": 1e-4, "speedup": 1e-4 / t}
            for k, p in enumerate([benchmark("gemm", small=True), benchmark("mvt", small=True)])
            for sched, t in [([], 1e-4), ([Parallel("S0", 0).to_dict()], 5e-5)]]
    (path / "programs" / "000").mkdir(parents=True)
    (path / "programs" / "000" / "0000000.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_train_cli_with_costmodel_reward_and_pretraining_data(measurer, cost_model_file, tmp_path, monkeypatch,
                                                               capsys):
    monkeypatch.setattr(agent_train, "cheap_measurer", lambda **_: measurer)  # legality only, on the test cache
    data, run = _pretrain_folder(tmp_path / "data"), tmp_path / "run"
    compiles = measurer.compiles
    args = [str(run), "--small", "--updates", "1", "--batch-size", "4", "--minibatch", "4", "--max-steps", "3",
            "--pretrain", "1", "--pretrain-data", str(data), "--pretrain-epochs", "2", "--seed", "1"]
    assert agent_train.main(args + ["--reward", "costmodel", "--cost-model", str(cost_model_file)]) == 0
    assert "pre-training data: 2 rows of 1 programs" in capsys.readouterr().out
    assert (run / "pretrained.pt").exists() and len(list(csv.DictReader((run / "log.csv").open()))) == 1
    cfg = json.loads((run / "config.json").read_text())
    assert (cfg["reward"], cfg["cost_model"]) == ("costmodel", str(cost_model_file.resolve()))
    assert cfg["pretrain_data"] == str(data) and measurer.compiles == compiles
    with pytest.raises(UsageError, match="started with reward costmodel"):
        agent_train.main(args + ["--updates", "2"])  # resuming with the measured reward mixes two curves


def test_train_cli_starts_ppo_from_a_policy_file(measurer, cost_model_file, tmp_path, monkeypatch):
    """`--init POLICY`: PPO from a trained policy's weights (the shipped agent's file layout), recorded in the
    run's config with the entropy bonus it starts from; one update moves them by Adam's few small steps, nowhere
    near another initialization."""
    monkeypatch.setattr(agent_train, "cheap_measurer", lambda **_: measurer)
    policy = ActorCritic(hidden=TrainConfig.hidden, heads=TrainConfig.heads)
    with torch.no_grad():
        for p in policy.parameters():
            p.fill_(0.0123)
    torch.save({"model": policy.state_dict(), "model_config": policy.config}, tmp_path / "policy.pt")
    run = tmp_path / "run"
    args = [str(run), "--small", "--updates", "1", "--batch-size", "4", "--minibatch", "4", "--max-steps", "3",
            "--reward", "costmodel", "--cost-model", str(cost_model_file), "--init", str(tmp_path / "policy.pt"),
            "--entropy-start", "0.01"]
    assert agent_train.main(args) == 0
    trained = agent_train.load_checkpoint(run / "checkpoint.pt")["model"]
    assert max((v - 0.0123).abs().max().item() for v in trained.values() if v.is_floating_point()) < 0.05
    fresh = ActorCritic(hidden=TrainConfig.hidden, heads=TrainConfig.heads).state_dict()
    assert max((v - 0.0123).abs().max().item() for v in fresh.values() if v.is_floating_point()) > 0.05
    cfg = json.loads((run / "config.json").read_text())
    assert cfg["init"] == str(tmp_path / "policy.pt") and cfg["ppo"]["entropy_start"] == 0.01
    with pytest.raises(UsageError, match="choose one"):
        agent_train.main([str(tmp_path / "other"), "--init", str(tmp_path / "policy.pt"), "--pretrain", "1"])
    with pytest.raises(UsageError, match="needs --init"):
        agent_train.main([str(tmp_path / "kl"), "--small", "--kl-ref", "0.1"])
    # With --init, the reference is the policy file, frozen, also for a run that resumes.
    reference = agent_train.reference_policy(TrainConfig(init=str(tmp_path / "policy.pt"), ppo=PPOConfig(kl_ref=0.1)))
    assert all((v == 0.0123).all() for v in reference.state_dict().values() if v.is_floating_point())
    assert not any(p.requires_grad for p in reference.parameters())


def test_agent_search_measures_the_greedy_schedule_and_never_loses(measurer, tmp_path):
    from llmopt.poly.search import SEARCHES

    torch.manual_seed(1)
    model = ActorCritic(hidden=16, heads=2)
    save_checkpoint(tmp_path / "agent.pt", model, torch.optim.Adam(model.parameters()), 0, TrainConfig(),
                    np.random.default_rng(0))
    prog = benchmark("jacobi2d", small=True)
    res = SEARCHES["agent"](prog, measurer, policy_path=tmp_path / "agent.pt", branches=False)
    greedy = AgentPolicy(tmp_path / "agent.pt").schedule(prog, measurer)
    assert res.schedule in (greedy, Schedule()) and res.evaluations == (1 if greedy.transforms else 0)
    assert res.seconds <= res.baseline_seconds and check(prog, res.schedule)[0]
    assert 0 < res.measure_seconds <= res.search_seconds


def test_the_walk_keeps_the_schedule_at_each_branch_and_search_measures_them_all(measurer, tmp_path):
    """`walk`: the schedule as the greedy walk left each branch, each a prefix of the next, the last the
    final schedule; the agent's search measures every one, so a bad last branch cannot cost the others."""
    from llmopt.poly.search import SEARCHES

    prog = benchmark("fdtd-2d", small=True)  # four statements, four branches
    walks = []
    for seed in range(12):  # untrained policies: some seeds change more than one branch
        torch.manual_seed(seed)
        model = ActorCritic(hidden=16, heads=2)
        save_checkpoint(tmp_path / f"agent{seed}.pt", model, torch.optim.Adam(model.parameters()), 0, TrainConfig(),
                        np.random.default_rng(0))
        policy = AgentPolicy(tmp_path / f"agent{seed}.pt")
        walk = policy.walk(prog, measurer)
        assert walk[-1] == policy.schedule(prog, measurer)
        for before, after in zip(walk, walk[1:], strict=False):
            assert after.transforms[: len(before.transforms)] == before.transforms and after != before
        walks.append((seed, walk))
    seed, walk = max(walks, key=lambda w: len(w[1]))
    assert len(walk) >= 2
    res = SEARCHES["agent"](prog, measurer, policy_path=tmp_path / f"agent{seed}.pt")
    assert res.evaluations == len(walk) and res.schedule in (*walk, Schedule())
    assert res.seconds <= res.baseline_seconds and check(prog, res.schedule)[0]


def test_walk_actions_replay_every_random_schedule(measurer):
    from llmopt.poly.agent.walk import walk_actions
    from llmopt.poly.costmodel.data import program_schedules

    for name in ("gemm", "heat2d", "2mm"):
        prog = benchmark(name, small=True)
        for sched in program_schedules(prog, measurer.legality(prog), 8, seed=3):
            actions, pos, done = walk_actions(prog, sched), start(), False
            for a in actions:
                pos, done = advance(prog, pos, a)
            assert done and pos.schedule == sched and actions[-1] == NEXT
    gemm = benchmark("gemm", small=True)
    backwards = Schedule((Unroll("S1", factor=2), Unroll("S0", factor=2)))  # branch 1, then back to branch 0
    assert walk_actions(gemm, Schedule(backwards.transforms[1:])) is not None
    assert walk_actions(gemm, backwards) is None


def test_imitation_learns_the_best_walk_and_ships_as_a_policy(measurer, tmp_path):
    """Weighted cloning on one program's walks (speedups made up here: the mechanics, not a result):
    the greedy policy walks the fastest schedule, and the value head learns its log4 speedup."""
    from llmopt.poly.agent.imitate import ImitateConfig, imitate, walk_weights
    from llmopt.poly.costmodel.data import program_schedules

    assert walk_weights([1.0, 4.0], 0.1).argmax() == 1 and walk_weights([1.0, 1.0], 0.1).tolist() == [0.5, 0.5]
    prog = benchmark("mvt", small=True)
    scheds = program_schedules(prog, measurer.legality(prog), 5, seed=1)
    best = scheds[3]
    rows = [{"hash": prog.hash(), "program": prog.to_dict(), "schedule": s.to_list(),
             "speedup": 3.0 if s == best else 1.0} for s in scheds]
    cfg = ImitateConfig(epochs=200, validation=0.0)
    ckpt = imitate(rows, tmp_path / "run", cfg, log=None)
    policy = AgentPolicy(ckpt)
    assert policy.schedule(prog, measurer) == best
    _, value = policy.models[0](Batch.from_data_list([graph(prog, start())]))
    assert abs(float(value) - math.log(3.0, 4)) < 0.25
    assert len(list(csv.DictReader((tmp_path / "run" / "log.csv").open()))) == 200


def test_a_critic_guides_the_walk_and_travels_in_the_policy_file(measurer, tmp_path):
    """The policy proposes, the critic (a value head regressing log4 speedups) decides: with a critic
    that rates every transformation 4x slower the walk stays at the original program, with one that
    rates the policy's best walk 4x faster it walks it.  (Speedups made up: the mechanics.)"""
    from llmopt.poly.agent.imitate import ImitateConfig, imitate
    from llmopt.poly.agent.policy import attach_critic
    from llmopt.poly.costmodel.data import program_schedules

    prog = benchmark("mvt", small=True)
    scheds = program_schedules(prog, measurer.legality(prog), 5, seed=1)
    best = scheds[3]
    rows = [{"hash": prog.hash(), "program": prog.to_dict(), "schedule": s.to_list(),
             "speedup": 3.0 if s == best else 1.0} for s in scheds]
    policy_file = imitate(rows, tmp_path / "run", ImitateConfig(epochs=200, validation=0.0), log=None)

    def guided_by(speedup_of_best: float, speedup_of_rest: float) -> Schedule:
        torch.manual_seed(0)
        critic = ActorCritic()
        samples = [dict(r, speedup=1.0 if not r["schedule"] else speedup_of_best if r["schedule"] == best.to_list()
                        else speedup_of_rest) for r in rows]
        # the walk's prefixes too, halfway in log: each step of the best walk is a clear gain, not a near tie
        samples += [dict(samples[0], schedule=best.to_list()[:k], speedup=speedup_of_best ** 0.5)
                    for k in range(1, len(best.transforms))]
        # 120 epochs: the best walk's last step (reversing a tile loop) changes only that loop's sign and tag
        pretrain(model=critic, samples=samples, epochs=120, lr=3e-3, log=None, target="speedup")
        weights = tmp_path / f"critic-{speedup_of_best}.pt"
        torch.save({k: v for k, v in critic.state_dict().items() if not k.startswith("policy.")}, weights)
        policy = AgentPolicy(attach_critic(policy_file, weights, tmp_path / f"guided-{speedup_of_best}.pt"))
        assert policy.critic is not None
        # one proposal a step: the critic decides move or "Next" on the policy's walk; among several
        # unseen proposals its made-up ratings here would be near ties
        steps = policy.guided_steps(prog, measurer.legality(prog), k=1)
        if speedup_of_best < 1:  # rated slower than stopping everywhere: the full walk (4 proposals) stays put too
            assert policy.schedule(prog, measurer) == Schedule()
        return advance(prog, *steps[-1])[0].schedule

    assert AgentPolicy(policy_file).schedule(prog, measurer) == best  # the policy alone walks its best
    assert guided_by(0.25, 0.25) == Schedule()
    assert guided_by(4.0, 0.25) == best
    with pytest.raises(UsageError, match="no value head"):
        torch.save({"policy.0.weight": torch.zeros(1)}, tmp_path / "bad.pt")
        attach_critic(policy_file, tmp_path / "bad.pt", tmp_path / "never.pt")


def test_a_policy_of_other_state_features_is_refused_with_the_way_out(tmp_path):
    from llmopt.poly.agent.policy import PolicyError

    model = ActorCritic(hidden=8, heads=1)
    state = {k: (v[:, :-2] if k == "backbone.conv1.lin_l.weight" else v) for k, v in model.state_dict().items()}
    torch.save({"model": state, "model_config": model.config}, tmp_path / "old.pt")
    with pytest.raises(PolicyError, match="state graph.*retrain"):
        AgentPolicy(tmp_path / "old.pt")


def test_an_ensemble_policy_follows_its_members_mean_log_probabilities(measurer, tmp_path):
    from llmopt.poly.agent.imitate import ImitateConfig, ensemble
    from llmopt.poly.costmodel.data import program_schedules

    prog = benchmark("mvt", small=True)
    scheds = program_schedules(prog, measurer.legality(prog), 4, seed=2)
    rows = [{"hash": prog.hash(), "program": prog.to_dict(), "schedule": s.to_list(), "speedup": 1.0 + k}
            for k, s in enumerate(scheds)]
    path = ensemble(rows, tmp_path / "ens", ImitateConfig(epochs=2, validation=0.0, hidden=16, heads=1), 2, log=None)
    assert (tmp_path / "ens" / "member-1" / "log.csv").exists()
    policy, one = AgentPolicy(path), AgentPolicy(tmp_path / "ens" / "member-0" / "checkpoint.pt")
    assert len(policy.models) == 2 and len(one.models) == 1
    batch = Batch.from_data_list([graph(prog, start())])
    with torch.no_grad():
        mean = torch.stack([torch.log_softmax(m(batch)[0], -1) for m in policy.models]).mean(0)
        assert torch.allclose(policy.logits(batch), mean)
        assert torch.allclose(policy.models[0](batch)[0], one.logits(batch))
    assert check(prog, policy.schedule(prog, measurer))[0]


def test_distillation_makes_one_network_that_walks_like_the_ensemble(measurer, tmp_path):
    """A two-member ensemble distilled into one network: the student file holds one model, and its
    greedy walks take the teacher's actions on the programs it was distilled on."""
    from llmopt.poly.agent.distill import DistillConfig, distill, fresh_programs, walk_agreement
    from llmopt.poly.agent.imitate import ImitateConfig, ensemble
    from llmopt.poly.costmodel.data import program_schedules

    rows = []
    for name in ("mvt", "gemm"):
        prog = benchmark(name, small=True)
        scheds = program_schedules(prog, measurer.legality(prog), 4, seed=2)
        rows += [{"hash": prog.hash(), "program": prog.to_dict(), "schedule": s.to_list(), "speedup": 1.0 + k}
                 for k, s in enumerate(scheds)]
    teacher_path = ensemble(rows, tmp_path / "ens", ImitateConfig(epochs=20, validation=0.0, hidden=16, heads=1), 2,
                            log=None)
    cfg = DistillConfig(epochs=60, validation=0.0, fresh=0, lr=3e-3, init_member=-1)  # a fresh network: it must learn
    student_path = distill(teacher_path, rows, tmp_path / "student", cfg, log=None)
    student, teacher = AgentPolicy(student_path), AgentPolicy(teacher_path)
    assert len(student.models) == 1 and len(teacher.models) == 2
    progs = [benchmark(name, small=True) for name in ("mvt", "gemm")]
    assert walk_agreement(student, teacher, progs) == 1.0
    assert student.schedule(progs[0], measurer) == teacher.schedule(progs[0], measurer)
    assert len(list(csv.DictReader((tmp_path / "student" / "log.csv").open()))) == 60
    fresh = fresh_programs(2, 300_000)
    assert len({p.hash() for p in fresh}) == 2


def test_fresh_programs_like_a_data_folder_are_drawn_with_its_limits(tmp_path):
    """`fresh_like FOLDER:N`: N programs drawn as FOLDER's config.json says (here: init statements
    before every innermost reduction), seeds after the default fresh ones; a bad spec is a usage error."""
    import json

    from llmopt.errors import UsageError
    from llmopt.poly.agent.distill import fresh_like
    from llmopt.poly.generator import random_program

    folder = tmp_path / "gemm-like"
    folder.mkdir()
    limits = {"p_init": 1.0, "p_reduction": 1.0, "computations": [1, 1], "depth": [3, 3]}
    (folder / "config.json").write_text(json.dumps({"small": True, "iterations": [2e3, 2e4], "limits": limits}))
    progs = fresh_like(f"{folder}:8", 500)
    assert [p.name for p in progs] == [f"random-{s}" for s in range(500, 508)]
    assert progs[0].to_dict() == random_program(500, True, iterations=(2e3, 2e4), p_init=1.0, p_reduction=1.0,
                                                computations=(1, 1), depth=(3, 3)).to_dict()
    assert sum(len(p.statements) == 2 for p in progs) >= 2  # init + reduction where the reduction drops k
    with pytest.raises(UsageError, match="FOLDER:N"):
        fresh_like(str(folder), 500)


def test_the_validation_split_keeps_each_program_on_its_side_as_the_data_grows():
    from llmopt.poly.agent.imitate import split

    programs = [f"p{k}" for k in range(300)]
    train, val = split(programs[:200], 0.1, seed=0)
    train2, val2 = split(programs, 0.1, seed=0)
    assert 5 < len(val) < 40 and set(val) <= set(val2) and set(train) <= set(train2)
    assert split(programs[:200], 0.1, seed=1)[1] != val
    assert split(["a", "b"], 0.1, 0)[1] and split(["a"], 0.1, 0) == (["a"], []) and split(["a", "b"], 0.0, 0)[1] == []


def test_tree_targets_compare_the_actions_measured_at_each_position(measurer, tmp_path):
    """Rows as a greedy search on gemm would leave them (speedups made up: the mechanics): each
    position teaches the softmax of its measured actions' best speedups, and a policy trained on
    them walks the search's best schedule."""
    from llmopt.poly.agent.imitate import ImitateConfig, imitate, tree_demonstrations

    gemm = benchmark("gemm", small=True)
    p0, u2 = (next(a for a in range(len(ACTIONS)) if ACTIONS[a].name == n) for n in ("P(0)", "U(2)"))
    best = Schedule((Parallel("S1", 0),))
    measured = {(): 1.0, (Parallel("S0", 0),): 0.9, (Unroll("S1", 0, 2),): 1.1, best.transforms: 2.0,
                (Parallel("S1", 0), Unroll("S1", 0, 2)): 1.8}
    rows = [{"hash": gemm.hash(), "program": gemm.to_dict(), "schedule": Schedule(t).to_list(), "speedup": v}
            for t, v in measured.items()]
    steps = tree_demonstrations(rows, temperature=0.1)[gemm.hash()]
    by_position: dict[int, list] = {}
    for step in steps:
        by_position.setdefault(id(step.graph), []).append(step)
    assert len(by_position) == 3  # the start, after "Next", after "Next, P(0)"; [P(0)] had one action
    best_actions = sorted(next(s.action for s in group if s.best) for group in by_position.values())
    assert best_actions == sorted([NEXT, p0, NEXT])  # start: Next leads to 2.0; S1: P(0); then stop
    for group in by_position.values():
        assert sum(s.weight for s in group) == pytest.approx(1.0, abs=0.1)
        assert all(s.value == pytest.approx(math.log(2.0, 4)) for s in group)
    assert {s.action for s in steps} == {NEXT, p0, u2}
    ckpt = imitate(rows, tmp_path / "tree", ImitateConfig(epochs=400, validation=0.0, targets="tree"), log=None)
    assert AgentPolicy(ckpt).schedule(gemm, measurer) == best
    with pytest.raises(UsageError, match="targets"):
        imitate(rows, tmp_path / "bad", ImitateConfig(epochs=1, targets="best"), log=None)
