#!/usr/bin/env bash
# Installs missing dependencies, then configures and builds soac (Release) in build/.
# Extra arguments go to CMake's configure step, e.g. -DCMAKE_CUDA_ARCHITECTURES=80.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${SOAC_SKIP_SETUP:-0}" != 1 ]; then scripts/setup-deps.sh; fi
[ -x /usr/local/cuda/bin/nvcc ] && export PATH="/usr/local/cuda/bin:$PATH"

build_dir="${SOAC_BUILD_DIR:-build}"
generator=()
if [ ! -f "$build_dir/CMakeCache.txt" ] && command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
cmake -S . -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build "$build_dir" -j "$(nproc)"
