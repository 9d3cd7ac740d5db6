#!/usr/bin/env bash
# soac under mpiexec (CTest mpi_cli, label host): k-means with --set devices=mpi over 2 and 3
# processes writes the memberships of one process and passes validation; the hist bench with
# --ranks mpi prints its process table; a bad setting ends every rank with the usage exit code.
# Usage: tests/mpi_cli.sh SOAC MPIEXEC
set -uo pipefail
soac="$1" mpiexec="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "mpi_cli: FAILED: $*" >&2; exit 1; }

"$soac" gen kmeans -o "$work/data" --set n=3001 --set d=6 --set k=5 >/dev/null || fail "soac gen kmeans"
"$soac" run kmeans -i "$work/data" -o "$work/one" --backend host >/dev/null || fail "one process"
for np in 2 3; do
  "$mpiexec" -n "$np" "$soac" run kmeans -i "$work/data" -o "$work/np$np" --backend host --set devices=mpi >"$work/run$np.log" 2>&1 ||
    { cat "$work/run$np.log"; fail "kmeans over $np processes"; }
  grep -q "$np ranks: one per MPI process" "$work/run$np.log" || { cat "$work/run$np.log"; fail "kmeans over $np processes: no rank line"; }
  cmp -s "$work/one/membership.npy" "$work/np$np/membership.npy" || fail "memberships over $np processes differ from one process's"
  cmp -s "$work/one/first_membership.npy" "$work/np$np/first_membership.npy" || fail "first memberships over $np processes differ"
  "$soac" validate kmeans -i "$work/data" -r "$work/np$np" --backend host >/dev/null || fail "validate the result of $np processes"
done

"$mpiexec" -n 2 "$soac" bench hist --ranks mpi --backend host --set n=300000 --set H=256 --runs 2 --warmup 1 --no-progress \
  >"$work/bench.log" 2>&1 || { cat "$work/bench.log"; fail "bench hist --ranks mpi"; }
grep -q "2 processes .*" "$work/bench.log" && grep -q "parallel efficiency" "$work/bench.log" || { cat "$work/bench.log"; fail "no process table"; }

"$mpiexec" -n 2 "$soac" bench hist --ranks mpi --backend host --set Q=3 >"$work/bad.log" 2>&1
code=$?
[ "$code" -eq 2 ] || { cat "$work/bad.log"; fail "a bad setting exited $code, not 2 (usage)"; }
grep -q "soac (rank [01] of 2): error: .*unknown setting 'Q'" "$work/bad.log" || { cat "$work/bad.log"; fail "no rank-prefixed error"; }
echo "mpi_cli: passed"
