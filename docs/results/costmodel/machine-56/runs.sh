#!/bin/bash
# The fifty-sixth session's runs on data/poly-costmodel-fcaa-5ms (labels of VM fcaa1a686a5a63e3, unchanged since
# 638d9b0: 1,170 programs) from the repo root: the fifty-third session's recipe (fork term, memory view,
# --validation-share 0.05) at seeds 0-2 ("base") and their ensembles, the same network at half, a quarter and twice
# A.1's width ("w05", "w025", "w2": --width), scored on the fcaa held-out programs with the neutral rows' part and
# the schedules by the share of the work they change split out (costmodel_compare --neutral --by-share), and two
# probes of where base-s0's error is not (probes.py).  Training times nothing, so any machine can rerun it (this
# session's VM was fa56369926b2de1f, an AMD EPYC; one run alone ~1.3 min an epoch, w2 ~2 min).
set -e
source "$(dirname "$0")/../fcaa_recipe.sh"
D=$(folder_at 638d9b0)
O=runs/s56
mkdir -p $O
run_recipe base 0; wait
run_recipe base 1; run_recipe base 2; wait
run_recipe w05 0 --width 0.5; run_recipe w025 0 --width 0.25; wait
run_recipe w2 0 --width 2; wait
$E $O/base-s{0,1}/costmodel.pt --out $O/base-ens2.pt
$E $O/base-s{0,1,2}/costmodel.pt --out $O/base-ens3.pt
# --old-seeds 9502: "test, seeds < 9502" is the fifty-first session's 196 test programs, as in machine-53 to -55
C="python scripts/costmodel_compare.py $D --min-baseline-ms 5 --old-seeds 9502 --cache $O/base-s0/features.pkl"
$C $O/base-s{0,1,2}/costmodel.pt $O/w05-s0/costmodel.pt $O/w025-s0/costmodel.pt $O/base-ens2.pt $O/base-ens3.pt \
  --neutral --by-share > $O/compare.json
$C $O/w2-s0/costmodel.pt $O/base-s0/costmodel.pt --neutral > $O/compare-w2.json
python docs/results/costmodel/machine-56/probes.py $D $O/base-s0/costmodel.pt $O/base-s0/features.pkl > $O/probes.json
cp $O/compare.json $O/compare-w2.json $O/probes.json docs/results/costmodel/machine-56/
for m in base-s0 base-s1 base-s2 w05-s0 w025-s0 w2-s0; do
  cp $O/$m/metrics.json docs/results/costmodel/machine-56/metrics-$m.json
done
