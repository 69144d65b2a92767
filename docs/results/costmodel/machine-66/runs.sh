#!/bin/bash
# The sixty-sixth session's runs, from the repo root, on VM 3d1219c7c4c5404a -- an AMD EPYC this time (machine_id
# 4411f8e995df48e9; the sixty-fifth session's Intel Xeon under the same VM id was d2d04174b7082bc7), 2 cores, no device.
# 1. The trees alone rebuilt as in machine-65/runs.sh (~12 minutes on 2 threads; LightGBM 4.7.0 here: validation
#    0.1600, test 0.1593 where 4.6's gave 0.1614 / 0.1595).
# 2. Paper 002's Table 2 with that file, after the exact featurizing shortcuts of commit 61308b5 (isl asked less for
#    carried dependences, bounds and trip counts): BSE measured here first (bse-900s-4411f8e9.json), then the shipped
#    network on the same BSE, then the trees again.  Timed: run alone, nothing else on the machine.
#    BSE takes ~1.6x longer on this EPYC than on the Xeon (blur 718 s against 478 s), so the session ran only the
#    first of the three (the script was stopped after it); the other two are left for a session on this machine.
set -e
source "$(dirname "$0")/../fcaa_recipe.sh"
D=$(folder_at 3f5a413)
H=docs/results/costmodel/machine-66
mkdir -p runs/s66
[ -f runs/s66/trees.pt ] || python -m llmopt.poly.costmodel.boosted $D --fractions 0.75 0.05 \
  --fork-cost 815.2423706054688 --scored-min-baseline-ms 5 --threads 2 --out runs/s66/trees.pt > $H/trees.json
EVAL="python -m eval.costmodel_eval --budget-seconds 900 --schedules 8 --repeats 10 --with-agent \
  --bse-reference docs/results/costmodel/bse-900s-4411f8e9.json"
$EVAL --model runs/s66/trees.pt --data $D --out $H/trees
$EVAL --model llmopt/poly/data/costmodel.pt --data data/poly-costmodel --out $H/shipped
$EVAL --model runs/s66/trees.pt --data $D --out $H/trees-r2
