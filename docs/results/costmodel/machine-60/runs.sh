#!/bin/bash
# The sixtieth session's runs on data/poly-costmodel-fcaa-5ms as of 3f5a413 (1,443 programs of VM fcaa1a686a5a63e3),
# from the repo root, on VM 508e03c34671a5a4 (Intel Xeon): gradient-boosted trees on the network's own inputs
# (trees.py; `pip install lightgbm`, not a dependency), alone and blended with the recipe's seeds 0-3 and their
# ensembles.  Seeds 0-1 are the fifty-ninth session's runs (machine-59/runs.sh, into the same runs/s59); a finished
# run only re-reports, so the script resumes where it stopped.  Nothing is timed: any machine reruns it.
set -e
source "$(dirname "$0")/../fcaa_recipe.sh"
D=$(folder_at 3f5a413)
O=runs/s59
H=docs/results/costmodel/machine-60
mkdir -p $O runs/s60
python -m pip install -q lightgbm
[ -f $O/base-s1/costmodel.pt ] || bash docs/results/costmodel/machine-59/runs.sh
run_recipe base 2; run_recipe base 3; wait
$E $O/base-s{0,1,2}/costmodel.pt --out $O/base-ens3.pt
$E $O/base-s{0,1,2,3}/costmodel.pt --out $O/base-ens4.pt
A="$D $O/base-s0/features.pkl --matrices runs/s60/work"
# The first probe (early-stopped on the validation programs, 15 and 63 leaves, without the work-weighted means).
python $H/trees.py $A --plain --leaves 15 63 $O/base-s0/costmodel.pt $O/base-s1/costmodel.pt $O/base-ens2.pt \
  > runs/s60/trees-plain.json
# Sizes, early-stopped, then variants compared on the validation programs only (255 leaves x 400 rounds kept).
python $H/trees.py $A --leaves 63 255 > runs/s60/trees-work.json
python $H/trees.py $A --leaves 255 --rounds 800 --lr 0.015 --min-leaf 100 --feature-fraction 0.15 \
  > runs/s60/trees-v-a.json
python $H/trees.py $A --leaves 511 --rounds 400 --min-leaf 20 --feature-fraction 0.5 > runs/s60/trees-v-b.json
# Three bagging seeds of a fixed size (the validation programs then fit only the blend); 255 leaves kept (validation
# 0.1721 against 511 leaves' 0.1727).
python $H/trees.py $A --leaves 255 --rounds 400 --seeds 3 --answers runs/s60/trees-255x3.npz \
  > runs/s60/trees-255x3.json
python $H/trees.py $A --leaves 511 --rounds 400 --min-leaf 20 --feature-fraction 0.5 --seeds 3 \
  --answers runs/s60/trees-511x3.npz > runs/s60/trees-511x3.json
M="$O/base-s0/costmodel.pt $O/base-s1/costmodel.pt $O/base-s2/costmodel.pt $O/base-s3/costmodel.pt"
M="$M $O/base-ens2.pt $O/base-ens3.pt $O/base-ens4.pt"
python $H/trees.py $A --leaves 255 --answers runs/s60/trees-255x3.npz $M > runs/s60/blend.json
# One seed of the kept size, and the same trained on the training programs' rows under 5 ms too (the network's
# training drops them); better on validation (0.1708 against 0.1727), so three seeds of it and their blends.
python $H/trees.py $A --leaves 255 --rounds 400 $O/base-ens4.pt > runs/s60/trees-255x1.json
B="$D $O/base-s0/features.pkl --matrices runs/s60/all --all-training-rows"
python $H/trees.py $B --leaves 255 --rounds 400 $O/base-ens4.pt > runs/s60/trees-all.json
python $H/trees.py $B --leaves 255 --rounds 400 --seeds 3 --answers runs/s60/trees-all-255x3.npz $M \
  > runs/s60/blend-all.json
cp runs/s60/trees-{plain,work,v-a,v-b,255x3,511x3,255x1,all}.json runs/s60/blend{,-all}.json $H/
for m in base-s2 base-s3; do cp $O/$m/metrics.json $H/metrics-$m.json; done
