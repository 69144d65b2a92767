#!/bin/bash
# The fifty-third session's runs on data/poly-costmodel-fcaa-5ms (labels of VM fcaa1a686a5a63e3) as of commit
# 638d9b0 (1,170 programs: the folder's command finished; 1,135 programs >= 5 ms), from the repo root: the
# fifty-first session's best recipe (the fork term reading the memory view) and the same with the rows weighed by
# their program's timing steadiness (--noise-weight 0.15), seeds 0 and 1 each, two side by side (one thread each
# on the 2-core machine), their ensembles, scored on the held-out programs (those of seeds below 9602 are the
# fifty-first session's test programs).  Training times nothing, so any machine can rerun it (this session's VM
# was 508e03c34671a5a4, an Intel Xeon: it could not add fcaa labels).
set -e
source "$(dirname "$0")/../fcaa_recipe.sh"
D=$(folder_at 638d9b0)
O=runs/s53
mkdir -p $O
# pair NAME S1 S2 [OPTIONS...]: the recipe plus OPTIONS, seeds S1 and S2 side by side, into $O/NAME-sS; every run
# after the first reads the first's features cache (features do not depend on the options)
pair() {
  local name=$1 a=$2 b=$3; shift 3
  for s in $a $b; do
    mkdir -p $O/$name-s$s
    [ -f $O/big-s0/features.pkl ] && [ ! -f $O/$name-s$s/features.pkl ] && cp $O/big-s0/features.pkl $O/$name-s$s/
    $T $D --out $O/$name-s$s $R --fork-term --features memory --validation-share 0.05 --init-seed $s "$@" \
      > $O/$name-s$s.log 2>&1 &
  done; wait
}
pair big 0 1
pair noise 0 1 --noise-weight 0.15
$E $O/big-s{0,1}/costmodel.pt --out $O/big-ens2.pt
$E $O/noise-s{0,1}/costmodel.pt --out $O/noise-ens2.pt
$E $O/big-s{0,1}/costmodel.pt $O/noise-s{0,1}/costmodel.pt --out $O/all-ens4.pt
# --old-seeds 9502: the programs of seeds below it are the folder of the fifty-first session's experiments
# (4edc645), so "test, seeds < 9502" is its 196 test programs (its models: ../machine-51/compare-tri.json)
python scripts/costmodel_compare.py $D $O/big-s{0,1}/costmodel.pt $O/big-ens2.pt $O/noise-s{0,1}/costmodel.pt \
  $O/noise-ens2.pt $O/all-ens4.pt --min-baseline-ms 5 --old-seeds 9502 --by-kind --by-program \
  --cache $O/big-s0/features.pkl > $O/compare-pair.json
cp $O/compare-pair.json docs/results/costmodel/machine-53/
for m in big noise; do
  for s in 0 1; do cp $O/$m-s$s/metrics.json docs/results/costmodel/machine-53/metrics-$m-s$s.json; done
done
