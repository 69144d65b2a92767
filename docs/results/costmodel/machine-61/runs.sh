#!/bin/bash
# The sixty-first session's runs on data/poly-costmodel-fcaa-5ms as of 3f5a413 (1,443 programs of VM fcaa1a686a5a63e3),
# from the repo root, on VM 3d1219c7c4c5404a (Intel Xeon, no device).  Needs the sixtieth session's runs
# (machine-60/runs.sh: runs/s59's networks and ensembles, runs/s60's tree answers and feature matrices).
# Nothing is timed: any machine reruns it.
set -e
source "$(dirname "$0")/../fcaa_recipe.sh"
D=$(folder_at 3f5a413)
O=runs/s61
H=docs/results/costmodel/machine-61
mkdir -p $O/probe
[ -f runs/s60/trees-all-255x3.npz ] || bash docs/results/costmodel/machine-60/runs.sh
# Probes on the sixtieth session's matrices, one booster (seed 0, 255 leaves x 400 rounds) each: the best blend's
# answers (probe_analyze.py -> runs/s61/probe/ans.pkl), where its error lies (probe_slow, probe_fork, probe_look2),
# the features without the schedule's own counts (a Tree does not carry them), with the dominant computation's
# vectors, and with the fork term taken from the trees' target (probe_forkfree.py dom).
python $H/probe_analyze.py
python $H/probe_noschedule.py > $H/probe_noschedule.out
python $H/probe_dominant.py > $H/probe_dominant.out
python $H/probe_forkfree.py dom > $H/probe_forkfree_dom.out
python $H/probe_slow.py > $H/probe_slow.out
python $H/probe_fork.py > $H/probe_fork.out
python $H/probe_look2.py runs/s61/probe/forkfree-dom.npz > $H/probe_look2_forkfree_dom.out
# One change at a time on those (probe_variant.py): the second-largest computation's vectors too, 800 rounds, the
# Huber objective (near L2 in log space).
python $H/probe_variant.py --second --name second > $H/probe_second.out
python $H/probe_variant.py --rounds 800 --name r800 > $H/probe_r800.out
python $H/probe_variant.py --objective huber --shift --name huber > $H/probe_huber.out
python $H/probe_variant.py --objective regression --shift --name l2 > $H/probe_l2.out
python $H/probe_variant.py --boosting rf --leaves 1023 --min-leaf 20 --rounds 150 --name rf > $H/probe_rf.out
python $H/probe_variant.py --amdahl --name amdahl > $H/probe_amdahl.out
python $H/probe_variant.py --amdahl --objective huber --name amdahl-huber > $H/probe_amdahl_huber.out
# The recipe's network trained on the training programs' rows under 5 ms too (the trees gained from them).
mkdir -p $O/base-s0 && cp runs/s59/base-s0/features.pkl $O/base-s0/
run_recipe allrows 0 --min-baseline-ms 0; wait
# The package's blends (llmopt.poly.costmodel.boosted; the weight fitted on the validation programs): first the L1
# trees alone (three seeds), their trees with the network trained on every row, then the default (L1 and Huber,
# three seeds each).
B="python -m llmopt.poly.costmodel.boosted $D"
for n in ens4 allrows final; do cp runs/s59/base-s0/features.pkl $O/blend-$n.features.pkl; done
$B --network runs/s59/base-ens4.pt --out $O/blend-ens4.pt --objectives l1 > $O/blend-ens4.json
$B --network $O/allrows-s0/costmodel.pt --trees $O/blend-ens4.pt --scored-min-baseline-ms 5 --out $O/blend-allrows.pt \
  > $O/blend-allrows.json
$B --network runs/s59/base-ens4.pt --out $O/blend-final.pt --threads 2 > $O/blend-final.json
cp $O/blend-{ens4,allrows,final}.json $H/
cp $O/allrows-s0/metrics.json $H/metrics-allrows-s0.json
# The answering speed of the ensemble of four against the final blend (which, at weight 1.0, asks only its trees).
PYTHONPATH=. python scripts/bench_costmodel_blend.py $D runs/s59/base-ens4.pt $O/blend-final.pt > $H/bench-blend.json
