#!/bin/bash
# The forty-seventh session's runs on data/poly-costmodel-fcaa-5ms (labels of VM fcaa1a686a5a63e3), from the repo
# root, after the folder grew alone on fcaa (its README).  The forty-sixth session's fcaa-alone recipe on the grown
# folder (seeds 0-2, their ensemble) and on a share of its training programs (the learning curve), scored beside
# the forty-sixth session's models (runs/s46/sc-s*, trained on the folder as of commit acceca4; rebuilt first when
# missing, from that commit's folder) on the same held-out programs: all of them, and those of seeds < 8000 (the
# forty-sixth session's test set).  Training times nothing, so any machine can rerun it.  The fcaa folder as of
# commit 96d0551 (455 programs; later commits add more).
set -e
D=data/poly-costmodel-fcaa-5ms
T="python -m llmopt.poly.costmodel.train"
R="--anchored --normalize --dropout 0 --lr 1e-4 --loss mape --epochs 15 --min-baseline-ms 5 --threads 1 --features traffic"  # the features of its time (the default reads more since)
if [ ! -f runs/s46/sc-s1/costmodel.pt ]; then
  rm -rf /tmp/fcaa-acceca4 && mkdir -p /tmp/fcaa-acceca4
  git archive acceca4 $D | tar -x -C /tmp/fcaa-acceca4
  for s in 0 1; do $T /tmp/fcaa-acceca4/$D --out runs/s46/sc-s$s $R --init-seed $s & done; wait
  python -m llmopt.poly.costmodel.ensemble runs/s46/sc-s0/costmodel.pt runs/s46/sc-s1/costmodel.pt --out runs/s46/sc-ens.pt
fi
# Two runs side by side (one thread each on the 2-core machine).
for s in 0 1; do $T $D --out runs/s47/sc-s$s $R --init-seed $s & done; wait
for share in 0.5 0.75; do $T $D --out runs/s47/sc-share$share-s0 $R --init-seed 0 --train-share $share & done; wait
python -m llmopt.poly.costmodel.ensemble runs/s47/sc-s0/costmodel.pt runs/s47/sc-s1/costmodel.pt --out runs/s47/sc-ens.pt
python scripts/costmodel_compare.py $D runs/s46/sc-s0/costmodel.pt runs/s46/sc-s1/costmodel.pt runs/s46/sc-ens.pt \
  runs/s47/sc-share0.5-s0/costmodel.pt runs/s47/sc-share0.75-s0/costmodel.pt runs/s47/sc-s0/costmodel.pt \
  runs/s47/sc-s1/costmodel.pt runs/s47/sc-ens.pt --min-baseline-ms 5 --old-seeds 8000 --by-kind \
  --cache runs/s47/sc-s0/features.pkl > docs/results/costmodel/machine-47/compare-fcaa.json
for m in sc-s0 sc-s1 sc-share0.5-s0 sc-share0.75-s0; do cp runs/s47/$m/metrics.json docs/results/costmodel/machine-47/metrics-$m.json; done
# A third seed and the three-member ensemble; the forty-third session's fa56 model (runs/s43/inner-s1, rebuilt by
# machine-46/runs.sh) fine-tuned on the grown folder (the forty-sixth session's fine-tune, ft-s1 there).
[ -f runs/s43/inner-s1/costmodel.pt ] || { echo "run machine-46/runs.sh first: it rebuilds runs/s43/inner-s1" >&2; exit 1; }
$T $D --out runs/s47/sc-s2 $R --init-seed 2 &
$T $D --out runs/s47/ft-s1 --init-from runs/s43/inner-s1/costmodel.pt --epochs 10 --lr 3e-5 --loss mape \
   --min-baseline-ms 5 --threads 1 &
wait
python -m llmopt.poly.costmodel.ensemble runs/s47/sc-s0/costmodel.pt runs/s47/sc-s1/costmodel.pt \
  runs/s47/sc-s2/costmodel.pt --out runs/s47/sc-ens3.pt
python scripts/costmodel_compare.py $D runs/s47/sc-s2/costmodel.pt runs/s47/sc-ens3.pt runs/s47/ft-s1/costmodel.pt \
  --min-baseline-ms 5 --old-seeds 8000 --cache runs/s47/sc-s0/features.pkl \
  > docs/results/costmodel/machine-47/compare-fcaa-more.json
for m in sc-s2 ft-s1; do cp runs/s47/$m/metrics.json docs/results/costmodel/machine-47/metrics-$m.json; done
