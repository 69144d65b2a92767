"""MAPE of cv_oof.py's out-of-fold answers (all training rows, and the rows of programs >= 5 ms, the held-out sets'
floor), of their mean in log space, and of the mean raised to powers (the shrinkage calibration):
    python oof_mix.py NAME [NAME...]"""

import sys

import numpy as np

y = np.load("runs/s62/invariance.train.y.npy")
long = np.load("runs/s63/train.programs.npz")["baseline"] >= 5.0


def mape(ans: np.ndarray, m=slice(None)) -> str:
    return f"{np.mean(np.abs(np.exp(ans[m]) - y[m]) / y[m]):.4f} / {np.mean(np.abs(np.exp(ans[long]) - y[long]) / y[long]):.4f}"


answers = {n: np.load(f"runs/s63/oof/{n}.npy") for n in sys.argv[1:]}
print("MAPE out of fold: all rows / programs >= 5 ms")
for n, a in answers.items():
    print(f"  {n:24s} {mape(a)}")
mean = np.mean(list(answers.values()), axis=0)
if len(answers) > 1:
    print(f"  {'mean':24s} {mape(mean)}")
for p in (1.02, 1.04, 1.06, 1.08, 1.1, 1.15):
    print(f"  mean ** {p:<18} {mape(mean * p)}")
