#!/usr/bin/env bash
# Run shards of a datagen job's phase 1 on another machine with more cores and no network (the GPU
# machine: 16 cores), then bring the finished shards back. Phase 1 needs only libLLVM 19 and the committed
# phase-0 files; csmith, clang and the package downloads are not needed there.
#
#   here, with network:   bash scripts/datagen_elsewhere.sh fetch
#                         -> .debs/ (llvm-19 and libllvm19 with their libraries; ignored by git)
#   there:                bash scripts/datagen_elsewhere.sh run DATASET START:END SECONDS [OUTDIR]
#                         unpacks .debs/ into /opt/llmopt-llvm (never into /), runs phase 1 on shards
#                         START..END-1 for at most SECONDS, and packs the finished shards into
#                         OUTDIR/p1-shards.tar.gz (default OUTDIR: $OUT, the device tool's return folder)
#   here again:           tar xzf p1-shards.tar.gz   (in the repo root; shards are whole files)
#
# With the device tool: run(command="bash scripts/datagen_elsewhere.sh run data/llmopt-v3 300:676 540",
# carry=[".debs"]). Phase 1 is deterministic per function, so shards made there equal shards made here.
# Measured 2026-11-23: the .debs are 60 MB and the tracked tree 54 MB, over the device tool's 64 MiB a call,
# so on the device this needs a smaller tree; on any machine with LLVM 19 installed it runs as is.
set -euo pipefail
cd "$(dirname "$0")/.."
mode="${1:-}"

if [ "$mode" = fetch ]; then
  mkdir -p .debs
  grep -qx '/.debs/' .git/info/exclude 2>/dev/null || echo '/.debs/' >> .git/info/exclude
  apt-get update -qq
  (cd .debs && apt-get download llvm-19 libllvm19 libz3-4 libedit2 libffi8 libxml2 libicu72 libzstd1 libtinfo6 libbsd0 libmd0)
  ls -la .debs
  exit 0
fi

if [ "$mode" != run ] || [ $# -lt 4 ]; then
  echo "usage: $0 fetch | $0 run DATASET START:END SECONDS [OUTDIR]" >&2
  exit 2
fi
dataset="$2"; range="$3"; seconds="$4"; outdir="${5:-${OUT:-.}}"

if ! command -v opt-19 >/dev/null && [ ! -x /usr/lib/llvm-19/bin/opt ]; then
  prefix=/opt/llmopt-llvm
  mkdir -p "$prefix"
  for deb in .debs/*.deb; do dpkg -x "$deb" "$prefix"; done
  export PATH="$prefix/usr/lib/llvm-19/bin:$PATH"
  export LD_LIBRARY_PATH="$prefix/usr/lib/x86_64-linux-gnu:$prefix/usr/lib/llvm-19/lib:${LD_LIBRARY_PATH:-}"
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1

before=$(ls "$dataset"/work/p1/ 2>/dev/null | wc -l)
# timeout stops the job between or inside shards: a shard is written whole or not at all.
# The job's own stored settings (work/config.json), so the shards are those the job would make here.
timeout "$seconds" python3 -m data_pipeline.cli --config "$dataset/work/config.json" --out "$dataset" \
  --phases p1 --shard-range "$range" \
  --workers "$(nproc)" --no-progress || [ $? -eq 124 ]
after=$(ls "$dataset"/work/p1/ | wc -l)
echo "phase-1 shards: $before before, $after after"
mkdir -p "$outdir"
tar czf "$outdir/p1-shards.tar.gz" "$dataset"/work/p1/shard-*.json.gz
ls -la "$outdir/p1-shards.tar.gz"
