#!/usr/bin/env bash
# Install everything (idempotent) and run the test suite against the real LLVM.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
python3 -m pytest -q -p no:cacheprovider "$@"
