#!/usr/bin/env bash
# Train on the GPU machine within one device call and put the model and logs in $OUT, in the shapes the
# device tool returns (at most 8 files, 16 MiB each, 64 MiB total).  Run ON the device; fetch here with
# scripts/device_fetch.sh.  Why: a call may run 10 minutes and the machine is given back after 30 s idle,
# so training, export and packing must all happen in the one call.
#
#   scripts/device_stage.sh stage                 # here: data to .device/data, bulky folders aside
#   run(command="MINUTES=8 scripts/device_train.sh training/configs/v3-base.json",
#       carry=[".device"], timeout_s=600)
#   scripts/device_stage.sh restore               # here, always
#   scripts/device_fetch.sh FILES_AT runs/v3-base-gpu/model   # FILES_AT: the folder the run tool returned
#
# Usage: scripts/device_train.sh CONFIG [--set key=value ...]   (the --set values win over the defaults here)
# Env: MINUTES (training cap, set-up included; default 8 of the 10-minute call), OUT (set by the device tool),
#      DATA_DIR (default .device/data), RUN_DIR (default /tmp/llmopt-device-run), PART_SIZE (default 15M).
# $OUT receives: model.safetensors.partN (bf16 weights, split), model.safetensors.sha256, and
# files.tar.gz (model/: config, tokenizer, llmopt.json, README.md; logs/: train/validation csv, config,
# stdout, tensorboard).  On a failed training run only files.tar.gz (the logs) comes back, and it exits 1.
set -euo pipefail
cd "$(dirname "$0")/.."
CONFIG="${1:?usage: $0 CONFIG [--set key=value ...]}"
shift
: "${OUT:?OUT must name the folder whose files come back (the device tool sets it)}"
DATA="${DATA_DIR:-.device/data}"
RUN="${RUN_DIR:-/tmp/llmopt-device-run}"
WORK="$(mktemp -d)"
mkdir -p "$OUT" "$RUN" "$WORK/model" "$WORK/logs"
export PYTHONPATH=.

# Logs (and on success the model files other than the weights) go into one tar: the 8-file limit.
pack() {
  local f
  for f in train_log.csv validation_log.csv train_config.json tensorboard; do
    if [[ -e "$RUN/$f" ]]; then cp -r "$RUN/$f" "$WORK/logs/"; fi
  done
  tar -czf "$OUT/files.tar.gz" -C "$WORK" model logs
}

status=0
python3 -m training.cli "$CONFIG" --no-progress --set data_dir="$DATA" --set out_dir="$RUN" \
  --set max_minutes="${MINUTES:-8}" "$@" 2>&1 | tee "$WORK/logs/train_stdout.log" || status=$?
if [[ $status -ne 0 ]]; then
  echo "training failed (exit $status): only the logs come back" >&2
  pack
  exit 1
fi

python3 -m training.device_export "$RUN" "$DATA" "$WORK/model" \
  --command "MINUTES=${MINUTES:-8} scripts/device_train.sh $CONFIG $*"
# The weights, split into parts the tool returns; the sha256 lets device_fetch.sh check the join.
(cd "$WORK/model" && sha256sum model.safetensors > "$OUT/model.safetensors.sha256")
split -b "${PART_SIZE:-15M}" -d -a 1 "$WORK/model/model.safetensors" "$OUT/model.safetensors.part"
rm "$WORK/model/model.safetensors"
pack

files=$(find "$OUT" -maxdepth 1 -type f | wc -l)
bytes=$(du -cb "$OUT"/* | tail -1 | cut -f1)
ls -l "$OUT"
if (( files > 8 || bytes > 64 * 1048576 )); then
  echo "OUT holds $files files, $((bytes / 1048576)) MiB: over the tool's 8 files / 64 MiB" >&2
  exit 1
fi
echo "device_train: $files files, $((bytes / 1048576)) MiB in $OUT"
