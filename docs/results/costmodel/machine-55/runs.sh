#!/bin/bash
# The fifty-fifth session's runs on data/poly-costmodel-fcaa-5ms (labels of VM fcaa1a686a5a63e3, unchanged since
# 638d9b0: 1,170 programs) from the repo root: the fifty-third session's recipe (fork term, memory view,
# --validation-share 0.05) rerun as the baseline ("base"), trained longer ("ep22": 22 epochs of the one-cycle
# schedule instead of 15, the training programs having doubled since 15 was chosen), and with a moving average
# of the weights validated and saved ("ema": --ema 0.999), scored on the fcaa held-out programs with the neutral
# rows' part split out (costmodel_compare --neutral).  Training times nothing, so any machine can rerun it (this
# session's VM was 9e8597937d27df39, an Intel Xeon; two runs side by side, one thread each, ~3 min an epoch).
set -e
source "$(dirname "$0")/../fcaa_recipe.sh"
D=$(folder_at 638d9b0)
O=runs/s55
mkdir -p $O
run_recipe base 0; wait
run_recipe ep22 0 --epochs 22; run_recipe ema 0 --ema 0.999; wait
run_recipe ema 1 --ema 0.999; wait
$E $O/base-s0/costmodel.pt $O/ema-s1/costmodel.pt --out $O/mix-ens2.pt
$E $O/ema-s{0,1}/costmodel.pt --out $O/ema-ens2.pt
$E $O/base-s0/costmodel.pt $O/ema-s{0,1}/costmodel.pt $O/ep22-s0/costmodel.pt --out $O/all-ens4.pt
# --old-seeds 9502: "test, seeds < 9502" is the fifty-first session's 196 test programs, as in machine-53 and -54
C="python scripts/costmodel_compare.py $D --min-baseline-ms 5 --old-seeds 9502 --cache $O/base-s0/features.pkl"
$C $O/base-s0/costmodel.pt $O/ep22-s0/costmodel.pt $O/ema-s{0,1}/costmodel.pt $O/mix-ens2.pt $O/ema-ens2.pt \
  $O/all-ens4.pt --by-kind --neutral > $O/compare.json
cp $O/compare.json docs/results/costmodel/machine-55/
for m in base-s0 ep22-s0 ema-s0 ema-s1; do
  cp $O/$m/metrics.json docs/results/costmodel/machine-55/metrics-$m.json
done
