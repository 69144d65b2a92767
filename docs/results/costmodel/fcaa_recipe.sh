# Sourced by machine-*/runs.sh (from the repo root): the fcaa-alone training recipe and two helpers.  The runs read
# the features of the checkout they run in: a session's exact numbers need its commit (machine-51/runs.sh runs each
# in a worktree of its commit; the fifty-first session fixed errors every view shared).
T="python -m llmopt.poly.costmodel.train"
R="--anchored --normalize --dropout 0 --lr 1e-4 --loss mape --epochs 15 --min-baseline-ms 5 --threads 1"
E="python -m llmopt.poly.costmodel.ensemble"
# The runs before the fiftieth session read the features up to the traffic view: the default has been all of
# them (with the parallel view) since.
R0="$R --features traffic"

# folder_at COMMIT: extracts data/poly-costmodel-fcaa-5ms as it was at COMMIT into /tmp/fcaa-COMMIT and prints the
# folder's path, so that a session's runs see the data they were run on however much the folder has grown since.
folder_at() {
  rm -rf /tmp/fcaa-$1 && mkdir -p /tmp/fcaa-$1
  git archive $1 data/poly-costmodel-fcaa-5ms | tar -x -C /tmp/fcaa-$1
  echo /tmp/fcaa-$1/data/poly-costmodel-fcaa-5ms
}

# rebuild_pair DIR COMMIT: an earlier session's seeds 0 and 1 of the recipe (R0) (DIR/sc-s0, DIR/sc-s1) and their
# ensemble (DIR/sc-ens.pt) on the folder as of COMMIT, when DIR/sc-ens.pt is missing (a fresh machine).
rebuild_pair() {
  [ -f $1/sc-ens.pt ] && return 0
  local old; old=$(folder_at $2)
  for s in 0 1; do $T $old --out $1/sc-s$s $R0 --init-seed $s & done; wait
  $E $1/sc-s0/costmodel.pt $1/sc-s1/costmodel.pt --out $1/sc-ens.pt
}

# run_recipe NAME S [OPTIONS...] (from a runs.sh that sets D, the folder, and O, the runs' folder): the recipe with
# the fork term, the memory view and --validation-share 0.05 (the fifty-third session's), plus OPTIONS, seed S,
# into $O/NAME-sS, in the background; runs after the first start from $O/base-s0's features cache (features
# depend on neither the options nor the machine)
run_recipe() {
  local name=$1 s=$2; shift 2
  mkdir -p $O/$name-s$s
  [ -f $O/base-s0/features.pkl ] && [ ! -f $O/$name-s$s/features.pkl ] && cp $O/base-s0/features.pkl $O/$name-s$s/
  $T $D --out $O/$name-s$s $R --fork-term --features memory --validation-share 0.05 --init-seed $s "$@" \
    > $O/$name-s$s.log 2>&1 &
}
