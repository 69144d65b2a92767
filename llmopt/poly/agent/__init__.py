"""Pearl's RL agent (issue 15, item 3): a GATv2 actor-critic that schedules affine programs.

The modules, in the order data flows through them:

- `walk`: the agent's position in a program (schedule so far + targeted branch) and what one of
  the 56 actions does to it (`Position`, `start`, `advance`, `legal_mask`);
- `state`: the graph state of a position (loop, computation and buffer nodes, their features,
  nesting / in-loop / read / write edges) as a `torch_geometric.data.Data` (`graph`);
- `env`: `PearlEnv`, the gymnasium environment (episode = one program, reward = log4 of the step
  speedup, measured and memoized by `llmopt.poly.measure.Measurer`, or predicted by the cost model);
- `reward`: where those speedups come from (`MeasuredReward`, `CostModelReward`, `rewarder`);
- `model`: `ActorCritic`, Table 3.2's network (two GATv2 layers, mean+max pooling, policy and
  value heads) with a masked categorical policy;
- `ppo`: rollout buffer, GAE and the clipped PPO update (Table 4.2's hyper-parameters);
- `pretrain`: actor-critic pre-training on execution-time prediction (Pearl §5.2);
- `train`: the training loop (resumable checkpoints, CSV log) and its command line;
- `imitate`: the policy learned from measured schedules instead (advantage-weighted cloning of search
  labels; `--members N` trains an ensemble), what the shipped policy comes from;
- `distill`: an ensemble made one network (its action distribution on its training states and on its
  own walks over fresh random programs), so the agent pays one forward pass a step;
- `policy`: `AgentPolicy`, a trained checkpoint applied greedily (`schedule`) or as a beam of
  candidates (`candidates`).

Heavy imports (torch, torch_geometric) happen in `state`, `model` and after; `walk` needs neither.
"""
