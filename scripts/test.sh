#!/usr/bin/env bash
# Builds soac and runs every test. Without a GPU the CUDA tests report "skipped"; on a GPU
# machine they run (ctest -L gpu runs only those). Extra arguments go to this first ctest.
# Then the hardening steps CI runs (README, "Fuzzing and sanitizers"): the host tests again under
# AddressSanitizer + UndefinedBehaviorSanitizer (scripts/sanitize.sh, its own build folder; the
# fuzz targets' saved inputs are among its tests) and the readers' fuzz targets for
# SOAC_CI_FUZZ_SECONDS each (default 15; scripts/fuzz.sh, clang). The targets that drive the apps
# (app, options) need every app built a third time, with clang: too long for CI on two cores, so
# SOAC_CI_FUZZ_TARGETS="app options ..." asks for them. SOAC_CI_EXTRAS=0 skips the hardening
# steps (a quicker local run); .ci/run always runs them.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
(cd "${SOAC_BUILD_DIR:-build}" && ctest --output-on-failure -j "$(nproc)" "$@")
if [ "${SOAC_CI_EXTRAS:-1}" != 0 ]; then
  start=$(date +%s)
  SOAC_SKIP_SETUP=1 scripts/sanitize.sh
  # shellcheck disable=SC2086
  scripts/fuzz.sh "${SOAC_CI_FUZZ_SECONDS:-15}" ${SOAC_CI_FUZZ_TARGETS:-npy parboil_histo parboil_tpacf rodinia_graph rodinia_kmeans futhark_data image}
  echo "test: the sanitizer and fuzz steps took $(( $(date +%s) - start )) s"
fi
