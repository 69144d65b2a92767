"""Several trained cost models as one file: `model.Ensemble`, the mean of their log speedups.

    python -m llmopt.poly.costmodel.ensemble runs/cm-a/costmodel.pt runs/cm-b/costmodel.pt --out E.pt

The members must share the split (`train --seed`, the same fractions), e.g. one recipe trained with several
`--init-seed`s, so that no member trained on a program the others hold out.  They may have seen different
data (a folder that grew between runs): the ensemble's test programs are those some member tested on and
none trained or validated on, its validation programs those some member validated on and none trained on
(`merged_meta`), so `eval.costmodel_eval`'s test MAPE stays on programs no member saw.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

from llmopt.errors import UsageError, run_main
from llmopt.poly.costmodel.boosted import Boosted
from llmopt.poly.costmodel.model import Blend, CostModel, Ensemble, load_model, save_model


def merged_meta(metas: Sequence[dict], paths: Sequence[str]) -> dict:
    """The ensemble's metadata: the members' shared split, the programs none of them trained on (module docstring)."""
    split = {(m.get("seed", 0), tuple(m.get("fractions", (0.6, 0.2)))) for m in metas}
    if len(split) > 1:
        raise UsageError(f"the members were split differently ({sorted(split)}): train them with one --seed")
    seen = {s: set().union(*(m.get("programs", {}).get(s, []) for m in metas)) for s in ("train", "validation", "test")}
    seed, fractions = split.pop()
    return {"data": " | ".join(sorted({str(m.get("data", "")) for m in metas})), "seed": seed,
            "fractions": list(fractions), "members": list(map(str, paths)),
            "init_seeds": [m.get("init_seed", m.get("seed", 0)) for m in metas],
            "loss": metas[0].get("loss"), "min_baseline_ms": metas[0].get("min_baseline_ms", 0.0),
            "programs": {"train": sorted(seen["train"]),
                         "validation": sorted(seen["validation"] - seen["train"]),
                         "test": sorted(seen["test"] - seen["train"] - seen["validation"])}}


def build(paths: Sequence[str | Path]) -> tuple[Ensemble, dict]:
    """The ensemble of the model files at `paths` (an ensemble file among them counts its members) and its metadata."""
    members: list[CostModel] = []
    metas = []
    for p in paths:
        model, meta = load_model(p)
        if isinstance(model, (Blend, Boosted)):
            kind = "a blend with trees" if isinstance(model, Blend) else "trees alone"
            raise UsageError(f"{p} is {kind}: ensemble networks, then blend the ensemble "
                             "(`python -m llmopt.poly.costmodel.boosted`)")
        members += list(model.members) if isinstance(model, Ensemble) else [model]
        metas.append(meta)
    return Ensemble(members).eval(), merged_meta(metas, [str(p) for p in paths])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m llmopt.poly.costmodel.ensemble", description=__doc__.split("\n")[0])
    p.add_argument("models", nargs="+", help="trained cost model files (train's OUT/costmodel.pt)")
    p.add_argument("--out", required=True, help="the ensemble's file (loaded like any cost model)")
    a = p.parse_args(argv)
    if len(a.models) < 2:
        raise UsageError("an ensemble needs two or more models")
    model, meta = build(a.models)
    save_model(model, a.out, meta)
    print(json.dumps({"out": a.out, "members": len(model.members),
                      "programs": {s: len(v) for s, v in meta["programs"].items()}}))
    return 0


if __name__ == "__main__":
    run_main(main)
