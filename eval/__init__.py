"""Batch evaluation of pass-list methods against -Oz: sampling curves, tables, plots, code quality.

    python -m eval.cli --dataset data/DIR:test --methods greedy,priority,random,coreset,autotuner \
        --samples 1,3,5,10,30,100 --out runs/eval

Modules: `inputs` (what is evaluated), `methods` (what proposes pass lists), `runner` (measure,
resumable JSONL), `metrics` (the numbers), `tables` / `plots` / `report` (what is written),
`quality` (generated-IR quality), `cli`.
"""
