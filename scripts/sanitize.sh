#!/usr/bin/env bash
# Host tests under AddressSanitizer and UndefinedBehaviorSanitizer: builds soac with g++
# -fsanitize=address,undefined (nvcc passes the flags to g++ for the .cu files' host code) in
# build-sanitize/, then runs host tests (ctest -L host: the CUDA instances are left out). Any
# sanitizer report fails its test.
#   scripts/sanitize.sh            the readers' and the CLI's tests and every fuzz target's saved
#                                  inputs (what CI runs: the whole suite would build every test
#                                  executable a second time, too long for CI on two cores)
#   scripts/sanitize.sh --all [CTEST-ARGS...]   every host test (e.g. --all -R hist)
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
# The readers' tests, the CLI's (which runs soac, every app), the fuzz targets' replays.
targets=(soac test_cli test_datasets test_text_and_binary test_formats_rodinia_graph test_futhark_data fuzz_all)
tests=(-R '^(test_cli|test_datasets|test_text_and_binary|test_formats_|test_futhark_data|fuzz_corpus)')
build_args=()
if [ "${1:-}" = --all ]; then
  shift
  tests=()
else
  for t in "${targets[@]}"; do build_args+=(--target "$t"); done
fi
start=$(date +%s)
cmake --build "$build" -j "$(nproc)" "${build_args[@]}"
echo "sanitize: built in $(( $(date +%s) - start )) s"

# protect_shadow_gap=0: the CUDA driver maps memory where ASan's shadow gap would be (GPU machines).
# Leak reports stay on: soac frees what it allocates.
export ASAN_OPTIONS=${ASAN_OPTIONS:-protect_shadow_gap=0:detect_leaks=1:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
start=$(date +%s)
cd "$build"
ctest --output-on-failure -j "$(nproc)" -L host "${tests[@]}" "$@"
echo "sanitize: host tests took $(( $(date +%s) - start )) s"
