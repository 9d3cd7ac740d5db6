#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/fuzz_*.cpp) with clang, AddressSanitizer and
# UndefinedBehaviorSanitizer in build-fuzz/, then runs each for SECONDS (default 60) over its seed
# corpus (fuzz/corpus/NAME, never written to: new inputs go to build-fuzz/corpus/NAME), one target
# at a time on one thread, and prints executions, executions per second and the result per target.
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]      targets: app npy options image ... (default all)
# A crash, hang (10 s per input), leak, sanitizer report or uncaught exception stops that target;
# its input is saved as build-fuzz/crashes/NAME-crash-<sha1> (replay: build-fuzz/fuzz/fuzz_NAME FILE)
# and the script exits 1 after running the rest. SOAC_FUZZ_BUILD_DIR picks another build folder;
# SOAC_FUZZ_ARGS adds libFuzzer options (e.g. -runs=1000000, or -fork=3 for three worker processes
# per target). SOAC_FUZZ_PARALLEL=1 runs the targets at once instead of one after another;
# SOAC_FUZZ_PREBUILT=1 runs the targets already in the build folder without building (e.g. a
# build copied to a machine with more cores).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-60}
[ $# -gt 0 ] && shift
if ! [[ $seconds =~ ^[0-9]+$ ]]; then echo "usage: $0 [SECONDS_PER_TARGET] [TARGET...]" >&2; exit 2; fi

if [ "${SOAC_SKIP_SETUP:-0}" != 1 ]; then scripts/setup-deps.sh --fuzz; fi
[ -x /usr/local/cuda/bin/nvcc ] && export PATH="/usr/local/cuda/bin:$PATH"

build=${SOAC_FUZZ_BUILD_DIR:-build-fuzz}
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for f in fuzz/fuzz_*.cpp; do n=$(basename "$f" .cpp); targets+=("${n#fuzz_}"); done
fi
for t in "${targets[@]}"; do
  [ -f "fuzz/fuzz_$t.cpp" ] || { echo "fuzz: no target '$t' (fuzz/fuzz_$t.cpp)" >&2; exit 2; }
done

if [ "${SOAC_FUZZ_PREBUILT:-0}" = 1 ]; then
  for t in "${targets[@]}"; do [ -x "$build/fuzz/fuzz_$t" ] || { echo "fuzz: $build/fuzz/fuzz_$t is missing" >&2; exit 2; }; done
else
  generator=()
  if [ ! -f "$build/CMakeCache.txt" ] && command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
  # PTX only (90-virtual): nothing CUDA runs here, and it spares ptxas on every kernel.
  cmake -S . -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSOAC_FUZZ=ON -DSOAC_BUILD_TESTS=OFF \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_CUDA_HOST_COMPILER=clang++ \
    -DCMAKE_CUDA_ARCHITECTURES=90-virtual >/dev/null
  build_targets=()
  for t in "${targets[@]}"; do build_targets+=(--target "fuzz_$t"); done
  start=$(date +%s)
  cmake --build "$build" -j "$(nproc)" "${build_targets[@]}"
  echo "fuzz: built ${#targets[@]} target(s) in $(( $(date +%s) - start )) s"
fi

mkdir -p "$build/crashes"
# The targets write each input to files: in memory (/dev/shm) where there is one.
scratch=$(mktemp -d -p "$( [ -w /dev/shm ] && echo /dev/shm || echo "${TMPDIR:-/tmp}")")
trap 'rm -rf "$scratch"' EXIT
# One thread: the host backend's OpenMP loops would otherwise take every core.
export OMP_NUM_THREADS=1 TMPDIR="$scratch"
export ASAN_OPTIONS=${ASAN_OPTIONS:-protect_shadow_gap=0} UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
# Runs target $1 for $seconds, prints and keeps (in $build/fuzz-$1.result) its line of the summary.
fuzz_one() {
  local t=$1 work log leaks rc execs rate result artifact line
  work="$build/corpus/$t"
  mkdir -p "$work"
  log="$build/fuzz-$t.log"
  echo "fuzz: $t for ${seconds} s (log $log)"
  set +e
  # app and options link the apps, whose host code nvcc hands to clang: that pairing shows a
  # 48-byte leak per run (a json member of bundle_writer) that the same code built with g++ does
  # not have (scripts/sanitize.sh replays their inputs with leak checks), so theirs are off.
  leaks=1
  case $t in app | options) leaks=0 ;; esac
  # shellcheck disable=SC2086
  ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=$leaks" "$build/fuzz/fuzz_$t" -detect_leaks=$leaks -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$build/crashes/$t-" ${SOAC_FUZZ_ARGS:-} "$work" "fuzz/corpus/$t" >"$log" 2>&1
  rc=$?
  set -e
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  if [ -z "$execs" ]; then  # -fork mode prints no final stats, only progress lines "#N: ... exec/s R ..."
    execs=$(sed -n 's/^#\([0-9]*\): .*/\1/p' "$log" | tail -1)
    rate=$(sed -n 's/^#[0-9]*: .* exec\/s \([0-9]*\) .*/\1/p' "$log" | tail -1)
  fi
  if [ $rc -eq 0 ]; then
    result="ok"
  else
    artifact=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)
    result="FAILED (exit $rc; input ${artifact:-none saved}; see $log)"
    grep -m3 -E "ERROR: |runtime error|SUMMARY|uncaught exception|Exception|deadly signal" "$log" | sed 's/^/  /' || true
  fi
  line=$(printf '%-16s %12s executions %8s exec/s  %s' "$t" "${execs:-?}" "${rate:-?}" "$result")
  echo "fuzz: $line"
  echo "$line" >"$build/fuzz-$t.result"
  return $rc
}

failed=()
if [ "${SOAC_FUZZ_PARALLEL:-0}" = 1 ]; then  # all targets at once (a machine with a core or more per target)
  pids=()
  for t in "${targets[@]}"; do fuzz_one "$t" & pids+=($!); done
  for i in "${!targets[@]}"; do wait "${pids[$i]}" || failed+=("${targets[$i]}"); done
else
  for t in "${targets[@]}"; do fuzz_one "$t" || failed+=("$t"); done
fi
summary=()
for t in "${targets[@]}"; do summary+=("$(cat "$build/fuzz-$t.result")"); done
echo "fuzz: summary ($seconds s per target, $(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown))"
printf '  %s\n' "${summary[@]}"
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: ${#failed[@]} target(s) failed: ${failed[*]}" >&2
  exit 1
fi
