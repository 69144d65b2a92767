"""Two or more cost models on the same held-out programs: test MAPE and pick ratio (`train.scores`: how good
the schedule each model ranks first is) overall, on the programs of seeds below `--old-seeds` (the earlier
test set) and on the rest, and the same on the validation programs (for each model those it did not train on,
`validation_programs`: `train --validation-share` trains on some of them).  The split is by program hash
(`llmopt.poly.costmodel.train.split_of`), so a model trained on less data never saw any of these; the
"identity" row is the pick ratio of always answering the untransformed program.  "buckets" splits each
model's test MAPE by the measured speedup (how much of the error each range makes, and the median
prediction there: a model that predicts ~1 everywhere shows it at once); "mape_always_1" and each bucket's
"always_1_of_total" are what answering 1.0x for every schedule scores, the bar a model must pass.

    python scripts/costmodel_compare.py data/poly-costmodel llmopt/poly/data/costmodel.pt runs/cm-673/costmodel.pt \
        --old-seeds 438 --cache runs/cm-673/features.pkl

DATA may name several folders joined by commas (`data/poly-greedy-gemm,data/poly-costmodel-large`).
`--min-baseline-ms MS` adds the same numbers on the programs whose original schedule runs at least MS (those
a model trained with `train --min-baseline-ms MS` saw the like of).  `--by-kind` adds "kinds": on the training and
the test programs (>= MS when given), the schedules that interchange a statement's two innermost loops apart from
the rest (`touches_innermost`: the rare large slowdowns and many large speedups), each with its MAPE, the
constant's, and the correlation of log predicted with log measured speedup (does the model know which way a
schedule goes, whatever MAPE says?); a model that scores near the constant on its own training rows underfits.
"extremes" (on the test programs, >= MS when given): the rows slower than 0.25x, how many each model calls
slower than 0.5x, the part of its MAPE they make, its MAPE without them, and its false alarms (answers under
0.5x where the measured speedup is at least 0.8x): MAPE divides by the target, so a handful of missed 0.05x
rows can outweigh the rest.
`--neutral` adds "neutral": on the same programs, the part of the MAPE the rows measured at 0.8-1.25x make (70% of
the rows, where answering 1.0x is hard to beat), for all schedules and per kind of transformation they hold.
`--by-share` adds "by_share": on the same programs, the transformed schedules by the share of the program's
iterations in the computations they change (`features.changed_share`): a schedule that leaves most of the work as
it was can move the time little (Amdahl), so a model should answer near 1.0x there; each range's MAPE and part of
the split's MAPE, against the constant's.
`--by-program` adds "by_program" (on the same test programs as "extremes"): how much of each model's MAPE its worst
tenth of the programs makes, and its MAPE on the *steady* programs apart from the *unsteady* ones, by the program's
untransformed schedule timed against itself (the identity row, the same executable on both sides: within
`STEADY` of 1.0x, or past `UNSTEADY`): how far the labels' own noise, not the model, makes the error.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from llmopt.poly.costmodel.data import load_rows  # noqa: E402
from llmopt.poly.costmodel.model import load_model, predict_trees  # noqa: E402
from llmopt.poly.costmodel.train import (  # noqa: E402
    MIN_SPEEDUP,
    Dataset,
    TrainConfig,
    at_least,
    featurize_rows,
    scores,
)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("data", help="a collected folder, or several joined by commas")
    p.add_argument("models", nargs="+")
    p.add_argument("--old-seeds", type=int, default=0, help="programs of seeds below this form the 'earlier' part")
    p.add_argument("--cache", help="features cache of a training run (features.pkl)")
    p.add_argument("--min-baseline-ms", type=float, default=0.0,
                   help="also score the programs whose original schedule runs at least this long")
    p.add_argument("--by-kind", action="store_true",
                   help="also score innermost interchanges and the rest apart, on the training and test programs")
    p.add_argument("--neutral", action="store_true",
                   help="also split out the neutral rows' part of the MAPE, per kind of transformation, on the "
                        "training and test programs")
    p.add_argument("--by-share", action="store_true",
                   help="also score the schedules apart by the share of the work they change, on the training and "
                        "test programs")
    p.add_argument("--by-program", action="store_true",
                   help="also score the worst programs' share and the steady and unsteady programs apart")
    args = p.parse_args()
    torch.set_num_threads(1)  # two threads on the busy 2-core machine spin against each other (~50x slower)
    rows = [r for folder in args.data.split(",") for r in load_rows(folder)]
    sets = featurize_rows(rows, TrainConfig(), False, cache=args.cache)
    test = sets["test"]
    old = {r["hash"] for r in rows if r["seed"] < args.old_seeds}
    parts = {"test (all)": test, "validation": sets["validation"]}
    if args.min_baseline_ms:
        longer = {r["hash"] for r in at_least(rows, args.min_baseline_ms)}
        parts[f"test, >= {args.min_baseline_ms:g} ms"] = test.where(lambda h: h in longer)
    if args.old_seeds:
        parts.update({f"test, seeds < {args.old_seeds}": test.where(lambda h: h in old),
                      "test, the rest": test.where(lambda h: h not in old)})
    loaded = {m: load_model(m, "cpu") for m in args.models}
    models = {m: model for m, (model, _) in loaded.items()}
    # A model trained with a smaller --validation-share trained on some of these validation programs: its
    # validation MAPE counts only those it did not (the test programs are the same for every share).
    held = {m: unseen(parts["validation"], meta) for m, (_, meta) in loaded.items()}
    both = {m: {k: scores(model, held[m] if k == "validation" else v) for k, v in parts.items()}
            for m, model in models.items()}
    kinds = by_kind(rows, sets, models, args.min_baseline_ms) if args.by_kind else None
    judged = parts.get(f"test, >= {args.min_baseline_ms:g} ms", test)
    print(json.dumps({"programs": {k: len(set(v.programs)) for k, v in parts.items()},
                      "mape": {m: {k: round(v[0], 4) for k, v in r.items()} for m, r in both.items()},
                      "pick": {m: {k: round(v[1], 3) for k, v in r.items()} for m, r in both.items()},
                      "validation_programs": {m: len(set(v.programs)) for m, v in held.items()},
                      "mape_always_1": {k: round(always_1_mape(v.speedups), 4) for k, v in parts.items()},
                      "pick_identity": {k: round(identity_pick(rows, v), 3) for k, v in parts.items()},
                      "buckets": {m: error_buckets(model, test) for m, model in models.items()},
                      "extremes": extremes(models, judged),
                      **({"kinds": kinds} if kinds else {}),
                      **({"neutral": neutral(rows, sets, models, args.min_baseline_ms)} if args.neutral else {}),
                      **({"by_share": by_share(rows, sets, models, args.min_baseline_ms)} if args.by_share else {}),
                      **({"by_program": by_program(rows, models, judged)} if args.by_program else {})}, indent=1))
    return 0


def unseen(ds: Dataset, meta: dict) -> Dataset:
    """The samples of `ds` whose program the model of `meta` did not train on."""
    trained = set(meta.get("programs", {}).get("train", []))
    return ds.where(lambda h: h not in trained)


BUCKETS = (0.0, 0.25, 0.5, 0.8, 1.25, 2.0, float("inf"))  # measured speedup ranges


def error_buckets(model, ds: Dataset) -> list[dict]:
    """Per range of measured speedup: samples, their share, mean APE, their part of the MAPE, the part that
    answering 1.0x would make there, median prediction."""
    import numpy as np

    y = np.asarray(ds.speedups)
    pred = predict_trees(model, ds.trees)
    ape, ape_1 = np.abs(pred - y) / y, np.abs(1.0 - y) / y
    out = []
    for lo, hi in zip(BUCKETS[:-1], BUCKETS[1:], strict=True):
        m = (y >= lo) & (y < hi)
        if m.any():
            out.append({"speedup": f"[{lo}, {hi})", "samples": int(m.sum()), "share": round(float(m.mean()), 3),
                        "mape": round(float(ape[m].mean()), 3), "of_total": round(float(ape[m].sum() / len(y)), 3),
                        "always_1_of_total": round(float(ape_1[m].sum() / len(y)), 3),
                        "median_prediction": round(float(np.median(pred[m])), 3)})
    return out


SLOW, ALARM, NEUTRAL = 0.25, 0.5, 0.8  # measured slower than SLOW; answered under ALARM; measured at least NEUTRAL


def extremes(models: dict, ds: Dataset) -> dict:
    """{"samples", "slow", model or "always_1": {"called_slow", "of_total", "mape_without", "false_alarms"}}
    on `ds` (module docstring)."""
    import numpy as np

    y = np.asarray(ds.speedups)
    slow = y < SLOW
    out: dict = {"samples": int(len(y)), "slow": int(slow.sum())}
    answers = {"always_1": np.ones_like(y), **{m: predict_trees(model, ds.trees) for m, model in models.items()}}
    for m, pred in answers.items():
        ape = np.abs(pred - y) / y
        out[m] = {"called_slow": int((pred[slow] < ALARM).sum()),
                  "of_total": round(float(ape[slow].sum() / max(len(y), 1)), 4),
                  "mape_without": round(float(ape[~slow].mean()), 4) if (~slow).any() else None,
                  "false_alarms": int(((pred < ALARM) & (y >= NEUTRAL)).sum())}
    return out


STEADY, UNSTEADY = 1.05, 1.15  # a program's identity row within 5% of 1.0x; past 15%


def identity_speedups(rows: list[dict], programs: set[str]) -> dict[str, float]:
    """{program hash: the measured speedup of its untransformed schedule} for these programs: the same executable
    timed against itself in alternation, so any distance from 1.0x is the timing's noise on that program."""
    return {r["hash"]: float(r["speedup"]) for r in rows if r["hash"] in programs and not r["schedule"]}


def by_program(rows: list[dict], models: dict, ds: Dataset, worst: float = 0.1) -> dict:
    """{"programs", "steady", "unsteady", model or "always_1": {"worst_share", "steady", "unsteady"}} on `ds`
    (module docstring): the share of the MAPE that the `worst` fraction of the programs (by their own MAPE)
    makes, and the MAPE on the steady and the unsteady programs (`STEADY`, `UNSTEADY`)."""
    import numpy as np

    y, programs = np.asarray(ds.speedups), np.asarray(ds.programs)
    ident = identity_speedups(rows, set(ds.programs))
    noise = np.array([abs(np.log(ident[h])) if h in ident else np.nan for h in programs])  # nan: neither
    steady, unsteady = noise <= np.log(STEADY), noise > np.log(UNSTEADY)
    out: dict = {"programs": len(set(ds.programs)), "steady": len(set(programs[steady])),
                 "unsteady": len(set(programs[unsteady]))}
    answers = {"always_1": np.ones_like(y), **{m: predict_trees(model, ds.trees) for m, model in models.items()}}
    for m, pred in answers.items():
        ape = np.abs(pred - y) / y
        per = sorted((ape[programs == h].sum() for h in set(ds.programs)), reverse=True)
        out[m] = {"worst_share": round(float(sum(per[: max(1, round(worst * len(per)))]) / max(ape.sum(), 1e-12)), 3),
                  "steady": round(float(ape[steady].mean()), 4) if steady.any() else None,
                  "unsteady": round(float(ape[unsteady].mean()), 4) if unsteady.any() else None}
    return out


def touches_innermost(row: dict) -> bool:
    """The schedule interchanges a statement's loops at or below its original second-innermost level (after
    tiling that may be a tile loop: a syntactic test, cheap and close enough to find the kind)."""
    depth = {s["name"]: len(s["iterators"]) for s in row["program"]["statements"]}
    return any(t["kind"] == "interchange" and t["level"] >= depth[t["stmt"]] - 2 for t in row["schedule"])


def _splits(rows: list[dict], sets: dict[str, Dataset], models: dict, min_baseline_ms: float):
    """For the train and test programs: (split, its rows, keep (a mask: programs >= `min_baseline_ms`), measured
    speedups, {model: predictions}), the rows in the order of `sets[split]`'s samples."""
    import numpy as np

    from llmopt.poly.costmodel.train import split_of

    cfg, longer = TrainConfig(), {r["hash"] for r in at_least(rows, min_baseline_ms)}
    for split in ("train", "test"):
        # featurize_rows keeps each split's rows in order, so the flags line up with the dataset's samples
        mine = [r for r in rows if split_of(r["hash"], cfg.fractions, cfg.seed) == split]
        if not mine:  # e.g. a retest folder holds test programs only
            continue
        keep = np.array([r["hash"] in longer for r in mine], dtype=bool)
        ds = sets[split]
        yield split, mine, keep, np.asarray(ds.speedups), {m: predict_trees(model, ds.trees) for m, model in models.items()}


def by_kind(rows: list[dict], sets: dict[str, Dataset], models: dict, min_baseline_ms: float) -> dict:
    """{split: {kind: {"samples", "always_1", model: {"mape", "log_corr"}}}} on the train and test programs."""
    import numpy as np

    out = {}
    for split, mine, keep, y, preds in _splits(rows, sets, models, min_baseline_ms):
        inner = np.array([touches_innermost(r) for r in mine], dtype=bool)
        out[split] = {kind: _kind_scores(y[keep & sel], {m: p[keep & sel] for m, p in preds.items()})
                      for kind, sel in (("innermost interchange", inner), ("the rest", ~inner))}
    return out


NEUTRAL_RANGE = BUCKETS[3:5]  # measured speedups a schedule hardly moves: the buckets' middle one, 0.8-1.25x


def neutral(rows: list[dict], sets: dict[str, Dataset], models: dict, min_baseline_ms: float) -> dict:
    """{split: {kind: {"samples", "neutral", "always_1_of_total", model: {"of_total", "mape"}}}} on the train and
    test programs: for all schedules and for those holding each kind of transformation, the part of the split's
    MAPE its neutral rows (`NEUTRAL_RANGE`) make, and their own MAPE.  Where answering 1.0x makes less there, the
    model moves where nothing changes; on its own training rows too, the features do not tell those rows apart."""
    import numpy as np

    lo, hi = NEUTRAL_RANGE
    out = {}
    for split, mine, keep, y, preds in _splits(rows, sets, models, min_baseline_ms):
        n, calm = max(int(keep.sum()), 1), keep & (y >= lo) & (y < hi)
        kinds = {"all": keep}
        for name in sorted({t["kind"] for r in mine for t in r["schedule"]}):
            kinds[name] = keep & np.array([any(t["kind"] == name for t in r["schedule"]) for r in mine], dtype=bool)
        out[split] = {}
        for name, sel in kinds.items():
            m = sel & calm
            out[split][name] = {"samples": int(sel.sum()), "neutral": int(m.sum()), **_part(y, preds, m, n)}
    return out


def _part(y, preds: dict, m, n: int) -> dict:
    """{"always_1_of_total", model: {"of_total", "mape"}}: the part of a split's MAPE (over its `n` rows) that the
    rows of mask `m` make, answering 1.0x and by each model's predictions, and the models' MAPE on them (None on
    no rows)."""
    import numpy as np

    out: dict = {"always_1_of_total": round(float((np.abs(1 - y[m]) / y[m]).sum() / n), 4)}
    for model, p in preds.items():
        ape = np.abs(p[m] - y[m]) / y[m]
        out[model] = {"of_total": round(float(ape.sum() / n), 4),
                      "mape": round(float(ape.mean()), 4) if m.any() else None}
    return out


SHARES = (0.0, 0.01, 0.2, 0.9, 1.0)  # ranges of `features.changed_share`; the last one includes 1.0


def by_share(rows: list[dict], sets: dict[str, Dataset], models: dict, min_baseline_ms: float) -> dict:
    """{split: {range: {"samples", "always_1", "always_1_of_total", model: {"mape", "of_total"}}}} on the train
    and test programs' transformed schedules, by the share of the work they change (module docstring); "of_total"
    is the part of the split's MAPE (all its rows, identities included) the range makes."""
    import numpy as np

    from llmopt.poly.costmodel.features import changed_share

    out = {}
    for split, mine, keep, y, preds in _splits(rows, sets, models, min_baseline_ms):
        share = np.array([changed_share(t) for t in sets[split].trees])
        moved = keep & np.array([bool(r["schedule"]) for r in mine], dtype=bool)
        n, out[split] = max(int(keep.sum()), 1), {}
        for lo, hi in zip(SHARES[:-1], SHARES[1:], strict=True):
            m = moved & (share >= lo) & ((share < hi) | (hi == SHARES[-1]))
            if not m.any():
                continue
            out[split][f"[{lo:g}, {hi:g}{']' if hi == SHARES[-1] else ')'}"] = {
                "samples": int(m.sum()), "always_1": round(always_1_mape(y[m]), 4), **_part(y, preds, m, n)}
    return out


def _kind_scores(y, preds: dict) -> dict:
    import numpy as np

    out = {"samples": int(len(y)), "always_1": round(always_1_mape(y), 4) if len(y) else None}
    for m, p in preds.items():
        corr = np.corrcoef(np.log(p), np.log(y))[0, 1] if len(y) > 1 and p.std() > 0 else float("nan")
        out[m] = {"mape": round(float(np.mean(np.abs(p - y) / y)), 4), "log_corr": round(float(corr), 3)}
    return out


def always_1_mape(speedups) -> float:
    """The MAPE of answering 1.0x for every one of these speedups: the bar on data where most schedules change little."""
    import numpy as np

    y = np.asarray(speedups)
    return float(np.mean(np.abs(1.0 - y) / y)) if len(y) else float("nan")


def identity_pick(rows: list[dict], ds: Dataset) -> float:
    """The pick ratio of always answering the identity schedule, on the programs of `ds`."""
    import numpy as np

    programs = set(ds.programs)
    best: dict[str, float] = {}
    ident: dict[str, float] = {}
    for r in rows:
        if r["hash"] in programs:
            y = max(float(r["speedup"]), MIN_SPEEDUP)
            best[r["hash"]] = max(best.get(r["hash"], 0.0), y)
            if not r["schedule"]:
                ident[r["hash"]] = y
    return float(np.exp(np.mean([np.log(ident[h] / best[h]) for h in ident]))) if ident else float("nan")


if __name__ == "__main__":
    sys.exit(main())
