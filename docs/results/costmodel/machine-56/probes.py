"""Two probes of where a cost model's error is not (fifty-sixth session), on a folder's training and test programs
>= 5 ms, for one model (run from the repo root):

    python docs/results/costmodel/machine-56/probes.py DATA MODEL FEATURES.pkl > probes.json

"same_code": the transformed schedules whose loop nest (`emit.loop_nest`, iterators renamed in order of first use)
is the original's, character for character: any distance of their measured speedup from 1.0x is the timing's
noise, so their constant MAPE is a floor no model passes.  "inner_tiling": the schedules that are one tiling of a
statement's two innermost loops, by how many tiles the inner loop's extent makes (extent / tile size; under 1
the inner tile loop runs once, a tiling of the outer loop alone): MAPE of the model and of the constant, and the
measured speedups' spread.  "by_length": the schedules by how many transformations they hold (0: the identity rows,
the same executable timed against itself)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[4]
sys.path[:0] = [str(ROOT), str(ROOT / "scripts")]

from costmodel_compare import _splits  # noqa: E402

from llmopt.poly.costmodel.data import load_rows  # noqa: E402
from llmopt.poly.costmodel.model import load_model  # noqa: E402
from llmopt.poly.costmodel.train import TrainConfig, featurize_rows  # noqa: E402
from llmopt.poly.emit import loop_nest  # noqa: E402
from llmopt.poly.program import program_from_dict  # noqa: E402
from llmopt.poly.schedule import Schedule, state  # noqa: E402

RATIOS = (0, 1, 2, 4, 16, float("inf"))  # inner extent / inner tile size


def canonical(prog, schedule: list) -> str:
    names: dict[str, str] = {}
    text = loop_nest(prog, state(prog, Schedule.from_list(schedule)))
    return re.sub(r"\bc\d+\b", lambda m: names.setdefault(m.group(0), f"v{len(names)}"), text)


def inner_ratio(prog, t: dict) -> float | None:
    """Inner extent / inner tile size of a tiling of the statement's two innermost loops (None otherwise): the
    extent from the untransformed state's isl bounds of that loop."""
    from llmopt.poly.costmodel.features import _flags, _level_trips

    stmt = prog.statement(t["stmt"])
    if t["level"] + len(t["sizes"]) != len(stmt.iterators) or len(t["sizes"]) != 2:
        return None
    st = state(prog, Schedule())
    trips = _level_trips(prog, st, stmt.name, _flags(prog, stmt.name, st[stmt.name]))
    return trips[-1] / t["sizes"][-1]


def scores(y, p, n) -> dict:
    ape, ape_1 = np.abs(p - y) / y, np.abs(1 - y) / y
    return {"samples": int(len(y)), "model": round(float(ape.mean()), 4), "always_1": round(float(ape_1.mean()), 4),
            "model_of_total": round(float(ape.sum() / n), 4), "always_1_of_total": round(float(ape_1.sum() / n), 4),
            "speedup_q10_q50_q90": [round(float(q), 3) for q in np.quantile(y, [0.1, 0.5, 0.9])]}


def main() -> int:
    data, model_path, cache = sys.argv[1:4]
    torch.set_num_threads(1)
    rows = load_rows(data)
    sets = featurize_rows(rows, TrainConfig(), False, cache=cache)
    out = {}
    for split, mine, keep, y, preds in _splits(rows, sets, {"m": load_model(model_path)[0]}, 5.0):
        p, n = preds["m"], max(int(keep.sum()), 1)
        progs, origin, same, ratio = {}, {}, np.zeros(len(y), bool), np.full(len(y), np.nan)
        for k, r in enumerate(mine):
            if not (keep[k] and r["schedule"]):
                continue
            prog = progs.setdefault(r["hash"], program_from_dict(r["program"]))
            if r["hash"] not in origin:
                origin[r["hash"]] = canonical(prog, [])
            same[k] = canonical(prog, r["schedule"]) == origin[r["hash"]]
            if len(r["schedule"]) == 1 and r["schedule"][0]["kind"] == "tiling":
                ratio[k] = inner_ratio(prog, r["schedule"][0]) or np.nan
        tiled = {f"[{lo:g}, {hi:g})": scores(y[m], p[m], n) for lo, hi in zip(RATIOS[:-1], RATIOS[1:], strict=True)
                 if (m := (ratio >= lo) & (ratio < hi)).any()}
        length = np.array([len(r["schedule"]) for r in mine])
        by_length = {str(k): scores(y[m], p[m], n) for k in sorted(set(length)) if (m := keep & (length == k)).any()}
        out[split] = {"rows": n, "same_code": scores(y[same], p[same], n), "inner_tiling": tiled,
                      "by_length": by_length}
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
