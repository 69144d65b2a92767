#!/usr/bin/env bash
# Rebuild the model that scripts/device_train.sh packed on the GPU machine: join the weight parts from the
# folder the device tool returned (files_at), check the sha256, and unpack so that
# `llmopt predict --model DEST` / `llmopt eval --model DEST` load it.  Run HERE, after the device call.
#
#   scripts/device_fetch.sh FILES_AT DEST       # e.g. DEST=runs/v3-base-gpu/model
#
# DEST gets the model (bf16 weights; both engines load them as they are); the training logs
# (train_log.csv, validation_log.csv, train_config.json, train_stdout.log, tensorboard/) go next to it,
# in DEST's parent folder, as in a training out_dir.  An existing DEST is replaced.
set -euo pipefail
SRC="${1:?usage: $0 FILES_AT DEST}"
DEST="${2:?usage: $0 FILES_AT DEST}"
SRC="$(cd "$SRC" && pwd)"
[[ -f "$SRC/files.tar.gz" ]] || { echo "$SRC/files.tar.gz missing: not a device_train.sh result" >&2; exit 2; }
shopt -s nullglob
parts=("$SRC"/model.safetensors.part*)
(( ${#parts[@]} )) || { echo "no weight parts in $SRC (did training fail? see the logs in files.tar.gz)" >&2; exit 2; }

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
tar -xzf "$SRC/files.tar.gz" -C "$TMP"
# split -d -a 1 names the parts part0..part9: the glob's order is the split order.
cat "${parts[@]}" > "$TMP/model/model.safetensors"
(cd "$TMP/model" && sha256sum --quiet -c "$SRC/model.safetensors.sha256") ||
  { echo "sha256 mismatch: a part is missing or damaged" >&2; exit 1; }

mkdir -p "$(dirname "$DEST")"
rm -rf "$DEST"
mv "$TMP/model" "$DEST"
cp -r "$TMP/logs/." "$(dirname "$DEST")/"
echo "model in $DEST; logs in $(dirname "$DEST")"
