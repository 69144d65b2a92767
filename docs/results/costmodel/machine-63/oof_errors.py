"""Where the out-of-fold answers of cv_oof.py err, by groups of rows read from the trees' own inputs (no test
program is read): each group's rows, programs, MAPE and share of the total absolute percentage error.
    python oof_errors.py NAME   (runs/s63/oof/NAME.npy)"""

import sys

import numpy as np

sys.path[:0] = ["."]
from llmopt.poly.costmodel.boosted import FORK_COLUMN  # noqa: E402
from llmopt.poly.costmodel.features import COMP_FEATURES, COMPILER_NAMES, PLAIN_FEATURES  # noqa: E402

TOP, TOP_ANCHOR = 12 * COMP_FEATURES, 13 * COMP_FEATURES  # `boosted.tree_features`' blocks of the dominant computation


def column(block: int, name: str) -> int:
    return block + PLAIN_FEATURES + COMPILER_NAMES.index(name)


def report(title: str, groups: dict, y: np.ndarray, ans: np.ndarray, prog: np.ndarray) -> None:
    ape = np.abs(np.exp(ans) - y) / y
    print(f"\n{title} (all: {len(y)} rows, MAPE {ape.mean():.4f})")
    for name, m in groups.items():
        if m.sum():
            ratio = np.exp(np.median(ans[m] - np.log(y[m])))
            print(f"  {name:38s} rows {m.sum():6d} programs {len(set(prog[m])):5d} MAPE {ape[m].mean():.4f} "
                  f"share {ape[m].sum() / ape.sum():.3f} median answer/measured {ratio:.3f} "
                  f"median measured {np.median(y[m]):.3f}")


def main() -> None:
    name = sys.argv[1]
    x = np.load("runs/s62/invariance.train.npy", mmap_mode="r")
    y = np.load("runs/s62/invariance.train.y.npy")
    ans = np.load(f"runs/s63/oof/{name}.npy")
    z = np.load("runs/s63/train.programs.npz")
    prog, base = z["programs"], z["baseline"]
    carried = np.asarray(x[:, column(TOP, "vector_carried")]) > 0.5
    carried0 = np.asarray(x[:, column(TOP_ANCHOR, "vector_carried")]) > 0.5
    vec = np.asarray(x[:, column(TOP, "vector_loop")]) > 0.5
    vec0 = np.asarray(x[:, column(TOP_ANCHOR, "vector_loop")]) > 0.5
    fork = np.asarray(x[:, FORK_COLUMN]) > 0
    left = np.load("runs/s62/left.train.npy") < 0.999
    s = base >= 5.0
    report("by the dominant computation's vectorizer loop carrying a dependence (untransformed -> "
           "transformed)", {
               "no loop -> no loop": ~vec0 & ~vec, "no loop -> loop": ~vec0 & vec, "loop -> no loop": vec0 & ~vec,
               "free -> free": vec0 & vec & ~carried0 & ~carried, "free -> carried": vec0 & vec & ~carried0 & carried,
               "carried -> free": vec0 & vec & carried0 & ~carried,
               "carried -> carried": vec0 & vec & carried0 & carried}, y, ans, prog)
    report("by measured speedup", {f"[{lo}, {hi})": (y >= lo) & (y < hi) for lo, hi in
                                   ((0, 0.1), (0.1, 0.5), (0.5, 0.9), (0.9, 1.1), (1.1, 2), (2, 5), (5, 1e9))},
           y, ans, prog)
    report("by terms", {"forks": fork, "loops removed": left, "neither": ~fork & ~left}, y, ans, prog)
    report("by baseline", {"< 5 ms": ~s, ">= 5 ms": s}, y, ans, prog)


if __name__ == "__main__":
    main()
