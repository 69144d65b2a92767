#!/bin/bash
# The sixty-fifth session's runs, from the repo root, on VM 3d1219c7c4c5404a (Intel Xeon, 2 cores, no device).
# 1. The package's trees alone (`python -m llmopt.poly.costmodel.boosted` without --network, new) on
#    data/poly-costmodel-fcaa-5ms as of 3f5a413 (1,443 programs of VM fcaa1a686a5a63e3): the recipe's split
#    (--validation-share 0.05: fractions 0.75 / 0.05, seed 0) and its ensemble's fork cost (runs/s59/base-ens4.pt:
#    815.24), three staged L1 seeds, power 1.08 -- what the blend with the four networks answers (its fitted weight
#    has been 1.0 since the sixty-second session), without training them.  ~12 minutes on 2 threads.
# 2. Paper 002's Table 2 and the per-benchmark MAPE with that file, then with the shipped network, on this machine:
#    BSE measured once here (bse-900s-3d1219c7.json) and reused.  Timed: run alone, nothing else on the machine.
set -e
source "$(dirname "$0")/../fcaa_recipe.sh"
D=$(folder_at 3f5a413)
H=docs/results/costmodel/machine-65
mkdir -p runs/s65
# the features of machine-64/matrices.py, when that ran: the same rows, the same format
[ -f runs/s62/invariance.features.pkl ] && [ ! -f runs/s65/trees.features.pkl ] && \
  cp runs/s62/invariance.features.pkl runs/s65/trees.features.pkl
[ -f runs/s65/trees.pt ] || python -m llmopt.poly.costmodel.boosted $D --fractions 0.75 0.05 \
  --fork-cost 815.2423706054688 --scored-min-baseline-ms 5 --threads 2 --out runs/s65/trees.pt > $H/trees.json
EVAL="python -m eval.costmodel_eval --budget-seconds 900 --schedules 8 --repeats 10 --with-agent \
  --bse-reference docs/results/costmodel/bse-900s-3d1219c7.json"
$EVAL --model runs/s65/trees.pt --data $D --out $H/trees
$EVAL --model llmopt/poly/data/costmodel.pt --data data/poly-costmodel --out $H/shipped
# A second run of the trees, after the features memo (the same answers, a 4% cheaper model part), run last.
$EVAL --model runs/s65/trees.pt --data $D --out $H/trees-r2
python docs/results/costmodel/machine-65/view_gain.py runs/s65/trees.pt > docs/results/costmodel/machine-65/view_gain.json
