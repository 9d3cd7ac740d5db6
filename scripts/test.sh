#!/usr/bin/env bash
# Builds soac and runs every test. Without a GPU the CUDA tests report "skipped"; on a GPU
# machine they run (ctest -L gpu runs only those).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
cd "${SOAC_BUILD_DIR:-build}"
ctest --output-on-failure -j "$(nproc)" "$@"
