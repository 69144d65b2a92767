#!/usr/bin/env bash
# Evaluate the shipped default model (llmopt/model/default) on the committed dataset's test split, side by
# side with random@k, coreset@k and the autotuner's labels, and write the report to docs/results/eval-default/.
# Resumable: rerun after an interruption (records.jsonl + the harness cache keep finished work).
#   scripts/reproduce_eval.sh [DATA_DIR] [extra `llmopt eval` flags, e.g. --limit 500]
# Cost on 2 shared cores with a 4-layer/256-wide model: ~2.6 s per function for priority@100, ~1.7 s for
# nucleus@100, ~6 s per function for --quality-limit (full IR); model-free baselines ~0.2 s. A 300-function
# test split takes ~30 min; pass --limit N (seeded subset, stated in the report) when the split is larger.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA="${1:-}"
if [[ -z "$DATA" || "$DATA" == --* ]]; then
  DATA="$(dirname "$(find data -name test.parquet -print -quit)")"
else
  shift
fi
[[ -f "$DATA/test.parquet" ]] || { echo "no test.parquet under data/: build the dataset first (llmopt datagen)" >&2; exit 2; }
OUT="${OUT:-docs/results/eval-default}"
exec python -m eval.cli --dataset "$DATA:test" --out "$OUT" \
  --methods greedy,nucleus,priority,priority_geomean,priority_branch5,feedback,random,coreset,coreset_cover,autotuner,oz \
  --samples 1,3,5,10,30,100 --seed 0 --quality-limit 100 "$@"
