#!/bin/bash
# The sixty-third session's runs on data/poly-costmodel-fcaa-5ms as of 3f5a413 (1,443 programs of VM fcaa1a686a5a63e3),
# from the repo root, on VM 3d1219c7c4c5404a (Intel Xeon, no device).  Needs runs/s59's ensemble of four
# (machine-59) and the sixty-second session's matrices and features cache (machine-62/runs.sh, steps 3-4).
# Nothing is timed: any machine reruns it.
set -e
source "$(dirname "$0")/../fcaa_recipe.sh"
D=$(folder_at 3f5a413)
H=docs/results/costmodel/machine-63
mkdir -p runs/s63
[ -f runs/s62/invariance.train.npy ] || bash docs/results/costmodel/machine-62/runs.sh
# 1. Out-of-fold answers on the training programs (3 folds by program, one L1 booster each): the package's booster,
#    two seeds; then the variants, each judged against them without reading a held-out program.
python $H/chain_columns.py $D
python $H/cv_oof.py $D --name l1-s0 > $H/cv-l1-s0.out
python $H/cv_oof.py $D --name l1-s1 --seed 1 > $H/cv-l1-s1.out
python $H/oof_errors.py l1-s0 > $H/oof_errors-l1-s0.out
python $H/cv_oof.py $D --name chain-k3-t64 --chain-k 3 --chain-trips 64 > $H/cv-chain-k3-t64.out
python $H/cv_oof.py $D --name chain-in --chain-inputs 64 256 > $H/cv-chain-in.out
python $H/cv_oof.py $D --name stages4 --stages 4 > $H/cv-stages4.out
python $H/cv_oof.py $D --name stages4-clip3 --stages 4 --clip 3 > $H/cv-stages4-clip3.out
python $H/cv_oof.py $D --name stages4-clip3-s1 --stages 4 --clip 3 --seed 1 > $H/cv-stages4-clip3-s1.out
python $H/oof_errors.py stages4-clip3 > $H/oof_errors-stages4-clip3.out
python $H/oof_mix.py l1-s0 l1-s1 > $H/oof_mix-plain.out
python $H/oof_mix.py stages4-clip3 stages4-clip3-s1 > $H/oof_mix-stages.out
# 2. The package's trees with the staged reweighting (the defaults otherwise: L1 and Huber, three seeds each).
cp runs/s62/invariance.features.pkl runs/s63/blend-stages.features.pkl
python -m llmopt.poly.costmodel.boosted $D --network runs/s59/base-ens4.pt --out runs/s63/blend-stages.pt --threads 2 \
  --stages 4 > $H/blend-stages.json
# 3. Each booster of that run alone, the halves mixed, powers (machine-62/final_mix.py); the staged L1 half with the sixty-second
#    session's unstaged Huber half (mix_halves.py; needs runs/s62/blend-final.pt, machine-62/runs.sh step 4).
python docs/results/costmodel/machine-62/final_mix.py runs/s63/blend-stages.pt > $H/final_mix.out
python $H/mix_halves.py > $H/mix_halves.out
# 4. The Huber half out of fold, alone and staged (then oof_mix.py on the pairs; the default became L1 alone).
python $H/cv_oof.py $D --name huber-s0 --objective huber > $H/cv-huber-s0.out
python $H/cv_oof.py $D --name huber-stages4-clip3 --objective huber --stages 4 --clip 3 > $H/cv-huber-stages4-clip3.out
for pair in "stages4-clip3 huber-s0" "stages4-clip3 huber-stages4-clip3" "l1-s0 huber-s0"; do python $H/oof_mix.py $pair; done \
  > $H/oof_mix-huber.out
# 5. Three more staged L1 seeds (3-5) with the run's seeds 0-2: six seeds against three.
python $H/more_seeds.py > $H/more_seeds.out
