"""Apply a trained Pearl agent: a schedule for a program with no measurement (Pearl §6: 33 ms).

`AgentPolicy(path).schedule(program, measurer)` walks the program branch by branch and takes the
most probable legal action each time (argmax of the masked policy) until "Next" on the last
branch, or `max_steps`.  The measurer is used only for its memoized legality checks, never to
time anything.  `candidates(program, measurer, k)` is the top-k variant: a beam search over the
policy's log-probabilities that returns up to k distinct finished schedules, most probable first,
for a caller that can afford to time k schedules and keep the fastest.

`path` is a training checkpoint (`llmopt.poly.agent.train`) or any file with its "model" and
"model_config" entries, or an ensemble (`imitate --members N`: a "members" list of such entries),
whose actions follow the mean of its members' log-probabilities; the shipped policy is `DEFAULT_POLICY` (`llmopt/poly/data/agent.pt`).

A policy file may carry a **critic** (`attach_critic`): a second network of the same shape whose value
head was pre-trained to predict log4(speedup) of a schedule from its state graph
(`python -m llmopt.poly.agent.pretrain DATA --target speedup`).  The walk is then guided
(`guided_steps`): at each step the policy proposes its `GUIDE_K` most probable legal actions, the
critic scores the schedule each leads to against the schedule as it stands, and the walk takes the
best-scored one when it is predicted `GUIDE_GAIN` faster, "Next" otherwise.  Why: the imitation
policies put "Next" first almost everywhere (~300 labelled programs), while a network regressing
~45,000 measured schedules ranks a program's schedules much better than that (on held-out
programs its pick among the measured ones reaches 0.70 of the best, the identity 0.35).
Still no measurement: one batched forward of at most GUIDE_K + 1 graphs a step.

`agent_search` is the agent as a search (`llmopt loops schedule --search agent`, the bench's agent
column): the greedy schedule (or the policy's `candidates` best, `candidates > 1`), measured through
`llmopt.poly.search.verified`, kept only when faster than the original program.  With the greedy walk
it also measures the schedule as the walk left each earlier branch (`walk`; `branches=False`: the
final one only), so one bad last step does not throw away the branches before it: on fdtd-2d the walk
parallelizes S1 and S2 (1.44x) and then interchanges S3 against its unit stride (0.09x), and the final
schedule alone falls back to the original.  That costs at most one measurement per branch, all in
`measure_seconds`; `search_seconds - measure_seconds` stays the agent's own time (Pearl: 33 ms).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch_geometric.data import Batch

from llmopt.errors import LlmoptError, UsageError
from llmopt.poly.actions import NEXT
from llmopt.poly.agent.env import MAX_STEPS
from llmopt.poly.agent.model import ActorCritic, distribution
from llmopt.poly.agent.state import graph
from llmopt.poly.agent.walk import Position, advance, first_legal, first_legal_actions, legal_mask, start
from llmopt.poly.legality import Legality
from llmopt.poly.measure import Measurer
from llmopt.poly.program import Program
from llmopt.poly.schedule import Schedule
from llmopt.poly.search import DEFAULT_MIN_GAIN, SearchResult, verified

DEFAULT_POLICY = Path(__file__).resolve().parent.parent / "data" / "agent.pt"
GUIDE_K = 4  # the policy's proposals a critic chooses among, "Next" added when not one of them
GUIDE_GAIN = 1.05  # a proposal must be predicted this much faster than stopping (the search labels' 5% step)
GUIDE_PER_BRANCH = 3  # transformations a branch takes at most, as in the search labels (the critic has seen no more)
_policies: dict[str, AgentPolicy] = {}


class PolicyError(LlmoptError, FileNotFoundError):
    """A policy file that is missing: the message says how to train one."""


@dataclass
class Candidate:
    """A finished walk of the policy: its schedule and summed log-probability."""

    schedule: Schedule
    log_prob: float


class AgentPolicy:
    """A trained actor-critic applied with the legality mask (module docstring)."""

    def __init__(self, path: str | Path, max_steps: int = MAX_STEPS):
        self.path = Path(path)
        if not self.path.exists():
            raise PolicyError(f"no trained Pearl agent at {self.path}: train one with "
                              "`python -m llmopt.poly.agent.train RUN_DIR` (its checkpoint.pt is the policy)")
        torch.set_num_threads(1)
        ckpt = torch.load(self.path, map_location="cpu", weights_only=False)
        self.models = [self._member(m) for m in ckpt.get("members") or [ckpt]]
        self.critic = self._critic(ckpt["critic"]) if ckpt.get("critic") else None
        self.max_steps = max_steps

    @classmethod
    def of(cls, models: list[ActorCritic], max_steps: int = MAX_STEPS) -> AgentPolicy:
        """A policy of networks in memory (one, or an ensemble), e.g. a student while it trains."""
        policy = cls.__new__(cls)
        policy.path, policy.models, policy.max_steps = Path("<memory>"), [m.eval() for m in models], max_steps
        policy.critic = None
        return policy

    def _critic(self, weights: dict) -> ActorCritic:
        critic = ActorCritic(**weights.get("model_config", {}))
        critic.load_state_dict(weights["model"], strict=False)  # backbone, shared and value: the policy head is unused
        return critic.eval()

    def _member(self, ckpt: dict) -> ActorCritic:
        model = ActorCritic(**ckpt["model_config"])
        try:
            model.load_state_dict(ckpt["model"])
        except RuntimeError as err:  # a policy trained on another version of the state features
            raise PolicyError(f"{self.path} does not fit this version's state graph (retrain it, e.g. "
                              f"`python -m llmopt.poly.agent.imitate DATA --out RUN`): {str(err)[:200]}") from None
        return model.eval()

    def logits(self, batch) -> torch.Tensor:
        """The policy's logits [B, 56]: one model's, or an ensemble's mean log-probabilities."""
        if len(self.models) == 1:
            return self.models[0](batch)[0]
        return torch.stack([torch.log_softmax(m(batch)[0], -1) for m in self.models]).mean(0)

    @torch.no_grad()
    def log_probs(self, prog: Program, pos: Position, measurer: Measurer) -> np.ndarray:
        """Masked log-probabilities of the 56 actions at `pos` (-inf where masked). Shape [56]."""
        mask = torch.tensor(legal_mask(measurer.legality(prog), pos))[None]
        logits = self.logits(Batch.from_data_list([graph(prog, pos)]))
        logp = distribution(logits, mask).logits[0].double().numpy()
        return np.where(mask[0].numpy(), logp, -np.inf)

    @torch.no_grad()
    def schedule(self, prog: Program, measurer: Measurer) -> Schedule:
        """The greedy walk's schedule (argmax of the masked policy at every step)."""
        return self.walk(prog, measurer)[-1]

    @torch.no_grad()
    def walk(self, prog: Program, measurer: Measurer) -> list[Schedule]:
        """The greedy walk's schedule as each branch was left ("Next"), distinct and in order; the
        last is the walk's final schedule (the identity when the walk changed nothing).

        Masking keeps the order of the logits, so the argmax of the masked policy is the legal action
        with the highest logit: checked best-first (`first_legal`), usually one or two isl checks a
        step instead of 55."""
        legality = measurer.legality(prog)
        steps = self.guided_steps(prog, legality) if self.critic else self.greedy_steps(prog, legality)
        out = [pos.schedule for pos, action in steps if action == NEXT]
        last, action = steps[-1]
        out.append(advance(prog, last, action)[0].schedule)
        kept = {json.dumps(sched.key()): sched for sched in out if sched.transforms}
        return list(kept.values()) or [Schedule()]

    @torch.no_grad()
    def greedy_steps(self, prog: Program, legality: Legality) -> list[tuple[Position, int]]:
        """Each position of the greedy walk and the action taken there (the last ends the walk, or
        the walk stopped at `max_steps`)."""
        pos, out = start(), []
        for _ in range(self.max_steps):
            logits = self.logits(Batch.from_data_list([graph(prog, pos)]))
            action = first_legal(legality, pos, torch.argsort(logits[0], descending=True))
            out.append((pos, action))
            pos, done = advance(prog, pos, action)
            if done:
                break
        return out

    @torch.no_grad()
    def guided_steps(self, prog: Program, legality: Legality, k: int = GUIDE_K) -> list[tuple[Position, int]]:
        """The critic-guided walk's positions and actions (module docstring), as `greedy_steps`."""
        pos, out, taken = start(), [], 0
        here = float(self.predicted_speedups(prog, [pos.schedule])[0])  # the schedule as it stands
        for _ in range(self.max_steps):
            logits = self.logits(Batch.from_data_list([graph(prog, pos)]))
            moves = [a for a in first_legal_actions(legality, pos, torch.argsort(logits[0], descending=True), k)
                     if a != NEXT]
            action = NEXT
            if moves and taken < GUIDE_PER_BRANCH:
                values = self.predicted_speedups(prog, [advance(prog, pos, a)[0].schedule for a in moves])
                best = int(np.argmax(values))
                if values[best] >= here * GUIDE_GAIN:
                    action, here = moves[best], float(values[best])
            out.append((pos, action))
            taken = 0 if action == NEXT else taken + 1
            pos, done = advance(prog, pos, action)
            if done:
                break
        return out

    @torch.no_grad()
    def predicted_speedups(self, prog: Program, schedules: list[Schedule]) -> np.ndarray:
        """The critic's predicted speedup of each schedule over the original program."""
        batch = Batch.from_data_list([graph(prog, Position(s, 0)) for s in schedules])
        value = self.critic.value(self.critic.features(batch)).squeeze(-1)
        return 4.0 ** value.double().numpy()

    @torch.no_grad()
    def candidates(self, prog: Program, measurer: Measurer, k: int = 5) -> list[Candidate]:
        """Up to `k` distinct schedules by beam search (width k) over the policy, most probable first.

        A beam's score is the sum of its actions' log-probabilities before masking (log-softmax over
        all 56 logits): each expansion then checks legality best-first until it has k legal actions,
        as the greedy walk does, instead of the 55 checks that renormalizing over the legal actions
        needs (0.2-2.5 s a program that way).  The beams of a step share one batched forward, and
        beams that reach the same position keep only the more probable one."""
        legality = measurer.legality(prog)
        beams: list[tuple[float, Position, bool]] = [(0.0, start(), False)]
        for _ in range(self.max_steps):
            live = [b for b in beams if not b[2]]
            if not live:
                break
            grown: dict[str, tuple[float, Position, bool]] = {}
            for beam in beams:
                if beam[2]:
                    _keep_best(grown, beam)
            logp = torch.log_softmax(self.logits(Batch.from_data_list([graph(prog, pos) for _, pos, _ in live])), -1)
            for (lp, pos, _), row in zip(live, logp, strict=True):
                for a in first_legal_actions(legality, pos, torch.argsort(row, descending=True), k):
                    new, finished = advance(prog, pos, a)
                    _keep_best(grown, (lp + float(row[a]), new, finished))
            beams = sorted(grown.values(), key=lambda b: -b[0])[:k]
        out: dict[str, Candidate] = {}
        for lp, pos, _ in sorted(beams, key=lambda b: -b[0]):
            out.setdefault(json.dumps(pos.schedule.key()), Candidate(pos.schedule, lp))
        return list(out.values())


def _keep_best(beams: dict[str, tuple[float, Position, bool]], beam: tuple[float, Position, bool]) -> None:
    """Add `beam` to `beams` unless a beam at the same position (and finished state) scores higher."""
    key = json.dumps([beam[1].schedule.key(), beam[1].branch, beam[2]])
    if key not in beams or beams[key][0] < beam[0]:
        beams[key] = beam


def attach_critic(policy_path: str | Path, critic_path: str | Path, out: str | Path) -> Path:
    """Write the policy at `policy_path` with the pre-trained weights at `critic_path`
    (`python -m llmopt.poly.agent.pretrain ... --target speedup`) as its critic, to `out`."""
    ckpt = torch.load(policy_path, map_location="cpu", weights_only=False)
    weights = torch.load(critic_path, map_location="cpu", weights_only=False)
    if not any(k.startswith("value.") for k in weights):
        raise UsageError(f"{critic_path} has no value head: not pre-trained weights")
    ckpt["critic"] = {"model": weights, "model_config": ActorCritic().config}
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    torch.save(ckpt, out)
    return out


def cached_policy(path: str | Path | None = None) -> AgentPolicy:
    """The policy at `path` (default DEFAULT_POLICY), loaded once per process."""
    key = str(Path(path or DEFAULT_POLICY).resolve())
    if key not in _policies:
        _policies[key] = AgentPolicy(key)
    return _policies[key]


def agent_search(prog: Program, measurer: Measurer, budget_seconds: float = 60.0, policy_path: str | Path | None = None,
                 candidates: int = 1, min_gain: float = DEFAULT_MIN_GAIN, branches: bool = True,
                 log=None) -> SearchResult:
    """The agent's schedule (or its `candidates` most probable), measured; see the module docstring.
    `branches`: with the greedy walk, also measure the schedule as the walk left each earlier branch."""
    policy = cached_policy(policy_path)

    def pick(legality, deadline: float) -> list[Schedule]:
        if candidates <= 1:
            return policy.walk(prog, measurer)[::-1] if branches else [policy.schedule(prog, measurer)]
        return [c.schedule for c in policy.candidates(prog, measurer, candidates)]

    return verified(prog, measurer, pick, budget_seconds, min_gain, log)
