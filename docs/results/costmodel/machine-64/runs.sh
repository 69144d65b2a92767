#!/bin/bash
# The sixty-fourth session's runs on data/poly-costmodel-fcaa-5ms as of 3f5a413 (1,443 programs of VM fcaa1a686a5a63e3),
# from the repo root, on VM 3d1219c7c4c5404a (Intel Xeon, no device).  Needs no network: the trees' matrices and
# the recipe's split are made from the data alone (matrices.py), and the fork cost is the recipe's ensemble's
# (runs/s59/base-ens4.pt: 815.2423706054688).  Nothing is timed: any machine reruns it.
set -e
source "$(dirname "$0")/../fcaa_recipe.sh"
D=$(folder_at 3f5a413)
H=docs/results/costmodel/machine-64
C=docs/results/costmodel/machine-63/cv_oof.py
FORK="--fork-cost 815.2423706054688"
mkdir -p runs/s64
# 1. The matrices machine-63's scripts read (runs/s62/*.npy, runs/s63/train.programs.npz), features cached.
python $H/matrices.py $D > $H/matrices.out
# 2. Out of fold (3 folds by program, one staged L1 booster, seed 0): the package's settings, then one changed each.
run() { local n=$1; shift; python $C $D --name $n --stages 4 --clip 3 $FORK "$@" > $H/cv-$n.out; }
run base
run stages8 --stages 8
run minleaf20 --min-leaf 20
run leaves511 --leaves 511
run rounds600 --rounds 600
run ff07 --ff 0.7
run minleaf80 --min-leaf 80
run leaves127 --leaves 127
run bag06 --bagging 0.6
python docs/results/costmodel/machine-63/oof_mix.py base stages8 leaves511 rounds600 > $H/oof_mix-sweep.out
# 3. The package's trees (three staged L1 seeds) on the training rows, and refit with the validation rows too
#    (both unscaled, --power 1: they ran before the power was the default).
python $H/final.py default --power 1 > $H/final-default.json
python $H/final.py default-refit --with-validation --power 1 > $H/final-default-refit.json
# 4. The cycles estimate as three more inputs, out of fold.
python $H/chain_estimate.py $D > $H/chain_estimate.out
python $C $D --name chainest --stages 4 --clip 3 $FORK --extra chainest > $H/cv-chainest.out
for n in base chainest; do python docs/results/costmodel/machine-63/oof_errors.py $n > $H/oof_errors-$n.out; done
# 5. The default now: the same trees, the log answer scaled by 1.08 (BoostConfig.power, chosen from step 2's
#    oof_mix-sweep.out and oof_mix-base.out), and that power on step 3's saved answers (power.py).
python docs/results/costmodel/machine-63/oof_mix.py base > $H/oof_mix-base.out
python $H/power.py > $H/power.out
python $H/final.py default-power > $H/final-default-power.json
python $H/more_seeds.py > $H/more_seeds.json   # 6. seeds 3-5 of the default now (run last)
