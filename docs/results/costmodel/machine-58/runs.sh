#!/bin/bash
# The fifty-eighth session's runs on data/poly-costmodel-fcaa-5ms as the fifty-seventh session left it (3f5a413:
# 1,443 programs of VM fcaa1a686a5a63e3, 273 more than the 638d9b0 folder every run since the fifty-third session
# used), from the repo root: the fifty-third session's recipe (fork term, memory view, --validation-share 0.05)
# at seeds 0-2 ("base": does the learning curve hold at ~1,040 training programs?) and the same with --augment 1
# ("aug1": one relabelled program per training program that was measured under a single interchange, 263
# programs and 8,094 rows more, no new runs), their ensembles, scored on all of this folder's held-out programs and
# on the 234 that the fifty-third to fifty-sixth sessions scored (test programs of seeds < 10085).  Training times
# nothing, so any machine can rerun it (this session's VM was d2d04174b7082bc7, an Intel Xeon; two runs side by
# side ~2.7 min an epoch each).  A finished run only re-reports, so the script resumes where it stopped.
set -e
source "$(dirname "$0")/../fcaa_recipe.sh"
D=$(folder_at 3f5a413)
O=runs/s58
mkdir -p $O
run_recipe base 0; run_recipe base 1; wait
run_recipe aug1 0 --augment 1; run_recipe aug1 1 --augment 1; wait
run_recipe base 2; run_recipe aug1 2 --augment 1; wait
for m in base aug1; do
  $E $O/$m-s{0,1}/costmodel.pt --out $O/$m-ens2.pt
  $E $O/$m-s{0,1,2}/costmodel.pt --out $O/$m-ens3.pt
done
$E $O/base-s{0,1,2}/costmodel.pt $O/aug1-s{0,1,2}/costmodel.pt --out $O/both-ens6.pt
# --old-seeds 10085: "test, seeds < 10085" is the 234 test programs >= 5 ms of the 638d9b0 folder (sessions 53-56)
C="python scripts/costmodel_compare.py $D --min-baseline-ms 5 --old-seeds 10085 --cache $O/base-s0/features.pkl"
$C $O/base-s{0,1,2}/costmodel.pt $O/aug1-s{0,1,2}/costmodel.pt $O/base-ens{2,3}.pt $O/aug1-ens{2,3}.pt \
  $O/both-ens6.pt --by-kind --neutral > $O/compare.json
cp $O/compare.json docs/results/costmodel/machine-58/
for m in base-s0 base-s1 base-s2 aug1-s0 aug1-s1 aug1-s2; do
  cp $O/$m/metrics.json docs/results/costmodel/machine-58/metrics-$m.json
done
