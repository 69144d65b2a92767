"""The tree matrices the sixty-third session's scripts read, made without the networks: the package's tree features
(`boosted.feature_matrix`) of the recipe's split (`--validation-share 0.05`: fractions 0.75 / 0.05, seed 0, what
runs/s59/base-ens4.pt's metadata says), training rows of every length, validation and test rows of programs >= 5 ms
(`boosted._parts`), written where machine-63's scripts look: runs/s62/invariance.SPLIT.npy (every column but
`features.removal_left`), runs/s62/left.SPLIT.npy (that column), runs/s62/invariance.SPLIT.y.npy (measured
speedups) and runs/s63/train.programs.npz (each training row's program and its baseline in ms).  Why: the split is
the data's, not a network's, so a fresh machine need not wait for four networks (~100 min on 2 cores) before the
out-of-fold probes.  Featurizes into runs/s62/invariance.features.pkl unless a cache is given (`--cache`, e.g. a
network run's features.pkl: the same format)."""

import argparse
import shutil
import sys
from pathlib import Path

import numpy as np

sys.path[:0] = ["."]
from llmopt.poly.costmodel.boosted import _parts, feature_matrix  # noqa: E402

sys.path[:0] = [str(Path(__file__).parents[1] / "machine-63")]
from cv_oof import programs  # noqa: E402

META = {"fractions": [0.75, 0.05], "seed": 0}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("data")
    p.add_argument("--cache", help="a features cache to start from (copied)")
    a = p.parse_args()
    Path("runs/s62").mkdir(parents=True, exist_ok=True)
    Path("runs/s63").mkdir(parents=True, exist_ok=True)
    cache = Path("runs/s62/invariance.features.pkl")
    if a.cache and not cache.is_file():
        shutil.copy(a.cache, cache)
    train, held = _parts([a.data], META, cache, 0.0, 5.0)
    for name, (trees, y, count) in {"train": train, **held}.items():
        x = feature_matrix(trees)
        np.save(f"runs/s62/invariance.{name}.npy", x[:, :-1])
        np.save(f"runs/s62/left.{name}.npy", x[:, -1])
        np.save(f"runs/s62/invariance.{name}.y.npy", y)
        print(name, x.shape, count, flush=True)
    stale = Path("runs/s63/train.programs.npz")  # `programs` keeps the file it finds: these matrices' rows are new
    stale.unlink(missing_ok=True)
    prog, _ = programs(a.data, META)  # each training row's program and baseline, written there
    assert len(prog) == len(train[0]), (len(prog), len(train[0]))


if __name__ == "__main__":
    main()
