#!/usr/bin/env bash
# Make the working tree small enough to travel to the GPU machine (the device tool sends tracked and
# untracked-not-ignored files, at most 64 MiB together), and put what training needs in `.device/`
# (ignored; name it in the call's `carry`).
#
#   scripts/device_stage.sh stage [--without-ir] [DATA_DIR [MORE_DIR ...]]   # DATA_DIR defaults to data/llmopt-v3;
#       MORE_DIRs (train-only extensions, data_pipeline/extend.py) go to .device/data2, ...: train on the
#       mix with `device_plan run PLAN --data .device/data,.device/data2`; --without-ir empties the staged
#       `optimized_ir` column (for runs with with_ir false: four parts then fit the 64 MiB)
#   ... device run, carry [".device"]: scripts/device_train.sh trains, exports and packs into $OUT, e.g.
#       run(command="MINUTES=8 scripts/device_train.sh training/configs/v3-base.json", carry=[".device"])
#   ... or several runs side by side: training/device_plan.py (its docstring)
#   scripts/device_fetch.sh FILES_AT runs/v3-base-gpu/model   # here: join, check, unpack
#   scripts/device_stage.sh restore            # put the moved folders back (always run it)
#
# Only the working tree changes: the moved folders stay committed, and `restore` moves them back
# unchanged. Files that come back from $OUT are at most 16 MiB each (8 files): split a larger
# checkpoint (`split -b 15M`) there and join it here.
set -euo pipefail
cd "$(dirname "$0")/.."
STASH="${LLMOPT_DEVICE_STASH:-/tmp/llmopt-device-stash}"
# Tracked folders that training on the device does not need, largest first.
BULKY=(docs/results data/llmopt-v3/work llmopt/model/default llmopt/poly/data data/llmopt-csmith-pypi/work
       data/llmopt-pypi-v2/work)

stage() {
  local without_ir=0
  if [[ "${1:-}" == "--without-ir" ]]; then without_ir=1; shift; fi
  local data="${1:-data/llmopt-v3}"
  [[ -f "$data/train.parquet" ]] || { echo "no $data/train.parquet: write the dataset first" >&2; exit 2; }
  local exclude; exclude="$(git rev-parse --git-path info/exclude)"
  mkdir -p "$(dirname "$exclude")"
  grep -qx '/.device/' "$exclude" 2>/dev/null || echo '/.device/' >> "$exclude"
  rm -rf .device/data && mkdir -p .device/data
  cp "$data"/{train,validation,test}.parquet "$data/README.md" .device/data/
  # The good lists of every train function: what the set loss (set_members > 0) reads.
  for f in "$data"/lists-*.json.gz; do if [[ -e "$f" ]]; then cp "$f" .device/data/; fi; done
  local n=2 more mix=.device/data
  for more in "${@:2}"; do
    rm -rf ".device/data$n" && mkdir -p ".device/data$n"
    cp "$more"/*.parquet ".device/data$n/"
    for f in "$more"/lists-*.json.gz "$more/README.md"; do if [[ -e "$f" ]]; then cp "$f" ".device/data$n/"; fi; done
    mix="$mix,.device/data$n"; n=$((n + 1))
  done
  # Runs with `with_ir: false` never read the optimized IR (a quarter of a train split's text): emptied and
  # re-compressed, the four parts fit the carry.
  if (( without_ir )); then
    python3 -c 'import sys, pyarrow as pa, pyarrow.parquet as pq
for path in sys.argv[1:]:
    table = pq.read_table(path)
    if "optimized_ir" in table.column_names:
        i = table.column_names.index("optimized_ir")
        table = table.set_column(i, "optimized_ir", pa.array([""] * table.num_rows, pa.string()))
        pq.write_table(table, path, compression="zstd", compression_level=19)' .device/data*/*.parquet
  fi
  # The shipped ensemble's tiny member (before it is moved aside): its tokenizer, and the start of fine-tuning runs; its
  # weights in bfloat16 (half the carry; the GPU runs train in bf16 autocast anyway).
  if [[ -f llmopt/model/default/tiny/model.safetensors ]]; then
    rm -rf .device/init
    python3 -c 'import sys; from pathlib import Path; from training.device_export import copy_bf16
copy_bf16(Path(sys.argv[1]), Path(sys.argv[2]))' llmopt/model/default/tiny .device/init
  fi
  mkdir -p "$STASH"
  for dir in "${BULKY[@]}"; do
    if [[ -e "$dir" && ! -e "$STASH/$dir" ]]; then
      mkdir -p "$STASH/$(dirname "$dir")" && mv "$dir" "$STASH/$dir"
    fi
  done
  # Parquet files of other datasets are not needed there either.
  for f in data/*/*.parquet; do
    [[ -e "$f" ]] || continue
    mkdir -p "$STASH/$(dirname "$f")" && mv "$f" "$STASH/$f"
  done
  local travels
  travels=$( (git ls-files -z; git ls-files -z --others --exclude-standard) | python3 -c '
import os, sys
print(sum(os.path.getsize(p) for p in sys.stdin.read().split("\0") if p and os.path.isfile(p)))')
  echo "staged: the tree that travels is $((travels / 1048576)) MiB (+ .device: $(du -sm .device | cut -f1) MiB);" \
       "data: --data $mix; run scripts/device_stage.sh restore afterwards"
}

restore() {
  [[ -d "$STASH" ]] || { echo "nothing staged"; return; }
  local rel
  for rel in "${BULKY[@]}" $(cd "$STASH" && find . -mindepth 1 -maxdepth 3 -name '*.parquet' -printf '%P\n'); do
    [[ -e "$STASH/$rel" ]] || continue
    mkdir -p "$(dirname "$rel")"
    [[ -e "$rel" ]] || mv "$STASH/$rel" "$rel"
  done
  git status --short | grep -v '^??' | head -5 || true
  echo "restored"
}

case "${1:-}" in
  stage) shift; stage "$@" ;;
  restore) restore ;;
  *) echo "usage: $0 stage [--without-ir] [DATA_DIR [MORE_DIR ...]] | restore" >&2; exit 2 ;;
esac
