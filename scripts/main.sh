#!/usr/bin/env bash
# The main job, a short tour: build, then a few apps on their default presets, each generated,
# run and validated against its sequential reference, and a table of what ran. On the GPU when
# there is one, else on the host backend (it says so). Arguments go to CMake (scripts/build.sh).
#   SOAC_APPS="hist bfs"   the apps to visit (default below)
#   SOAC_BACKEND=host      force the host backend
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh "$@"
soac=build/cli/soac
backend="${SOAC_BACKEND:-auto}"
apps=(${SOAC_APPS:-hist segreduce scatter bfs kmeans histo gromacs})

info=$("$soac" info --backend "$backend" 2>/dev/null || true)
if [ "$backend" = host ]; then
  echo "tour: SOAC_BACKEND=host: every app runs on the host backend (OpenMP)"
elif [[ "$info" != *"backend cuda"* ]]; then
  backend=host
  echo "tour: no CUDA GPU here: every app runs on the host backend (OpenMP)"
else
  echo "tour: on $(sed -n 's/^backend cuda: //p' <<<"$info")"
fi

mkdir -p data
rows=()
failed=0
for app in "${apps[@]}"; do
  echo
  list=$("$soac" list)
  echo "== $app: $(sed -n "s/^$app: //p" <<<"$list" | cut -c1-110)"
  dataset="data/$app" result="data/$app.result"
  [ -f "$dataset/manifest.json" ] || "$soac" gen "$app" -o "$dataset" 2>/dev/null | sed 's/^/   /'
  start=$(date +%s%N)
  run_out=$("$soac" run "$app" -i "$dataset" -o "$result" --backend "$backend")
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
  echo "$run_out" | sed 's/^/   /'
  if check=$("$soac" validate "$app" -i "$dataset" -r "$result"); then verdict=VALID; else verdict=INVALID; failed=1; fi
  echo "   ${check%%$'\n'*}"
  preset=$(sed -n 's/.*"preset": *"\([^"]*\)".*/\1/p' "$dataset/manifest.json" | head -1)
  # The run's own summary of what it did and how long it took: its last line before "result written".
  summary=$(echo "$run_out" | grep -v "^result written" | tail -1 | sed 's/^ *//' | cut -c1-70)
  rows+=("$(printf '| %-10s | %-14s | %-70s | %4d.%02d s | %-7s |' "$app" "$preset" "$summary" $((ms / 1000)) $((ms % 1000 / 10)) "$verdict")")
done

echo
echo "tour results ($backend backend; wall time of soac run, loading the dataset included)"
printf '| %-10s | %-14s | %-70s | %9s | %-7s |\n' app preset "what the run reports" "run" check
printf '|%s|%s|%s|%s|%s|\n' "------------" "----------------" "$(printf -- '-%.0s' {1..72})" "-----------" "---------"
printf '%s\n' "${rows[@]}"
cat <<'EOF'

where to look next:
  build/cli/soac list                       every app, its presets, variants and the original formats it reads
  build/cli/soac bench APP                  the app's variants against in-run baselines (CUB, Rodinia's, Parboil's structure)
  build/cli/soac reproduce all --quick      the papers' tables and figures on this machine, as a report with plots
  README.md                                 the apps, the core API, the papers' numbers on an H100 (results/)
EOF
exit $failed
