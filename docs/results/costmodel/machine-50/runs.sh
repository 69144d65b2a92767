#!/bin/bash
# The fiftieth session's runs on data/poly-costmodel-fcaa-5ms (labels of VM fcaa1a686a5a63e3), from the repo root:
# the forty-ninth session's best recipe (R with --validation-share 0.05) on the same folder (as of commit 202c7f0,
# 813 programs), now reading the parallel view (the default features), with and without the fork term
# (--fork-term), seeds 0 and 1 and their ensembles, scored beside the forty-ninth session's models
# (runs/s49/v05-s*, the traffic view; rebuilt first when missing) on the same held-out programs.  Training times
# nothing, so any machine can rerun it.
set -e
# The recipe (T, R, R0: R before the parallel view, E) and folder_at.
source "$(dirname "$0")/../fcaa_recipe.sh"
D=$(folder_at 202c7f0)
if [ ! -f runs/s49/v05-ens.pt ]; then
  for s in 0 1; do $T $D --out runs/s49/v05-s$s $R0 --validation-share 0.05 --init-seed $s & done; wait
  $E runs/s49/v05-s0/costmodel.pt runs/s49/v05-s1/costmodel.pt --out runs/s49/v05-ens.pt
fi
# Two runs side by side (one thread each on the 2-core machine); the epoch lines kept for the learning curves.
for s in 0 1; do
  $T $D --out runs/s50/fork-s$s $R --fork-term --validation-share 0.05 --init-seed $s > runs/s50/fork-s$s.log 2>&1 &
done; wait
$E runs/s50/fork-s0/costmodel.pt runs/s50/fork-s1/costmodel.pt --out runs/s50/fork-ens.pt
# The features of these rows come from the fork runs' cache (isl work, not a result).
for s in 0 1; do mkdir -p runs/s50/par-s$s; [ -f runs/s50/par-s$s/features.pkl ] || cp runs/s50/fork-s0/features.pkl runs/s50/par-s$s/; done
for s in 0 1; do
  $T $D --out runs/s50/par-s$s $R --validation-share 0.05 --init-seed $s > runs/s50/par-s$s.log 2>&1 &
done; wait
$E runs/s50/par-s0/costmodel.pt runs/s50/par-s1/costmodel.pt --out runs/s50/par-ens.pt
python scripts/costmodel_compare.py $D runs/s49/v05-s0/costmodel.pt runs/s49/v05-s1/costmodel.pt runs/s49/v05-ens.pt \
  runs/s50/par-s0/costmodel.pt runs/s50/par-s1/costmodel.pt runs/s50/par-ens.pt \
  runs/s50/fork-s0/costmodel.pt runs/s50/fork-s1/costmodel.pt runs/s50/fork-ens.pt \
  --min-baseline-ms 5 --old-seeds 8879 --by-kind --cache runs/s50/fork-s0/features.pkl \
  > docs/results/costmodel/machine-50/compare-fcaa.json
for m in par-s0 par-s1 fork-s0 fork-s1; do cp runs/s50/$m/metrics.json docs/results/costmodel/machine-50/metrics-$m.json; done
# The rows bucketed by forks per untransformed iteration (the fork term's load) and the fork cost each bucket implies.
python scripts/costmodel_fork_count.py $D --cache runs/s50/fork-s0/features.pkl > docs/results/costmodel/machine-50/fork-count.json
# The fork-term recipe on the folder as grown this session (commit 4edc645, 914 programs), beside the runs above.
G=$(folder_at 4edc645)
for s in 0 1; do mkdir -p runs/s50/fork914-s$s; [ -f runs/s50/fork914-s$s/features.pkl ] || cp runs/s50/fork-s0/features.pkl runs/s50/fork914-s$s/; done
for s in 0 1; do
  $T $G --out runs/s50/fork914-s$s $R --fork-term --validation-share 0.05 --init-seed $s > runs/s50/fork914-s$s.log 2>&1 &
done; wait
$E runs/s50/fork914-s0/costmodel.pt runs/s50/fork914-s1/costmodel.pt --out runs/s50/fork914-ens.pt
python scripts/costmodel_compare.py $G runs/s50/fork-s0/costmodel.pt runs/s50/fork-s1/costmodel.pt runs/s50/fork-ens.pt \
  runs/s50/fork914-s0/costmodel.pt runs/s50/fork914-s1/costmodel.pt runs/s50/fork914-ens.pt \
  --min-baseline-ms 5 --old-seeds 9292 --by-kind --cache runs/s50/fork914-s0/features.pkl \
  > docs/results/costmodel/machine-50/compare-fcaa-914.json
for m in fork914-s0 fork914-s1; do cp runs/s50/$m/metrics.json docs/results/costmodel/machine-50/metrics-$m.json; done
