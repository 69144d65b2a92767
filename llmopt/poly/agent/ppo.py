"""PPO for the graph policy: rollouts, GAE and the clipped update (paper 003, Table 4.2, Alg. 1).

Written out in torch rather than through stable-baselines3, whose buffers want fixed-shape array
observations: here every observation is a graph of its own size, batched by torch_geometric.

Table 4.2's values are the `PPOConfig` defaults; `llmopt.poly.agent.train` scales only the
amount of experience (`batch_size` steps per update, number of updates) for a CPU budget.
`max_grad_norm` is not in the table: it is the usual PPO safeguard and only clips rare spikes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
from torch_geometric.data import Batch, Data

from llmopt.poly.agent.model import ActorCritic, distribution


@dataclass
class PPOConfig:
    """Table 4.2 of paper 003 (the entropy coefficient decays linearly over the updates)."""

    epochs: int = 4
    clip: float = 0.3
    batch_size: int = 512  # environment steps per update
    minibatch: int = 64
    lr: float = 1e-4
    weight_decay: float = 1e-4
    gamma: float = 0.99
    lam: float = 0.95
    value_coef: float = 2.0
    entropy_start: float = 0.5
    entropy_end: float = 0.0
    max_grad_norm: float = 0.5
    # Not in the table: + this x KL(reference || policy) on the rollout's states, the reference being the frozen
    # policy a fine-tune started from (`train --init`): what it knew (gemm's distributing interchange) stays
    # unless the reward pays for leaving it. 0: off.
    kl_ref: float = 0.0


@dataclass
class Step:
    """One transition; `ended`: it closed an episode, whose next state is worth `next_value`
    (V of the last observation when the episode was truncated, 0 when it terminated)."""

    graph: Data
    mask: np.ndarray
    action: int
    log_prob: float
    value: float
    reward: float
    ended: bool = False
    next_value: float = 0.0


@dataclass
class Rollout:
    """A batch of transitions plus what the finished episodes scored."""

    steps: list[Step] = field(default_factory=list)
    returns: list[float] = field(default_factory=list)  # sum of rewards per finished episode
    speedups: list[float] = field(default_factory=list)  # final speedup per finished episode


@torch.no_grad()
def act(model: ActorCritic, obs: Data, mask: np.ndarray, greedy: bool = False) -> tuple[int, float, float]:
    """(action, its log-probability, V(obs)) from the masked policy."""
    logits, value = model(Batch.from_data_list([obs]))
    dist = distribution(logits, torch.as_tensor(mask)[None])
    action = dist.probs.argmax(-1) if greedy else dist.sample()
    return int(action), float(dist.log_prob(action)), float(value)


@torch.no_grad()
def value_of(model: ActorCritic, obs: Data) -> float:
    return float(model(Batch.from_data_list([obs]))[1])


def collect(env, model: ActorCritic, n_steps: int, obs: Data, info: dict, log=None) -> tuple[Rollout, Data, dict]:
    """Run the policy for `n_steps` env steps from (obs, info); episodes continue across calls.
    Returns the rollout and the (obs, info) to continue from."""
    out = Rollout()
    for _ in range(n_steps):
        action, logp, value = act(model, obs, info["action_mask"])
        new_obs, reward, terminated, truncated, new_info = env.step(action)
        step = Step(obs, info["action_mask"], action, logp, value, float(reward))
        out.steps.append(step)
        if terminated or truncated:
            step.ended = True
            step.next_value = value_of(model, new_obs) if truncated else 0.0
            out.returns.append(env.episode_return)
            out.speedups.append(env.speedup)
            if log:
                log(f"episode {env.program.name}: return {env.episode_return:+.3f}, speedup {env.speedup:.2f}x")
            new_obs, new_info = env.reset()
        obs, info = new_obs, new_info
    return out, obs, info


def gae(steps: list[Step], bootstrap: float, gamma: float, lam: float) -> tuple[np.ndarray, np.ndarray]:
    """Advantages and returns [T] by GAE(gamma, lambda); `bootstrap`: V of the state after the
    last step, used when that step's episode goes on."""
    adv = np.zeros(len(steps), np.float32)
    running = 0.0
    for t in reversed(range(len(steps))):
        if steps[t].ended:
            nxt, running = steps[t].next_value, 0.0
        else:
            nxt = steps[t + 1].value if t + 1 < len(steps) else bootstrap
        delta = steps[t].reward + gamma * nxt - steps[t].value
        running = delta + gamma * lam * running
        adv[t] = running
    returns = adv + np.array([s.value for s in steps], np.float32)
    return adv, returns


def _minibatch_loss(model: ActorCritic, steps: list[Step], adv: torch.Tensor, ret: torch.Tensor,
                    cfg: PPOConfig, entropy_coef: float, reference: ActorCritic | None = None
                    ) -> tuple[torch.Tensor, dict]:
    """L = -clip objective + c1 * value loss - c2 * entropy (Alg. 1 line 18, as a loss to minimize),
    + kl_ref * KL(reference || policy) when a reference policy is given."""
    batch = Batch.from_data_list([s.graph for s in steps])
    logits, values = model(batch)
    mask = torch.as_tensor(np.stack([s.mask for s in steps]))
    dist = distribution(logits, mask)
    actions = torch.tensor([s.action for s in steps])
    old = torch.tensor([s.log_prob for s in steps])
    logp = dist.log_prob(actions)
    ratio = torch.exp(logp - old)
    policy_loss = -torch.min(ratio * adv, torch.clamp(ratio, 1 - cfg.clip, 1 + cfg.clip) * adv).mean()
    value_loss = torch.nn.functional.mse_loss(values, ret)
    entropy = dist.entropy().mean()
    loss = policy_loss + cfg.value_coef * value_loss - entropy_coef * entropy
    kl_ref = torch.zeros(())
    if reference is not None and cfg.kl_ref > 0:
        with torch.no_grad():
            ref_dist = distribution(reference(batch)[0], mask)
        kl_ref = torch.distributions.kl_divergence(ref_dist, dist).mean()
        loss = loss + cfg.kl_ref * kl_ref
    with torch.no_grad():
        stats = {"policy_loss": policy_loss.item(), "value_loss": value_loss.item(), "entropy": entropy.item(),
                 "approx_kl": (old - logp).mean().item(), "clip_frac": ((ratio - 1).abs() > cfg.clip).float().mean().item(),
                 "kl_ref": kl_ref.item()}
    return loss, stats


def update(model: ActorCritic, optimizer: torch.optim.Optimizer, rollout: Rollout, bootstrap: float,
           cfg: PPOConfig, entropy_coef: float, rng: np.random.Generator, reference: ActorCritic | None = None
           ) -> dict:
    """`cfg.epochs` passes of shuffled minibatches over the rollout; returns mean losses."""
    adv, ret = gae(rollout.steps, bootstrap, cfg.gamma, cfg.lam)
    adv = (adv - adv.mean()) / (adv.std() + 1e-8) if len(adv) > 1 else adv
    adv_t, ret_t = torch.as_tensor(adv), torch.as_tensor(ret)
    stats: list[dict] = []
    for _ in range(cfg.epochs):
        order = rng.permutation(len(rollout.steps))
        for lo in range(0, len(order), cfg.minibatch):
            idx = order[lo: lo + cfg.minibatch]
            loss, st = _minibatch_loss(model, [rollout.steps[i] for i in idx], adv_t[idx], ret_t[idx], cfg,
                                       entropy_coef, reference)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.max_grad_norm)
            optimizer.step()
            stats.append(st)
    return {k: float(np.mean([s[k] for s in stats])) for k in stats[0]}


def entropy_coef(cfg: PPOConfig, update_index: int, n_updates: int) -> float:
    """Linear decay from `entropy_start` to `entropy_end` over the run (Table 4.2: 0.5 -> 0)."""
    frac = min(update_index / max(n_updates - 1, 1), 1.0)
    return cfg.entropy_start + frac * (cfg.entropy_end - cfg.entropy_start)
