#!/bin/bash
# The forty-eighth session's runs on data/poly-costmodel-fcaa-5ms (labels of VM fcaa1a686a5a63e3), from the repo
# root.  The forty-sixth/forty-seventh sessions' fcaa-alone recipe on the folder as of commit 5600fdd (635
# programs; later commits add more, so the folder is taken from that commit), seeds 0-2 and their ensembles,
# scored beside the forty-seventh session's models (runs/s47/sc-s*, trained on the folder as of commit 96d0551;
# rebuilt first when missing, from that commit's folder) on the same held-out programs: all of them, and those of
# seeds < 8000.  Training times nothing, so any machine can rerun it.
set -e
# The recipe (T, R0: R before the parallel view, E) and folder_at, rebuild_pair.
source "$(dirname "$0")/../fcaa_recipe.sh"
rebuild_pair runs/s47 96d0551
D=$(folder_at 5600fdd)
# The features of rows seen before come from the forty-seventh session's cache (isl work, not a result).
for s in 0 1; do
  mkdir -p runs/s48/sc-s$s; [ -f runs/s48/sc-s$s/features.pkl ] || cp runs/s47/sc-s0/features.pkl runs/s48/sc-s$s/
done
# Two runs side by side (one thread each on the 2-core machine); the epoch lines kept for the learning curves.
for s in 0 1; do $T $D --out runs/s48/sc-s$s $R0 --init-seed $s > runs/s48/sc-s$s.log 2>&1 & done; wait
python -m llmopt.poly.costmodel.ensemble runs/s48/sc-s0/costmodel.pt runs/s48/sc-s1/costmodel.pt \
  --out runs/s48/sc-ens.pt
python scripts/costmodel_compare.py $D runs/s47/sc-s0/costmodel.pt runs/s47/sc-s1/costmodel.pt runs/s47/sc-ens.pt \
  runs/s48/sc-s0/costmodel.pt runs/s48/sc-s1/costmodel.pt runs/s48/sc-ens.pt --min-baseline-ms 5 --old-seeds 8000 \
  --by-kind --cache runs/s48/sc-s0/features.pkl > docs/results/costmodel/machine-48/compare-fcaa.json
for m in sc-s0 sc-s1; do cp runs/s48/$m/metrics.json docs/results/costmodel/machine-48/metrics-$m.json; done
# A third seed (and the three-member ensemble), and seed 0 for 25 epochs instead of 15 (is the recipe's length
# still right on more programs?).
for m in sc-s2 ep25-s0; do
  mkdir -p runs/s48/$m; [ -f runs/s48/$m/features.pkl ] || cp runs/s48/sc-s0/features.pkl runs/s48/$m/
done
$T $D --out runs/s48/sc-s2 $R0 --init-seed 2 > runs/s48/sc-s2.log 2>&1 &
$T $D --out runs/s48/ep25-s0 ${R0/--epochs 15/--epochs 25} --init-seed 0 > runs/s48/ep25-s0.log 2>&1 &
wait
python -m llmopt.poly.costmodel.ensemble runs/s48/sc-s0/costmodel.pt runs/s48/sc-s1/costmodel.pt \
  runs/s48/sc-s2/costmodel.pt --out runs/s48/sc-ens3.pt
python scripts/costmodel_compare.py $D runs/s48/sc-s2/costmodel.pt runs/s48/sc-ens3.pt runs/s48/ep25-s0/costmodel.pt \
  --min-baseline-ms 5 --old-seeds 8000 --by-kind --cache runs/s48/sc-s0/features.pkl \
  > docs/results/costmodel/machine-48/compare-fcaa-more.json
for m in sc-s2 ep25-s0; do cp runs/s48/$m/metrics.json docs/results/costmodel/machine-48/metrics-$m.json; done
