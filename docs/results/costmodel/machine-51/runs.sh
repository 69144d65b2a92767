#!/bin/bash
# The fifty-first session's runs on data/poly-costmodel-fcaa-5ms (labels of VM fcaa1a686a5a63e3) as of commit
# 4edc645 (914 programs, the fiftieth session's last folder: 650 training programs with --validation-share 0.05,
# 190 test programs >= 5 ms), from the repo root: the fork-term recipe reading the memory view (--features
# memory), on the features as each commit of the session left them (each run in a git worktree of its commit:
# e36634e the memory view alone, 4b03d10 with the strides, trips and blocks fixed, 343dd20 with mean trips per
# entry; and 343dd20 reading the parallel view, without the memory view), seeds 0 and 1 and their ensembles,
# scored beside the fiftieth session's fork-term models
# (runs/s50/fork914-*, rebuilt when missing) on each commit's features.  Training times nothing, so any machine
# can rerun it.
set -e
source "$(dirname "$0")/../fcaa_recipe.sh"
D=$(folder_at 4edc645)
M=$PWD/runs
if [ ! -f runs/s50/fork914-ens.pt ]; then
  for s in 0 1; do $T $D --out runs/s50/fork914-s$s $R --fork-term --validation-share 0.05 --init-seed $s & done; wait
  $E runs/s50/fork914-s0/costmodel.pt runs/s50/fork914-s1/costmodel.pt --out runs/s50/fork914-ens.pt
fi
# run_at COMMIT NAME FEATURES [MODEL...]: the recipe reading FEATURES on COMMIT's features (runs/s51/NAME-s0, -s1,
# -ens.pt), then those models beside the fiftieth session's (and MODELs) on the same features
# (runs/s51/compare-NAME.json).
run_at() {
  local commit=$1 name=$2 features=$3 tree=/tmp/code-$1; shift 3
  [ -d $tree ] || git worktree add -q $tree $commit
  for s in 0 1; do
    (cd $tree && $T $D --out $M/s51/$name-s$s $R --fork-term --features $features --validation-share 0.05 \
      --init-seed $s) > runs/s51/$name-s$s.log 2>&1 &
  done; wait
  $E runs/s51/$name-s0/costmodel.pt runs/s51/$name-s1/costmodel.pt --out runs/s51/$name-ens.pt
  (cd $tree && python scripts/costmodel_compare.py $D $M/s50/fork914-s0/costmodel.pt $M/s50/fork914-s1/costmodel.pt \
    $M/s50/fork914-ens.pt "$@" $M/s51/$name-s0/costmodel.pt $M/s51/$name-s1/costmodel.pt $M/s51/$name-ens.pt \
    --min-baseline-ms 5 --old-seeds 9292 --by-kind --cache $M/s51/$name-s0/features.pkl) > runs/s51/compare-$name.json
}
mkdir -p runs/s51
run_at e36634e mem memory
run_at 4b03d10 fix memory
run_at 343dd20 tri memory
# the fixed features without the memory view (their cache is tri's: features do not depend on --features)
for s in 0 1; do mkdir -p runs/s51/par9-s$s; cp runs/s51/tri-s0/features.pkl runs/s51/par9-s$s/; done
run_at 343dd20 par9 parallel $M/s51/tri-s0/costmodel.pt $M/s51/tri-s1/costmodel.pt $M/s51/tri-ens.pt
for m in mem fix tri par9; do
  cp runs/s51/compare-$m.json docs/results/costmodel/machine-51/
  for s in 0 1; do cp runs/s51/$m-s$s/metrics.json docs/results/costmodel/machine-51/metrics-$m-s$s.json; done
done
# Featurizing speed against the session's first commit (docs/benchmarks.md), run alone.
[ -d /tmp/before-s51 ] || git worktree add -q /tmp/before-s51 a235e56
python scripts/bench_costmodel_features.py data/poly-costmodel-fa56 --before /tmp/before-s51 --runs 3 \
  > docs/results/costmodel/machine-51/bench-features.json
