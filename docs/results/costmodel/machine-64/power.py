"""The default trees' saved answers (final.py default, unscaled: runs/s64/final/default.SPLIT.npy, one row per
booster), their mean in log space raised to the power the out-of-fold answers chose (1.08: the least MAPE of one
booster, in the flat 1.06-1.1 of four; oof_mix-base.out, oof_mix-sweep.out).  The package averages the boosters'
time ratios before the fork and removal terms, not their answers after: final.py default-power is its number."""

import numpy as np

for split in ("validation", "test"):
    y = np.load(f"runs/s62/invariance.{split}.y.npy")
    mean = np.load(f"runs/s64/final/default.{split}.npy").mean(0)
    for p in (1.0, 1.08):
        print(split, f"power {p}:", round(float(np.mean(np.abs(np.exp(p * mean) - y) / y)), 4))
