#!/bin/bash
# The sixty-second session's runs on data/poly-costmodel-fcaa-5ms as of 3f5a413 (1,443 programs of VM fcaa1a686a5a63e3),
# from the repo root, on VM 3d1219c7c4c5404a (Intel Xeon, no device).  Needs runs/s59's ensemble of four
# (machine-59) and, for the first probes, the sixty-first session's matrices and answers (machine-61/runs.sh).
# Nothing is timed: any machine reruns it.  The probes' features depend on the checkout: the fill-view probes ran
# on a checkout with the fill view but not yet the invariance view (FILL_NAMES only), the rest on this commit's.
set -e
source "$(dirname "$0")/../fcaa_recipe.sh"
D=$(folder_at 3f5a413)
H=docs/results/costmodel/machine-62
mkdir -p runs/s62/probe
[ -f runs/s61/probe/ans.pkl ] || bash docs/results/costmodel/machine-61/runs.sh
# 1. The schedule's own length and counts of each kind (and a richer summary) on the sixty-first session's matrices;
#    feature fractions 0.5 and 0.8 there (machine-61/probe_variant.py).
python $H/dump_schedules.py $D
python $H/probe_schedule.py --features counts --name counts > $H/probe_counts.out
python $H/probe_schedule.py --features rich --name rich > $H/probe_rich.out
python docs/results/costmodel/machine-61/probe_variant.py --ff 0.5 --name ff05 > $H/probe_ff05.out
python docs/results/costmodel/machine-61/probe_variant.py --ff 0.8 --name ff08 > $H/probe_ff08.out
# 3. The invariance view (this commit's features), then the removal term (probe_removal.py).
for v in "--name inv-ff05" "--seed 1 --name inv-ff05-s1" "--objective huber --name inv-ff05-huber"; do
  python $H/probe_fills.py $D --tag invariance --ff 0.5 $v > $H/probe_$(echo $v | awk '{print $NF}').out
done
# 2. The fill view alone (probe_fills.py slices it from the invariance matrices that step 3 makes first).  Not
#    rerun here: the package's trees on the checkout of then (fill view, no invariance view yet), one L1 booster
#    at feature fraction 0.3 (fills-l1.json: python -m llmopt.poly.costmodel.boosted $D --network
#    runs/s59/base-ens4.pt --out runs/s62/fills-l1.pt --objectives l1 --seeds 1 --threads 2).
for v in "--name fills-ff05" "--seed 1 --name fills-ff05-s1" "--objective huber --name fills-ff05-huber"; do
  python $H/probe_fills.py $D --ff 0.5 $v > $H/probe_$(echo $v | awk '{print $NF}').out
done
for v in "--name rm-l1" "--seed 1 --name rm-l1-s1" "--objective huber --name rm-huber"; do  # (--ff 0.5 by default)
  python $H/probe_removal.py $D $v > $H/probe_$(echo $v | awk '{print $NF}').out
done
for group in fills-ff05 inv-ff05 rm; do python $H/combine.py $group > $H/combine_$group.out; done
# 4. The package's trees (L1 and Huber, three seeds each, feature fraction 0.5: the defaults now).
cp runs/s62/invariance.features.pkl runs/s62/blend-final.features.pkl
python -m llmopt.poly.costmodel.boosted $D --network runs/s59/base-ens4.pt --out runs/s62/blend-final.pt --threads 2 \
  > $H/blend-final.json
# 5. The same with 800 rounds.
cp runs/s62/invariance.features.pkl runs/s62/blend-r800.features.pkl
python -m llmopt.poly.costmodel.boosted $D --network runs/s59/base-ens4.pt --out runs/s62/blend-r800.pt --threads 2 \
  --rounds 800 > $H/blend-r800.json
