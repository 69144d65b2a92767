#!/usr/bin/env bash
# Train the `tiny` preset on the dataset under data/ (resumable: rerun after an interruption) and export it
# to llmopt/model/default/tiny/ (the shipped ensemble's first member) with a generated model card.  Usage:
#   scripts/train_default_model.sh [DATA_DIR] [--set max_steps=3000 ...] [--export-only]
set -euo pipefail
cd "$(dirname "$0")/.."
exec python -m training.default_model "$@"
