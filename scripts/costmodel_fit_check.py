"""Can the cost model fit a few programs' training rows at all?  An optimization check, not a generalization one.

Trains a fresh network (A.1's sizes, no dropout) with Adam at a constant rate on the rows of the first
`--programs` programs of DATA (>= `--min-baseline-ms`), squared error on log speedup, and prints the mean squared
error every 10 epochs beside the variance of the targets (what answering one constant scores).  A network of 1.3 M
weights that cannot push that error well under the variance on ~600 rows cannot learn from them: on the
thirty-eighth session's VM, at A.1's rate 1e-3 it stays at the variance (with or without input standardization
or gradient clipping), at 1e-4 it falls to a third of it in 30 epochs.  `--anchored` checks the anchored form.

    python scripts/costmodel_fit_check.py data/poly-costmodel-fa56-5ms --programs 20 --lr 1e-4 --normalize
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from llmopt.poly.costmodel.data import load_rows  # noqa: E402
from llmopt.poly.costmodel.model import CostModel, ModelConfig  # noqa: E402
from llmopt.poly.costmodel.train import TrainConfig, at_least, batch_log_speedup, batches, featurize_rows  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("data")
    p.add_argument("--programs", type=int, default=20)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--epochs", type=int, default=40)
    p.add_argument("--clip", type=float, default=0.0, help="clip the gradient norm to this (0: no clipping)")
    p.add_argument("--normalize", action="store_true")
    p.add_argument("--anchored", action="store_true")
    p.add_argument("--min-baseline-ms", type=float, default=5.0)
    args = p.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    rows = at_least(load_rows(args.data), args.min_baseline_ms)
    kept = set(list(dict.fromkeys(r["hash"] for r in rows))[: args.programs])
    ds = featurize_rows([r for r in rows if r["hash"] in kept], TrainConfig(fractions=(1.0, 0.0)), False)["train"]
    cfg = dataclasses.replace(ModelConfig(), dropout=0.0, normalize=args.normalize, anchored=args.anchored)
    model = CostModel(cfg)
    if args.normalize:
        model.set_input_stats(np.concatenate([t.comps for t in ds.trees]))
    variance = float(np.log(ds.speedups).var())
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    rng = np.random.default_rng(0)
    print(f"{len(ds.trees)} rows of {len(kept)} programs; variance of log speedup {variance:.4f}")
    for epoch in range(args.epochs + 1):
        total = 0.0
        for idx in batches(ds, 32, rng):
            log_pred, target = batch_log_speedup(model, ds, idx, "cpu")
            loss = ((log_pred - target.log()) ** 2).sum()
            opt.zero_grad()
            loss.backward()
            if args.clip:
                torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
            opt.step()
            total += loss.item()
        if epoch % 10 == 0:
            print(f"epoch {epoch}: mean squared error {total / len(ds.trees):.4f} (variance {variance:.4f})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
