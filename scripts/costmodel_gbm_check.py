"""Is the cost model's MAPE limit the network or the data?  Another learner on the same inputs.

Gradient-boosted trees (LightGBM, not a dependency of llmopt: `pip install lightgbm`) on each (program,
schedule)'s computation vectors (`features.featurize`, the cost model's own input) pooled over the
computations (mean, max, min, count, loops), trained on the training programs of TRAIN (split by program hash
as `train` splits, early-stopped on its validation programs), scored by MAPE against answering 1.0x on the test
programs of TRAIN and of each TEST folder.  Targets are log speedups; two objectives: L1 (the median) and L1
weighted by 1/speedup (the answer that minimizes MAPE when the speedup is uncertain).  `--footprints` adds
hand-made features the network does not get: the bytes of cache lines each computation touches in its
innermost 1, 2 and 3 loops, transformed and original (`footprint`), and whether the innermost loop became a
loop the write does not move with (a recurrence the original did not carry inward).

    pip install lightgbm
    python scripts/costmodel_gbm_check.py data/poly-costmodel-fa56,data/poly-costmodel-fa56-5ms \\
        --test data/poly-costmodel-retest data/poly-costmodel-retest2 --min-baseline-ms 5 [--footprints]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from llmopt.poly.agent.state import MAX_ITERS, MAX_RANK, access_matrix, loop_flags  # noqa: E402
from llmopt.poly.costmodel.data import load_folders  # noqa: E402
from llmopt.poly.costmodel.features import _accesses, _write_iterators  # noqa: E402
from llmopt.poly.costmodel.model import mape as mape_tensor  # noqa: E402
from llmopt.poly.costmodel.train import TrainConfig, at_least, featurize_rows, split_of  # noqa: E402
from llmopt.poly.polyhedral import domain  # noqa: E402
from llmopt.poly.program import extent, program_from_dict  # noqa: E402
from llmopt.poly.schedule import Schedule, state  # noqa: E402

ROW = MAX_ITERS + 2  # one row of an access matrix: iterator coefficients, constant, quasi-affine flag
DEPTHS = (1, 2, 3)
LINE = 64  # bytes


def pooled(tree) -> np.ndarray:
    c = tree.comps
    return np.concatenate([c.mean(0), c.max(0), c.min(0), [len(c), str(tree.structure).count("L")]])


def _ranges(levels: list[dict], extents: list[int], depth: int) -> list[int]:
    """How many values each original iterator takes inside the innermost `depth` loops (a point loop without
    its tile loop: the tile size)."""
    inner, out = levels[-depth:], [1] * MAX_ITERS
    for lv in inner:
        moved = [k for k, c in enumerate(lv["row"]) if c and k < len(extents)]
        tile = next((o["tile"] for o in levels if o["tile"] and o["row"] == lv["row"]), 0)
        whole = not lv["point"] or not tile or any(o["tile"] and o["row"] == lv["row"] for o in inner)
        for k in moved:
            out[k] = max(out[k], extents[k] if whole else min(tile, extents[k]))
    return out


def footprint(prog, stmt, levels: list[dict]) -> list[float]:
    """log2 bytes of the cache lines the statement's distinct accesses touch in its innermost 1, 2, 3 loops
    (the bounding box of each access; accesses that differ by a constant offset count once)."""
    box = domain(prog, stmt).as_set()
    extents = [box.dim_max_val(d).to_python() - box.dim_min_val(d).to_python() + 1 for d in range(len(stmt.iterators))]
    out = []
    for depth in DEPTHS:
        rng, lines = _ranges(levels, extents, depth), {}
        for acc in _accesses(prog, stmt):
            tensor = prog.tensors[acc.tensor]
            mat = access_matrix(prog, stmt, acc)
            shape = [extent(e, prog.params) for e in tensor.shape][:MAX_RANK] or [1]
            span = [min(n, 1 + sum(abs(mat[r * ROW + k]) * (rng[k] - 1) for k in range(MAX_ITERS)))
                    for r, n in enumerate(shape)]
            size = 8 if tensor.dtype == "double" else 4
            key = (acc.tensor, tuple(mat[r * ROW + k] for r in range(MAX_RANK) for k in range(MAX_ITERS)))
            lines[key] = math.ceil(span[-1] * size / LINE) * math.prod(span[:-1])
        out.append(math.log2(1 + LINE * sum(lines.values())))
    return out


def _inner_recurrence(prog, stmt, levels: list[dict]) -> bool:
    used = {k for k, c in enumerate(levels[-1]["row"]) if c}
    return bool(used) and not used & _write_iterators(prog, stmt)


def hand_features(prog, schedule: Schedule, original) -> np.ndarray:
    st, per = state(prog, schedule), []
    for stmt in prog.statements:
        now, then = loop_flags(prog, stmt.name, st[stmt.name]), loop_flags(prog, stmt.name, original[stmt.name])
        f1, f0 = footprint(prog, stmt, now), footprint(prog, stmt, then)
        rec = _inner_recurrence(prog, stmt, now)
        per.append(f1 + f0 + [a - b for a, b in zip(f1, f0, strict=True)]
                   + [float(rec), float(rec and not _inner_recurrence(prog, stmt, then))])
    per = np.array(per)
    return np.concatenate([per.max(0), per.min(0), per.mean(0)])


def matrix(rows: list[dict], cache: str | None, footprints: bool) -> tuple[np.ndarray, np.ndarray]:
    """Pooled features and speedups of `rows`, all of which must fall in one split (their order is kept)."""
    sets = featurize_rows(rows, TrainConfig(), False, cache=cache)
    ds = next(s for s in sets.values() if s.trees)
    x = np.stack([pooled(t) for t in ds.trees])
    if footprints:
        progs, originals = {}, {}
        extra = []
        for r in rows:
            prog = progs.setdefault(r["hash"], program_from_dict(r["program"]))
            original = originals.setdefault(r["hash"], state(prog, Schedule()))
            extra.append(hand_features(prog, Schedule.from_list(r["schedule"]), original))
        x = np.concatenate([x, np.stack(extra)], axis=1)
    return x, np.asarray(ds.speedups)


def mape(pred, y) -> float:
    """The training metric (`model.mape`) on numpy answers (a constant broadcasts)."""
    y = torch.as_tensor(np.asarray(y, dtype=float))
    return float(mape_tensor(torch.as_tensor(np.broadcast_to(np.asarray(pred, dtype=float), y.shape).copy()), y))


def main() -> int:
    import lightgbm as lgb

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("train", help="collected folders joined by commas")
    p.add_argument("--test", nargs="*", default=[], help="more folders whose test programs are scored")
    p.add_argument("--min-baseline-ms", type=float, default=5.0)
    p.add_argument("--cache", help="a features cache (a training run's features.pkl)")
    p.add_argument("--footprints", action="store_true", help="add the hand-made footprint and recurrence features")
    args = p.parse_args()
    rows = at_least(load_folders(args.train), args.min_baseline_ms)
    parts = {s: [r for r in rows if split_of(r["hash"], TrainConfig().fractions) == s]
             for s in ("train", "validation", "test")}
    for folder in args.test:
        parts[folder] = [r for r in at_least(load_folders(folder), args.min_baseline_ms)
                         if split_of(r["hash"], TrainConfig().fractions) == "test"]
    data = {k: matrix(v, args.cache, args.footprints) for k, v in parts.items() if v}
    (xt, yt), (xv, yv) = data["train"], data["validation"]
    out = {"rows": {k: len(v[1]) for k, v in data.items()}, "features": int(xt.shape[1]),
           "mape_always_1": {k: round(mape(1.0, y), 4) for k, (_, y) in data.items()}}
    for name, weight in (("l1", None), ("l1_weighted_1_over_y", 1 / yt)):
        params = dict(objective="l1", learning_rate=0.03, num_leaves=31, min_data_in_leaf=20, bagging_fraction=0.8,
                      bagging_freq=1, feature_fraction=0.5, num_threads=1, verbose=-1, seed=0)
        train_set = lgb.Dataset(xt, np.log(yt), weight=weight)
        booster = lgb.train(params, train_set, 2000, valid_sets=[lgb.Dataset(xv, np.log(yv), reference=train_set)],
                            callbacks=[lgb.early_stopping(80, verbose=False)])
        out[name] = {"trees": booster.best_iteration, **{k: round(mape(np.exp(booster.predict(x)), y), 4)
                                                         for k, (x, y) in data.items()}}
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
