#!/bin/bash
# The sixty-seventh session's runs, from the repo root, on VM 3d1219c7c4c5404a -- an AMD EPYC again, but not the
# sixty-sixth session's (machine_id ab2f0076f8653dd2 here: other CPU flags, AVX-512; 4411f8e9 there), 2 cores, no
# device.  Timed steps (1, 3, 4) ran alone, nothing else on the machine.
# 1. BSE on this machine (bse-900s-ab2f0076.json, resumable by benchmark): what Table 2 divides by here (3,314 s
#    for the 13 benchmarks, about the Xeon's 3,420 s).
# 2. The trees alone rebuilt as in machine-66/runs.sh (~15 minutes on 2 threads): validation 0.1614, test 0.1595.
# 3. The predictions-only search (the model's part of BSM) with the children ranked on this process and a helper
#    process (ranker.Ranker, commit cb170da) against a worktree of the commit before (a4a3e6b, one process),
#    alternating, 3 runs each: bench-ranker.json (bench-ranker-fork-per-search.json: commit 7f5cdb2, which forked
#    the helper at every search).
# 4. Paper 002's Table 2 with the trees, the helper on (trees/), then the shipped network (shipped/), then the trees
#    again twice (trees-r2/, trees-r3/; the session ran r2 before the network).
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
EVAL="python -m eval.costmodel_eval --budget-seconds 900 --schedules 8 --repeats 10 --with-agent --bse-reference $BSE"
$EVAL --model llmopt/poly/data/costmodel.pt --data data/poly-costmodel --out $H/shipped
$EVAL --model runs/s67/trees.pt --data $D --out $H/trees-r2
$EVAL --model runs/s67/trees.pt --data $D --out $H/trees-r3
