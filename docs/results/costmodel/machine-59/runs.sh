#!/bin/bash
# The fifty-ninth session's runs on data/poly-costmodel-fcaa-5ms as of 3f5a413 (1,443 programs of VM fcaa1a686a5a63e3,
# the folder the fifty-eighth session trained on), from the repo root: the recipe (fork term, memory view,
# --validation-share 0.05) at seeds 0-1 ("base": the fifty-eighth session's runs again, on VM 508e03c34671a5a4, an
# Intel Xeon; two runs side by side ~3.2 min an epoch each) and with --snap-neutral 0.05 ("snap05": training speedups
# within 5% of 1.0x taught as 1.0x), ensembles, the compare and the calibration probe (calibrate.py: maps of the
# answers fitted on the validation programs no model trained on, scored on the test programs).  Training times
# nothing, so any machine can rerun it; a finished run only re-reports, so the script resumes where it stopped.
set -e
source "$(dirname "$0")/../fcaa_recipe.sh"
D=$(folder_at 3f5a413)
O=runs/s59
mkdir -p $O
run_recipe base 0; run_recipe snap05 0 --snap-neutral 0.05; wait
run_recipe base 1; run_recipe snap05 1 --snap-neutral 0.05; wait
$E $O/base-s{0,1}/costmodel.pt --out $O/base-ens2.pt
$E $O/snap05-s{0,1}/costmodel.pt --out $O/snap05-ens2.pt
M="$O/base-s0/costmodel.pt $O/base-s1/costmodel.pt $O/snap05-s0/costmodel.pt $O/snap05-s1/costmodel.pt"
M="$M $O/base-ens2.pt $O/snap05-ens2.pt"
python scripts/costmodel_compare.py $D $M --min-baseline-ms 5 --old-seeds 10085 --cache $O/base-s0/features.pkl \
  --by-kind --neutral > $O/compare.json
python docs/results/costmodel/machine-59/calibrate.py $D $O/base-s0/features.pkl $M > $O/calibrate.json
cp $O/compare.json $O/calibrate.json docs/results/costmodel/machine-59/
for m in base-s0 base-s1 snap05-s0 snap05-s1; do
  cp $O/$m/metrics.json docs/results/costmodel/machine-59/metrics-$m.json
done
