"""Pearl's actor-critic network (paper 003, Table 3.2) with a masked categorical policy.

    GATv2Conv 1   heads 4, input -> 64 x 4     Linear 256 -> 64, SELU   mean + max pool -> 128
    GATv2Conv 2   heads 4, 64 -> 64 x 4        Linear 256 -> 64, SELU   mean + max pool -> 128
    concat 256 -> summarizer 128 -> shared 64 (SELU)
    policy  64 -> 64 -> 64 -> 56               value  64 -> 64 -> 64 -> 1

These are Table 3.2's sizes unchanged (`hidden=64`, `heads=4`; Pearl's own paper 000 uses 128):
the whole network has about 0.2 M parameters and a forward pass on a 10-node graph takes about a
millisecond on one CPU core, so nothing had to be scaled down; `hidden` is a plain knob for tests.
The GATv2 layers also read the edge attributes (relation, direction, access matrix) in their
attention (`edge_dim`), which Table 3.2 does not mention: our buffer nodes and access edges are
not in Tiramisu's AST, and without them the attention could not tell a read from a nesting edge.

`forward(batch)` takes a `torch_geometric` Batch and returns (logits [B, 56], value [B]);
`distribution(logits, mask)` is the masked categorical policy (masked logits set to -1e9, so a
masked action has probability 0 and contributes nothing to the entropy).  The `backbone`, `shared`
and `value` modules are what actor-critic pre-training (`llmopt.poly.agent.pretrain`) initializes.
"""

from __future__ import annotations

import torch
from torch import nn
from torch_geometric.nn import GATv2Conv, global_max_pool, global_mean_pool

from llmopt.poly.actions import ACTIONS
from llmopt.poly.agent.state import EDGE_FEATURES, NODE_FEATURES

MASKED = -1e9


def _mlp(sizes: list[int]) -> nn.Sequential:
    """Linear layers with SELU between them (none after the last)."""
    layers: list[nn.Module] = []
    for k, (a, b) in enumerate(zip(sizes, sizes[1:], strict=False)):
        layers.append(nn.Linear(a, b))
        if k < len(sizes) - 2:
            layers.append(nn.SELU())
    return nn.Sequential(*layers)


class Backbone(nn.Module):
    """Two GATv2 layers, each projected back to `hidden` and pooled (mean + max) over the graph."""

    def __init__(self, in_dim: int = NODE_FEATURES, edge_dim: int = EDGE_FEATURES, hidden: int = 64,
                 heads: int = 4):
        super().__init__()
        self.conv1 = GATv2Conv(in_dim, hidden, heads=heads, edge_dim=edge_dim)
        self.lin1 = nn.Linear(hidden * heads, hidden)
        self.conv2 = GATv2Conv(hidden, hidden, heads=heads, edge_dim=edge_dim)
        self.lin2 = nn.Linear(hidden * heads, hidden)
        self.summarizer = nn.Linear(4 * hidden, 2 * hidden)
        self.act = nn.SELU()

    def forward(self, x, edge_index, edge_attr, batch) -> torch.Tensor:
        h1 = self.act(self.lin1(self.conv1(x, edge_index, edge_attr)))
        g1 = torch.cat([global_mean_pool(h1, batch), global_max_pool(h1, batch)], dim=1)
        h2 = self.act(self.lin2(self.conv2(h1, edge_index, edge_attr)))
        g2 = torch.cat([global_mean_pool(h2, batch), global_max_pool(h2, batch)], dim=1)
        return self.act(self.summarizer(torch.cat([g1, g2], dim=1)))


class ActorCritic(nn.Module):
    """Backbone -> shared layer -> policy head (56 logits) and value head (1)."""

    def __init__(self, hidden: int = 64, heads: int = 4, n_actions: int = len(ACTIONS)):
        super().__init__()
        self.config = {"hidden": hidden, "heads": heads, "n_actions": n_actions}
        self.backbone = Backbone(hidden=hidden, heads=heads)
        self.shared = nn.Sequential(nn.Linear(2 * hidden, hidden), nn.SELU())
        self.policy = _mlp([hidden, hidden, hidden, n_actions])
        self.value = _mlp([hidden, hidden, hidden, 1])

    def features(self, batch) -> torch.Tensor:
        """The shared representation h [B, hidden] of a Batch of state graphs."""
        return self.shared(self.backbone(batch.x, batch.edge_index, batch.edge_attr, batch.batch))

    def forward(self, batch) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.features(batch)
        return self.policy(h), self.value(h).squeeze(-1)


def distribution(logits: torch.Tensor, mask: torch.Tensor) -> torch.distributions.Categorical:
    """The masked policy: `mask` [B, 56] bool, True where the action is allowed."""
    return torch.distributions.Categorical(logits=logits.masked_fill(~mask, MASKED))
