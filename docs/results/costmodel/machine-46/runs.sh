#!/bin/bash
# The forty-sixth session's runs on data/poly-costmodel-fcaa-5ms (labels of VM fcaa1a686a5a63e3), from the repo root.
# The fa56 models fine-tuned on it (ft-sS), the same recipe from scratch on it alone (sc-sS), a fine-tune at a
# higher rate (fthi-s1), the two-seed ensembles, and the comparison on its held-out programs.  Training times
# nothing, so any machine can rerun it; runs/s43/inner-sS are the forty-third session's fa56 models, rebuilt
# first when missing (its recipe; ~17 minutes for both seeds side by side). The fcaa folder as of commit acceca4.
set -e
D=data/poly-costmodel-fcaa-5ms
T="python -m llmopt.poly.costmodel.train"
for s in 0 1; do
  [ -f runs/s43/inner-s$s/costmodel.pt ] || $T data/poly-costmodel-fa56 data/poly-costmodel-fa56-5ms \
     data/poly-costmodel-fa56-inner --out runs/s43/inner-s$s --anchored --normalize --dropout 0 --lr 1e-4 \
     --loss mape --epochs 15 --min-baseline-ms 5 --init-seed $s --threads 1 --features traffic
done
for s in 0 1; do
  $T $D --out runs/s46/ft-s$s --init-from runs/s43/inner-s$s/costmodel.pt --epochs 10 --lr 3e-5 --loss mape \
     --min-baseline-ms 5 --threads 1
  $T $D --out runs/s46/sc-s$s --anchored --normalize --dropout 0 --lr 1e-4 --loss mape --epochs 15 \
     --min-baseline-ms 5 --init-seed $s --threads 1 --features traffic
done
$T $D --out runs/s46/fthi-s1 --init-from runs/s43/inner-s1/costmodel.pt --epochs 15 --lr 1e-4 --loss mape \
   --min-baseline-ms 5 --threads 1
python -m llmopt.poly.costmodel.ensemble runs/s46/ft-s0/costmodel.pt runs/s46/ft-s1/costmodel.pt --out runs/s46/ft-ens.pt
python -m llmopt.poly.costmodel.ensemble runs/s46/sc-s0/costmodel.pt runs/s46/sc-s1/costmodel.pt --out runs/s46/sc-ens.pt
python scripts/costmodel_compare.py $D runs/s43/inner-s0/costmodel.pt runs/s43/inner-s1/costmodel.pt \
  runs/s46/ft-s0/costmodel.pt runs/s46/ft-s1/costmodel.pt runs/s46/ft-ens.pt runs/s46/sc-s0/costmodel.pt \
  runs/s46/sc-s1/costmodel.pt runs/s46/sc-ens.pt llmopt/poly/data/costmodel.pt --min-baseline-ms 5 --by-kind \
  > docs/results/costmodel/machine-46/compare-fcaa.json
# The learning curve on this machine: the same recipe on half the training share (49 of the 133 programs).
for s in 0 1; do
  $T $D --out runs/s46/sc-half-s$s --anchored --normalize --dropout 0 --lr 1e-4 --loss mape --epochs 15 \
     --min-baseline-ms 5 --init-seed $s --threads 1 --features traffic --train-share 0.5
done
python -m llmopt.poly.costmodel.ensemble runs/s46/sc-half-s0/costmodel.pt runs/s46/sc-half-s1/costmodel.pt --out runs/s46/sc-half-ens.pt
python scripts/costmodel_compare.py $D runs/s46/sc-half-s0/costmodel.pt runs/s46/sc-half-s1/costmodel.pt \
  runs/s46/sc-half-ens.pt --min-baseline-ms 5 > docs/results/costmodel/machine-46/compare-fcaa-half.json
