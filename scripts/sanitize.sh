#!/usr/bin/env bash
# The host test suite under AddressSanitizer and UndefinedBehaviorSanitizer: builds soac with g++
# -fsanitize=address,undefined (nvcc passes the flags to g++ for the .cu files' host code) in
# build-sanitize/, then runs every host test (ctest -L host: the CUDA instances are left out,
# the fuzz targets' saved inputs included). Any sanitizer report fails its test.
#   scripts/sanitize.sh [CTEST-ARGS...]        e.g. scripts/sanitize.sh -R 'formats|cli'
# SOAC_SANITIZE_BUILD_DIR picks another build folder.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${SOAC_SKIP_SETUP:-0}" != 1 ]; then scripts/setup-deps.sh; fi
[ -x /usr/local/cuda/bin/nvcc ] && export PATH="/usr/local/cuda/bin:$PATH"

build=${SOAC_SANITIZE_BUILD_DIR:-build-sanitize}
generator=()
if [ ! -f "$build/CMakeCache.txt" ] && command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
# -O1 (host code) builds faster than Release's -O3 and keeps stack traces readable; PTX only
# (90-virtual) spares ptxas, as nothing CUDA runs in this build's tests without a GPU.
cmake -S . -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DSOAC_SANITIZE=ON \
  -DCMAKE_CXX_FLAGS_RELEASE=-O1 -DCMAKE_CUDA_FLAGS_RELEASE=-O1 -DCMAKE_CUDA_ARCHITECTURES=90-virtual >/dev/null
start=$(date +%s)
cmake --build "$build" -j "$(nproc)"
echo "sanitize: built in $(( $(date +%s) - start )) s"

# protect_shadow_gap=0: the CUDA driver maps memory where ASan's shadow gap would be (GPU machines).
# Leak reports stay on: soac frees what it allocates.
export ASAN_OPTIONS=${ASAN_OPTIONS:-protect_shadow_gap=0:detect_leaks=1:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
start=$(date +%s)
cd "$build"
ctest --output-on-failure -j "$(nproc)" -L host "$@"
echo "sanitize: host tests took $(( $(date +%s) - start )) s"
