"""The shares of the work that run a dependence chain, per row of runs/s62/invariance.*.npy, for the chain-term
probes (probe_chain.py): for each computation, whether the loop LLVM's vectorizer sees carries a dependence while
the write stays put along it (an accumulator: each iteration waits for the one before) and runs at least T trips
(shorter chains of successive outer iterations overlap in the core's reorder window) and is not unrolled away;
summed over computations by their share of the untransformed work, for the transformed tree and the untransformed
one.  Written to runs/s63/chain.SPLIT.npz (arrays t{T} and a{T})."""

import sys
from pathlib import Path

import numpy as np

sys.path[:0] = ["."]
from llmopt.poly.costmodel.boosted import _parts  # noqa: E402
from llmopt.poly.costmodel.features import COMPILER_NAMES, PLAIN_FEATURES, _unsquash, work_shares  # noqa: E402
from llmopt.poly.costmodel.model import load_model  # noqa: E402

TRIPS = (16, 32, 64, 128, 256)


def chained(comps: np.ndarray, trips: int) -> np.ndarray:
    col = {n: comps[:, PLAIN_FEATURES + i] for i, n in enumerate(COMPILER_NAMES)}
    return ((col["vector_loop"] > 0.5) & (col["vector_carried"] > 0.5) & (col["vector_write_moves"] < 0.5)
            & (col["inner_unrolled"] < 0.5) & (_unsquash(col["vector_trips"]) >= trips))


def main() -> None:
    _, meta = load_model("runs/s59/base-ens4.pt")
    train, held = _parts([sys.argv[1]], meta, Path("runs/s62/invariance.features.pkl"), 0.0, 5.0)
    for name, (trees, _, _) in {"train": train, **held}.items():
        out = {}
        for t in TRIPS:
            rows = [(work_shares(tr.anchor.comps) @ chained(tr.comps, t), work_shares(tr.anchor.comps)
                     @ chained(tr.anchor.comps, t)) for tr in trees]
            out[f"t{t}"], out[f"a{t}"] = np.array(rows).T
        np.savez(f"runs/s63/chain.{name}.npz", **out)
        print(name, len(trees), {k: float(v.mean()) for k, v in out.items()}, flush=True)


if __name__ == "__main__":
    main()
