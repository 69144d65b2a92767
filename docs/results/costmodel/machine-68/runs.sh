#!/bin/bash
# The sixty-eighth session's runs, from the repo root, on VM 3d1219c7c4c5404a -- the sixty-seventh session's AMD EPYC
# with AVX-512 again (machine_id ab2f0076f8653dd2), 2 cores, no device, so its BSE reference is reused.  Timed steps
# (2) ran alone, nothing else on the machine.
# 1. The trees alone rebuilt with the balance (features `Tree.busy`, boosted `parallel_left`; ~13 minutes on 2
#    threads): validation 0.1613, test 0.1581 (trees.json).
# 2. Paper 002's Table 2 with them, three runs (trees/, trees-r2/, trees-r3/; commit 4f9c0e0), the same BSE for
#    every run.
# 3. The predictions-only search with the busiest-thread shares kept by what they read (commit 632d9dd) against a
#    worktree of 4f9c0e0, alternating, 3 runs each (bench-share-cache.json); then Table 2 again, three runs
#    (cached/, cached-r2/, cached-r3/): the same answers, the model's part cheaper.
set -e
source "$(dirname "$0")/../fcaa_recipe.sh"
D=$(folder_at 3f5a413)
H=docs/results/costmodel/machine-68
BSE=docs/results/costmodel/bse-900s-ab2f0076.json
mkdir -p runs/s68
[ -f runs/s68/trees.pt ] || python -m llmopt.poly.costmodel.boosted $D --fractions 0.75 0.05 \
  --fork-cost 815.2423706054688 --scored-min-baseline-ms 5 --threads 2 --out runs/s68/trees.pt > $H/trees.json
EVAL="python -m eval.costmodel_eval --budget-seconds 900 --schedules 8 --repeats 10 --with-agent --bse-reference $BSE"
for run in trees trees-r2 trees-r3; do  # at 4f9c0e0
  $EVAL --model runs/s68/trees.pt --data $D --out $H/$run > runs/s68/eval-$run.log 2>&1
done
[ -d /tmp/before-cache ] || git worktree add /tmp/before-cache 4f9c0e0
python scripts/bench_costmodel_search.py runs/s68/trees.pt --before /tmp/before-cache --runs 3 > $H/bench-share-cache.json
for run in cached cached-r2 cached-r3; do  # at 632d9dd
  $EVAL --model runs/s68/trees.pt --data $D --out $H/$run > runs/s68/eval-$run.log 2>&1
done
