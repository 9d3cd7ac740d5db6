#!/usr/bin/env bash
# What to run on a GPU machine before resolving an issue that touches device code: build for
# sm_90, run the whole test suite, compute-sanitizer on small GPU tests, then the benchmarks.
# Usage: scripts/gpu-check.sh [OUT_DIR] [bench app ...]   (default apps: scatter)
# Needs the stb headers in .stb/ where the system has none (the lent GPU machine).
set -uo pipefail
cd "$(dirname "$0")/.."
out="$(realpath -m "${1:-gpu-check}")"; shift || true
apps=("$@"); [ ${#apps[@]} -eq 0 ] && apps=(scatter)
mkdir -p "$out"
status=0
export PATH="/usr/local/cuda/bin:$PATH"

echo "== build"
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DSOAC_STB_DIR="$PWD/.stb" \
  >"$out/configure.log" 2>&1 || { cat "$out/configure.log"; exit 1; }
cmake --build build-gpu -j "$(nproc)" >"$out/build.log" 2>&1 || { tail -50 "$out/build.log"; exit 1; }

echo "== tests"
(cd build-gpu && ctest --output-on-failure -j 4 >"$out/ctest.log" 2>&1) || status=1
grep -E "tests passed|tests failed|Skipped|Failed|\*\*\*" "$out/ctest.log"

echo "== compute-sanitizer (small GPU tests)"
# GPU tests only, less the huge-n ones and those that provoke CUDA errors on purpose (a bad
# launch, an impossible allocation), which the sanitizer would rightly report.
small_gpu_tests="${SOAC_SANITIZE_FILTER:-*/cuda:Cuda*:-*MoreWritesThanA32Bit*:*BadLaunch*:*AllocationBeyondMemory*}"
for t in build-gpu/tests/test_*; do
  [ -x "$t" ] || continue
  "$t" --gtest_list_tests --gtest_filter="$small_gpu_tests" | grep -q '^  ' || continue
  for tool in ${SOAC_SANITIZE_TOOLS:-memcheck racecheck synccheck}; do
    compute-sanitizer --tool "$tool" --error-exitcode 99 "$t" --gtest_filter="$small_gpu_tests" \
      >"$out/sanitize-$(basename "$t")-$tool.log" 2>&1
    rc=$?
    printf '%-16s %-10s %s\n' "$(basename "$t")" "$tool" "$([ $rc -eq 0 ] && echo clean || echo "FAILED ($rc)")"
    [ $rc -eq 0 ] || status=1
  done
done

for app in "${apps[@]}"; do
  echo "== bench $app"
  build-gpu/cli/soac bench "$app" --json "$out/bench-$app.json" ${SOAC_BENCH_ARGS:-} 2>"$out/bench-$app.err" \
    | tee "$out/bench-$app.txt" || { status=1; tail "$out/bench-$app.err"; }
done
tar -C "$out" -czf "$out/logs.tgz" --exclude logs.tgz . 2>/dev/null
exit $status
