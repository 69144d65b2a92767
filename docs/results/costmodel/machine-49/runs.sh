#!/bin/bash
# The forty-ninth session's runs on data/poly-costmodel-fcaa-5ms (labels of VM fcaa1a686a5a63e3), from the repo
# root.  The fcaa-alone recipe (anchored, normalized, MAPE loss, 15 epochs) on the folder as of commit 202c7f0
# (later commits add more, so the folder is taken from that commit), seeds 0 and 1, with the default split
# (validation 0.2 of the programs) and with --validation-share 0.05 (0.75 of the programs train; the test
# programs, the last 0.2 of the draw, are the same), their ensembles, scored beside the forty-eighth session's
# models (runs/s48/sc-s*, trained on the folder as of 5600fdd; rebuilt first when missing) on the same held-out
# programs.  Training times nothing, so any machine can rerun it.
set -e
# The recipe (T, R0: R before the parallel view, E) and folder_at, rebuild_pair.
source "$(dirname "$0")/../fcaa_recipe.sh"
rebuild_pair runs/s48 5600fdd
D=$(folder_at 202c7f0)
# The features of rows seen before come from the forty-eighth session's cache (isl work, not a result).
for m in sc-s0 sc-s1 v05-s0 v05-s1; do
  mkdir -p runs/s49/$m; [ -f runs/s49/$m/features.pkl ] || cp runs/s48/sc-s0/features.pkl runs/s49/$m/
done
# Two runs side by side (one thread each on the 2-core machine); the epoch lines kept for the learning curves.
for s in 0 1; do $T $D --out runs/s49/sc-s$s $R0 --init-seed $s > runs/s49/sc-s$s.log 2>&1 & done; wait
for s in 0 1; do
  $T $D --out runs/s49/v05-s$s $R0 --validation-share 0.05 --init-seed $s > runs/s49/v05-s$s.log 2>&1 &
done; wait
$E runs/s49/sc-s0/costmodel.pt runs/s49/sc-s1/costmodel.pt --out runs/s49/sc-ens.pt
$E runs/s49/v05-s0/costmodel.pt runs/s49/v05-s1/costmodel.pt --out runs/s49/v05-ens.pt
python scripts/costmodel_compare.py $D runs/s48/sc-s0/costmodel.pt runs/s48/sc-s1/costmodel.pt runs/s48/sc-ens.pt \
  runs/s49/sc-s0/costmodel.pt runs/s49/sc-s1/costmodel.pt runs/s49/sc-ens.pt \
  runs/s49/v05-s0/costmodel.pt runs/s49/v05-s1/costmodel.pt runs/s49/v05-ens.pt \
  --min-baseline-ms 5 --old-seeds 8879 --by-kind --cache runs/s49/sc-s0/features.pkl \
  > docs/results/costmodel/machine-49/compare-fcaa.json
for m in sc-s0 sc-s1 v05-s0 v05-s1; do cp runs/s49/$m/metrics.json docs/results/costmodel/machine-49/metrics-$m.json; done
# How the speedups depend on how many times a parallel region is entered (the next feature's case).
python scripts/costmodel_fork_count.py $D --cache runs/s49/sc-s0/features.pkl > docs/results/costmodel/machine-49/fork-count.json
