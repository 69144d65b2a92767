#!/usr/bin/env bash
# Set up a fresh Debian 12 machine for llmopt: LLVM/clang 19 + csmith from apt, the package
# (with the CPU build of torch pinned in pyproject.toml) from pip. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."
LLVM_VERSION="${LLMOPT_LLVM_VERSION:-19}"

need_apt=()
# make: `llmopt cc` tests build with it; libomp: OpenMP for clang -fopenmp and Polly (llmopt/poly)
for pkg in "llvm-${LLVM_VERSION}" "clang-${LLVM_VERSION}" "libomp-${LLVM_VERSION}-dev" csmith libcsmith-dev make; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need_apt+=("$pkg")
done
if [ ${#need_apt[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}"
fi

if ! python3 -c "import llmopt, torch, transformers, datasets, islpy, torch_geometric, lightgbm" >/dev/null 2>&1 \
   || ! pip show llmopt 2>/dev/null | grep -q "Editable project location: $(pwd)"; then
  python3 -m pip install -q --disable-pip-version-check -e ".[dev]"
fi
