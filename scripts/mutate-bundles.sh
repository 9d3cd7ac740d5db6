#!/usr/bin/env bash
# The whole mutated-bundle sweep (issue 28): every app's tiny dataset, each manifest field and
# array mutated, through soac run and validate on the host backend (tests/mutate_bundles.py; CTest
# runs an eightieth of it). About 11,000 mutations, roughly 40 minutes on 2 cores.
# Usage: scripts/mutate-bundles.sh [--apps hist,bfs] [--jobs N] [--select K/N] [-v]
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 tests/mutate_bundles.py --soac "${SOAC_BUILD_DIR:-build}/cli/soac" "$@"
