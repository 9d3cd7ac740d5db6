#!/usr/bin/env bash
# Packs a local sm_90 build for the lent GPU machine, so a device call spends no time compiling:
# the executables and CTest files of BUILD_DIR (default build) into .gpubin/build.tar.xz, which
# the device tool carries (`carry: [".gpubin"]`). There, scripts/gpu-check.sh with
# SOAC_PREBUILT=1 unpacks it. The binaries keep this checkout's absolute paths (CTest files,
# test_cli's path to soac), so the check links this path to the device's copy.
# Usage: scripts/gpu-pack.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
[ -x "$build/cli/soac" ] || { echo "gpu-pack: $build/cli/soac is missing: build first (scripts/build.sh)" >&2; exit 1; }
grep -q 'code=\[compute_90,sm_90\]' "$build/build.ninja" "$build/Makefile" 2>/dev/null ||
  { echo "gpu-pack: $build is not built for sm_90 (CMAKE_CUDA_ARCHITECTURES=90)" >&2; exit 1; }
mkdir -p .gpubin
# The GPU machine has Open MPI 4.1 of its own (Ubuntu's, with mpirun), whose libmpi.so.40 the
# binaries load there; mpi_ranks travels for mpirun tests on it.
files=("$build/cli/soac" $(find "$build" -name CTestTestfile.cmake)
       $(find "$build/tests" -maxdepth 1 -type f \( -name 'test_*' -o -name 'mpi_ranks' \) -perm -u+x))
tar -cf - "${files[@]}" | xz -T0 -6 >.gpubin/build.tar.xz
echo "$PWD" >.gpubin/source-dir
git rev-parse --short HEAD >.gpubin/commit 2>/dev/null || true
echo "gpu-pack: .gpubin/build.tar.xz ($(du -h .gpubin/build.tar.xz | cut -f1)) from $build at $(cat .gpubin/commit)"
