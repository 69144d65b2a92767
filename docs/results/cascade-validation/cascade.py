"""Simulate a cascade from per-function eval records: the tiny model alone where a gate says it suffices, the
ensemble elsewhere.  PS on one function depends only on the decoder, so a cascade's result on a function is
exactly one of the two records'.  Gates: tiny's best-list probability (its first PS sample's logprob), prompt
tokens.  Cost: tiny always + base's share where the ensemble runs (base prefill ~ tokens^1.2).

    PYTHONPATH=. python docs/results/cascade-validation/cascade.py   # (reads this folder's records)

The records are `llmopt eval --dataset data/llmopt-v3:validation --seed 0 --methods priority_nooz --samples
1,3,10,30 --threads 2 --no-objsize` of `--model llmopt/model/default/tiny` and of the shipped ensemble."""

import gzip
import json
import math
from collections.abc import Callable
from pathlib import Path

from llmopt.dataset import read_rows

HERE = Path(__file__).parent
KS = (1, 3, 10, 30)


def records(path: Path) -> dict[str, list[dict]]:
    rows = (json.loads(line) for line in gzip.open(path, "rt"))
    return {r["fid"]: r["samples"] for r in rows if r["method"] == "priority_nooz"}


def saved(samples: list[dict], k: int, oz: int) -> int:
    counts = [s["instcount"] for s in samples[:k] if s.get("error") is None and s.get("instcount") is not None]
    return oz - min([oz, *counts])


def main() -> None:
    baseline = (json.loads(line) for line in open(HERE / "baseline.jsonl"))
    oz = {r["fid"]: r["instcount_oz"] for r in baseline}
    tiny, ens = records(HERE / "records-tiny.jsonl.gz"), records(HERE / "records-ensemble.jsonl.gz")
    tokens = {r["ir_hash"]: r["n_tokens"] for r in read_rows("data/llmopt-v3", "validation")}
    fids = sorted(set(tiny) & set(ens) & set(oz))
    print("functions", len(fids), "missing tokens", sum(f not in tokens for f in fids))
    work = {f: tokens.get(f, 1000) ** 1.2 for f in fids}

    def total(use_ensemble: Callable[[str], bool]) -> tuple[list[int], float, float]:
        use = {f: use_ensemble(f) for f in fids}
        rows = [sum(saved((ens if use[f] else tiny)[f], k, oz[f]) for f in fids) for k in KS]
        cost = sum(work[f] for f in fids if use[f]) / sum(work.values())
        return rows, sum(use.values()) / len(fids), cost

    print("tiny    ", total(lambda f: False))
    print("ensemble", total(lambda f: True))
    top = {f: tiny[f][0]["logprob"] for f in fids}
    for tau in (0.1, 0.15, 0.2, 0.25, 0.3, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95):
        r, share, cost = total(lambda f, tau=tau: top[f] < math.log(tau))
        print(f"gate p_top < {tau}: saved {r}, ensemble on {share:.2f} of functions, {cost:.2f} of base's prefill work")
    for cut in (256, 512, 1024, 2048):
        r, share, cost = total(lambda f, cut=cut: tokens.get(f, 1000) <= cut)
        print(f"gate tokens <= {cut}: saved {r}, ensemble on {share:.2f}, {cost:.2f} of base's work")


if __name__ == "__main__":
    main()
