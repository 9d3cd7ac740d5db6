#!/usr/bin/env bash
# The main job: build, generate the default dataset, run it (on the GPU when there is one,
# else on the host backend), and validate the result against the sequential reference.
# Arguments go to CMake (scripts/build.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh "$@"
soac=build/cli/soac
app="${SOAC_APP:-scatter}"
mkdir -p data
[ -f "data/$app/manifest.json" ] || "$soac" gen "$app" -o "data/$app"
"$soac" run "$app" -i "data/$app" -o "data/$app.result" --backend "${SOAC_BACKEND:-auto}"
"$soac" validate "$app" -i "data/$app" -r "data/$app.result"
