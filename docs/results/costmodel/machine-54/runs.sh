#!/bin/bash
# The fifty-fourth session's runs on data/poly-costmodel-fcaa-5ms (labels of VM fcaa1a686a5a63e3, unchanged since
# 638d9b0: 1,170 programs) from the repo root: the fifty-third session's recipe (fork term, memory view,
# --validation-share 0.05) rerun as the baseline ("base"), the same with the three fa56 folders' training programs
# as --other-machine data ("fa56": another VM's labels, 719 programs >= 5 ms, 540 of them training programs, which
# train the shared layers through a head of fa56's own and never validate or test), and with the older folders of
# uniform random schedules too ("all": + data/poly-costmodel, unknown and 508e03c3 machines, and
# data/poly-costmodel-large, 508e03c3: five heads' worth of labels by machine id).  Seeds 0-2 (all: 0), two runs
# side by side (one thread each on the 2-core machine), ensembles, scored on the fcaa held-out programs.
# Training times nothing, so any machine can rerun it (this session's VM was fa56369926b2de1f, an AMD EPYC).
set -e
source "$(dirname "$0")/../fcaa_recipe.sh"
D=$(folder_at 638d9b0)
O=runs/s54
FA56="--other-machine data/poly-costmodel-fa56 --other-machine data/poly-costmodel-fa56-5ms --other-machine data/poly-costmodel-fa56-inner"
ALL="$FA56 --other-machine data/poly-costmodel --other-machine data/poly-costmodel-large"
mkdir -p $O
run_recipe base 0; wait
run_recipe fa56 0 $FA56; run_recipe base 1; wait
run_recipe fa56 1 $FA56; run_recipe all 0 $ALL; wait
run_recipe base 2; run_recipe fa56 2 $FA56; wait
$E $O/base-s{0,1}/costmodel.pt --out $O/base-ens2.pt
$E $O/base-s{0,1,2}/costmodel.pt --out $O/base-ens3.pt
$E $O/fa56-s{0,1}/costmodel.pt --out $O/fa56-ens2.pt
$E $O/fa56-s{0,1,2}/costmodel.pt --out $O/fa56-ens3.pt
$E $O/base-s{0,1}/costmodel.pt $O/fa56-s{0,1}/costmodel.pt --out $O/mix-ens4.pt
$E $O/base-s{0,1,2}/costmodel.pt $O/fa56-s{0,1,2}/costmodel.pt --out $O/mix-ens6.pt
# --old-seeds 9502: "test, seeds < 9502" is the fifty-first session's 196 test programs, as in machine-53
C="python scripts/costmodel_compare.py $D --min-baseline-ms 5 --old-seeds 9502 --cache $O/base-s0/features.pkl"
$C $O/base-s{0,1}/costmodel.pt $O/base-ens2.pt $O/fa56-s{0,1}/costmodel.pt $O/fa56-ens2.pt $O/mix-ens4.pt \
  $O/all-s0/costmodel.pt --by-kind --by-program > $O/compare-a.json
$C $O/base-s2/costmodel.pt $O/fa56-s2/costmodel.pt $O/base-ens3.pt $O/fa56-ens3.pt $O/mix-ens6.pt > $O/compare-b.json
cp $O/compare-{a,b}.json docs/results/costmodel/machine-54/
for m in base-s0 base-s1 base-s2 fa56-s0 fa56-s1 fa56-s2 all-s0; do
  cp $O/$m/metrics.json docs/results/costmodel/machine-54/metrics-$m.json
done
