#!/bin/bash
# The sixty-seventh session's runs, from the repo root, on VM 3d1219c7c4c5404a -- an AMD EPYC again, but not the
# sixty-sixth session's (machine_id ab2f0076f8653dd2: other CPU flags, AVX-512 here), 2 cores, no device.
# 1. BSE on this machine (bse-900s-ab2f0076.json, resumable by benchmark): the reference Table 2 divides by.
# 2. The trees alone rebuilt as in machine-66/runs.sh (~12 minutes on 2 threads).
# 3. The predictions-only search with the children ranked on this process and a forked helper (ranker.Ranker)
#    against a worktree of the commit before it (one process), alternating, 3 runs each.
# 4. Paper 002's Table 2 with the trees, the helper on.  Timed: run alone, nothing else on the machine.
set -e
source "$(dirname "$0")/../fcaa_recipe.sh"
D=$(folder_at 3f5a413)
H=docs/results/costmodel/machine-67
BSE=docs/results/costmodel/bse-900s-ab2f0076.json
mkdir -p runs/s67
python $H/bse.py $BSE > runs/s67/bse.log
[ -f runs/s67/trees.pt ] || python -m llmopt.poly.costmodel.boosted $D --fractions 0.75 0.05 \
  --fork-cost 815.2423706054688 --scored-min-baseline-ms 5 --threads 2 --out runs/s67/trees.pt > $H/trees.json
[ -d /tmp/before-ranker ] || git worktree add /tmp/before-ranker a4a3e6b
python scripts/bench_costmodel_search.py runs/s67/trees.pt --before /tmp/before-ranker --runs 3 > $H/bench-ranker.json
python -m eval.costmodel_eval --budget-seconds 900 --schedules 8 --repeats 10 --with-agent --bse-reference $BSE \
  --model runs/s67/trees.pt --data $D --out $H/trees
