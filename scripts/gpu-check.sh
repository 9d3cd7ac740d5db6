#!/usr/bin/env bash
# What to run on a GPU machine before resolving an issue that touches device code: build for
# sm_90, run the whole test suite, compute-sanitizer on small GPU tests, then the benchmarks.
# Usage: scripts/gpu-check.sh [OUT_DIR] [bench app ...]   (default apps: none)
#   SOAC_PHASES="build tests sanitize bench" (default: all four)
#   SOAC_PREBUILT=1: no build; unpack .gpubin/build.tar.xz made here by scripts/gpu-pack.sh
#   SOAC_BENCH_ARGS_<app>="..." extra arguments for `soac bench <app>`
#   SOAC_SANITIZE_ONLY="test_hist ..." sanitize only these test executables
#   SOAC_SANITIZE_TOOLS="memcheck ..." (default: memcheck racecheck synccheck)
#   SOAC_SANITIZE_TIMEOUT=seconds per sanitizer run (default 240; 124 in the line means it ran out)
# Needs the stb headers in .stb/ where the system has none (the lent GPU machine).
set -uo pipefail
cd "$(dirname "$0")/.."
out="$(realpath -m "${1:-gpu-check}")"; shift || true
apps=("$@")
phases="${SOAC_PHASES:-build tests sanitize bench}"
mkdir -p "$out"
status=0
export PATH="/usr/local/cuda/bin:$PATH"
has() { [[ " $phases " == *" $1 "* ]]; }
bdir=build-gpu

if [ "${SOAC_PREBUILT:-0}" = 1 ]; then
  echo "== prebuilt $(cat .gpubin/commit 2>/dev/null)"
  phases="${phases//build/}"
  src="$(cat .gpubin/source-dir)"
  tar -xJf .gpubin/build.tar.xz || exit 1
  bdir="$(tar -tJf .gpubin/build.tar.xz | head -1 | cut -d/ -f1)"
  # The binaries name the packing checkout's absolute paths: make that path this copy.
  if [ "$(realpath -m "$src")" != "$PWD" ]; then
    mkdir -p "$(dirname "$src")" && rm -rf "$src" && ln -sfn "$PWD" "$src" || exit 1
  fi
fi

if has build; then
  echo "== build"
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DSOAC_STB_DIR="$PWD/.stb" \
    >"$out/configure.log" 2>&1 || { cat "$out/configure.log"; exit 1; }
  cmake --build build-gpu -j "$(nproc)" >"$out/build.log" 2>&1 || { grep -E "error|FAILED" -A3 "$out/build.log" | head -40; exit 1; }
fi

if has tests; then
  echo "== tests"; start=$SECONDS
  (cd "$bdir" && ctest --output-on-failure -j 4 >"$out/ctest.log" 2>&1) || status=1
  grep -E "tests passed|tests failed|Skipped|Failed|\*\*\*" "$out/ctest.log"
  echo "tests took $((SECONDS - start))s"
fi

# Small GPU tests per executable for the sanitizers: no huge-n tests, and none of the tests that
# provoke CUDA errors on purpose (a bad launch, an impossible allocation), which the sanitizer
# would rightly report.
declare -A sanitize_filter=(
  [test_fast_divide]='*/cuda'
  [test_context]='*/cuda:Cuda*:-*BadLaunch*:*AllocationBeyondMemory*'
  [test_scatter]='*/cuda:-*MoreWritesThanA32Bit*'
  [test_segreduce]='*SegmentedSum*/cuda:*IndexOfMax*/cuda:*MaximumSubarray*/cuda:*Transposed*/cuda:*EmptySegments*/cuda'
  [test_scan]='*MatrixProductKeepsOrder/cuda:*InPlaceOverTheInputArray/cuda:*OffsetsMatchFlags/cuda:*EveryFlagPatternAffinePacked/cuda:*EveryFlagPatternPlus/cuda'
  [test_sort]='*SortedAndReversedInput/cuda:*NoneOrAllSelected/cuda:*StableWithFewDistinctKeys/cuda'
  [test_app_bfs]='*SingleNode/cuda:*DisconnectedGraph/cuda:*NodesWithoutEdges/cuda:*SelfLoopsAndDuplicateEdges/cuda:*Star/cuda:*DirectedGraphWithSharedAndUnorderedEdgeRanges/cuda:*PathGraphHasAsManyLevelsAsNodes/cuda:*EveryLevelKindAndEveryHandOverInOneTraversal/cuda'
  [test_app_kmeans]='*KmeansApp.EveryVariantValidates/cuda:*KmeansApp.UniformDataWithManyClustersValidates/cuda:*KmeansApp.StoppingAtTheThresholdUndoesTheIterationQueuedAhead/cuda:*KmeansApp.SeveralRanksGiveTheMembershipsOfOne/cuda:*KmeansApp.RodiniasInitialCentroidsForMoreThanHalfThePoints/cuda'
  [test_multi]='*/cuda'
  [test_app_backprop]='*BackpropApp.*/cuda-*Bench*'
  [test_app_gromacs]='*VariantsMatchTheReference/cuda:*BaselinesMatchTheReferenceOnCuda/cuda:*FutharkCaptureOfTheArtifact/cuda'
  [test_app_imgreg]='*HistogramMatchesTheReference/cuda:*FixedPointSumsAreExact/cuda:*RegistersTheTinyPair/cuda'
  [test_app_histo]='*EveryVariantMatchesTheReference/cuda:*ParboilFormatAndCorruptedResults/cuda'
  [test_app_samples_hist]='*EveryVariantMatchesTheReference/cuda:*EveryTail/cuda'
  [test_app_tpacf]='*EveryVariantMatchesTheFloatReference/cuda:*EveryChunkShape/cuda'
  [test_stream]='*/cuda:-*CudaErrorStopsEveryStage*:*WriteFailureMidStream*'
  [test_app_stream]='*Histeq*/cuda:*Blackscholes*/cuda:*Conv1d*/cuda:*StreamZeroByte*/cuda'
  [test_hist]='*OutOfRangeBinsAreIgnored/cuda:*AllElementsInOneBin/cuda:*CasOperators/cuda:*ArgmaxWithTiesToLowerIndexOnCasAndLocks/cuda:*LockPathInOneHotBin/cuda:*SplitHistogramsRunThroughDistributedSharedMemory/cuda:*BatchedHistograms/cuda:*FusedCountsAndVectorSums/cuda:*VectorBinsUpdateElementByElement/cuda:*PartitionedBucketsAnyShape/cuda:*LoadsAheadCountEveryElementOnce/cuda'
)
# racecheck tracks every shared-memory access and costs 10-100x memcheck: where the whole small
# set takes over a minute under it, racecheck runs this subset and memcheck and synccheck the
# whole set (test_hist: the CAS sweeps over every strategy ran past 90 s; AllElementsInOneBin
# still runs the shared CAS kernels under racecheck with its 24-bit saturating add).
declare -A racecheck_filter=(
  [test_app_bfs]='*SingleNode/cuda:*DisconnectedGraph/cuda:*NodesWithoutEdges/cuda:*SelfLoopsAndDuplicateEdges/cuda:*Star/cuda'
  [test_app_kmeans]='*KmeansApp.EveryVariantValidates/cuda:*KmeansApp.StoppingAtTheThresholdUndoesTheIterationQueuedAhead/cuda'
  # NCCL's own kernels are not ours to racecheck; these cover the gathers and folds soac adds.
  [test_multi]='*HistNativeSumEqualsOneContext/cuda:*HistArgMaxGathersAndFolds/cuda:*SegreduceMaxSubarrayCombinesInRankOrder/cuda'
  [test_segreduce]='*SegmentedSum*/cuda:*Transposed*/cuda:*EmptySegments*/cuda'
  [test_hist]='*OutOfRangeBinsAreIgnored/cuda:*AllElementsInOneBin/cuda:*LockPathInOneHotBin/cuda:*SplitHistogramsRunThroughDistributedSharedMemory/cuda:*BatchedHistograms/cuda:*FusedCountsAndVectorSums/cuda:*VectorBinsUpdateElementByElement/cuda:*PartitionedBucketsAnyShape/cuda:*LoadsAheadCountEveryElementOnce/cuda'
)
# NCCL (the lent machine's libnccl) probes its kernels with cudaFuncGetAttributes and handles the
# "no kernel image" answers itself; the sanitizer would report them as API errors. soac checks
# every CUDA call it makes (a failure fails the test), so API errors are not reported for these.
declare -A sanitize_args=(
  [test_multi]='--report-api-errors no'
  [test_app_kmeans]='--report-api-errors no'
)
if has sanitize; then
  echo "== compute-sanitizer (small GPU tests)"; sanitize_start=$SECONDS
  for t in "$bdir"/tests/test_*; do
    name=$(basename "$t")
    [ -x "$t" ] && [ -n "${sanitize_filter[$name]:-}" ] || continue
    [ -z "${SOAC_SANITIZE_ONLY:-}" ] || [[ " $SOAC_SANITIZE_ONLY " == *" $name "* ]] || continue
    filter="${sanitize_filter[$name]}"
    "$t" --gtest_list_tests --gtest_filter="$filter" | grep -q '^  ' || continue
    for tool in ${SOAC_SANITIZE_TOOLS:-memcheck racecheck synccheck}; do
      filter="${sanitize_filter[$name]}"
      [ "$tool" != racecheck ] || filter="${racecheck_filter[$name]:-$filter}"
      start=$SECONDS
      SOAC_UNDER_SANITIZER=1 timeout "${SOAC_SANITIZE_TIMEOUT:-240}" \
        compute-sanitizer --tool "$tool" --error-exitcode 99 ${sanitize_args[$name]:-} "$t" --gtest_filter="$filter" \
        >"$out/sanitize-$name-$tool.log" 2>&1
      rc=$?
      printf '%-22s %-10s %s  (%s, %ds)\n' "$name" "$tool" "$([ $rc -eq 0 ] && echo clean || echo "FAILED ($rc)")" \
        "$(grep -hoE '\[  PASSED  \] [0-9]+ tests?' "$out/sanitize-$name-$tool.log")" $((SECONDS - start))
      [ $rc -eq 0 ] || status=1
    done
  done
  # A small run of every app through the CLI (gen, run, validate) under memcheck: the apps' own
  # code paths, files and settings, beyond what their tests call.
  soac="$bdir/cli/soac"
  listing=$("$soac" list)
  for app in $(grep -E '^[a-z0-9-]+:' <<<"$listing" | cut -d: -f1); do
    [ -z "${SOAC_SANITIZE_ONLY:-}" ] || [[ " $SOAC_SANITIZE_ONLY " == *" $app "* ]] || continue
    presets=$(sed -n "/^$app:/,/^[a-z0-9-]*:/p" <<<"$listing")
    preset=$(grep -oE '^    tiny:' <<<"$presets" || grep -oE '^    small:' <<<"$presets" | head -1)
    preset=$(tr -d ' :' <<<"$preset")
    [ -n "$preset" ] || { printf '%-22s %-10s no tiny or small preset\n' "app $app" memcheck; continue; }
    d="$out/app-$app"; rm -rf "$d"; mkdir -p "$d"; start=$SECONDS
    "$soac" gen "$app" --preset "$preset" -o "$d/data" >"$d/log" 2>&1 &&
      SOAC_UNDER_SANITIZER=1 timeout "${SOAC_SANITIZE_TIMEOUT:-240}" compute-sanitizer --tool memcheck --error-exitcode 99 \
        "$soac" run "$app" -i "$d/data" -o "$d/result" >>"$d/log" 2>&1 &&
      "$soac" validate "$app" -i "$d/data" -r "$d/result" >>"$d/log" 2>&1
    rc=$?
    printf '%-22s %-10s %s  (%s, %ds)\n' "app $app" memcheck "$([ $rc -eq 0 ] && echo clean || echo "FAILED ($rc)")" \
      "$preset, run and validated" $((SECONDS - start))
    [ $rc -eq 0 ] || { status=1; tail -5 "$d/log"; }
    rm -rf "$d/data" "$d/result"
  done
  echo "sanitizers took $((SECONDS - sanitize_start))s"
fi

if has bench; then
  for app in "${apps[@]}"; do
    echo "== bench $app"
    var="SOAC_BENCH_ARGS_$app"
    "$bdir"/cli/soac bench "$app" --json "$out/bench-$app.json" ${!var:-} 2>"$out/bench-$app.err" \
      >"$out/bench-$app.txt" || { status=1; tail "$out/bench-$app.err"; }
  done
fi
tar -C "$out" -czf "$out/logs.tgz" --exclude logs.tgz . 2>/dev/null
exit $status
