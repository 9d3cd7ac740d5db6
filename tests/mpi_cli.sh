#!/usr/bin/env bash
# soac under mpiexec (CTest mpi_cli, label host): k-means with --set devices=mpi over 2 and 3
# processes, from a bundle and from Rodinia's text and binary files read in parts, writes the
# memberships of one process (gathered, or a file per process) and passes validation; hist, segreduce and stream runs give one
# process's result; the hist bench with
# --ranks mpi prints its process table; a bad setting ends every rank with the usage exit code.
# Usage: tests/mpi_cli.sh SOAC MPIEXEC
set -uo pipefail
soac="$1" mpiexec="$2"
# On a GPU machine: MPI_CLI_BACKEND=cuda MPI_CLI_MAX_NP=2 (a GPU per process).
backend="${MPI_CLI_BACKEND:-host}" top="${MPI_CLI_MAX_NP:-3}"
nps=$(seq 2 "$top")
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "mpi_cli: FAILED: $*" >&2; exit 1; }

"$soac" gen kmeans -o "$work/data" --set n=3001 --set d=6 --set k=5 >/dev/null || fail "soac gen kmeans"
"$soac" run kmeans -i "$work/data" -o "$work/one" --backend "$backend" >/dev/null || fail "one process"
for np in $nps; do
  "$mpiexec" -n "$np" "$soac" run kmeans -i "$work/data" -o "$work/np$np" --backend "$backend" --set devices=mpi >"$work/run$np.log" 2>&1 ||
    { cat "$work/run$np.log"; fail "kmeans over $np processes"; }
  grep -q "$np ranks: one per MPI process" "$work/run$np.log" || { cat "$work/run$np.log"; fail "kmeans over $np processes: no rank line"; }
  cmp -s "$work/one/membership.npy" "$work/np$np/membership.npy" || fail "memberships over $np processes differ from one process's"
  cmp -s "$work/one/first_membership.npy" "$work/np$np/first_membership.npy" || fail "first memberships over $np processes differ"
  "$soac" validate kmeans -i "$work/data" -r "$work/np$np" --backend "$backend" >/dev/null || fail "validate the result of $np processes"
done

# Rodinia's files, each process reading its part (text: its bytes cut at line starts; binary: its
# rows by offset): the memberships of one process. Words in two parts of the text are read as
# Rodinia's atof reads them, summed into the one note a single process prints; strict=1 refuses
# them with the same exit code as one process.
"$soac" gen kmeans -o "$work/p.txt" --format rodinia --set n=3001 --set d=6 --set k=5 >/dev/null 2>&1 || fail "gen rodinia text"
"$soac" gen kmeans -o "$work/p.bin" --format rodinia-bin --set n=3001 --set d=6 --set k=5 >/dev/null 2>&1 || fail "gen rodinia binary"
sed -i -e '700s/^\([0-9]*\) [^ ]*/\1 tcp/' -e '2900s/$/ extra/' "$work/p.txt"
"$soac" run kmeans -i "$work/p.txt" --format rodinia -o "$work/t1" --backend "$backend" >/dev/null 2>"$work/t1.err" || fail "rodinia text, one process"
grep -q "p.txt:700:.*'tcp' is not a number.*2 places read leniently" "$work/t1.err" || { cat "$work/t1.err"; fail "one process's note"; }
"$soac" run kmeans -i "$work/p.bin" --format rodinia-bin -o "$work/b1" --backend "$backend" >/dev/null || fail "rodinia binary, one process"
for np in $nps; do
  for f in txt bin; do
    format=rodinia; [ "$f" = bin ] && format=rodinia-bin
    "$mpiexec" -n "$np" "$soac" run kmeans -i "$work/p.$f" --format "$format" -o "$work/$f$np" --backend "$backend" --set devices=mpi \
      >"$work/$f$np.log" 2>"$work/$f$np.err" || { cat "$work/$f$np.err"; fail "$format over $np processes"; }
  done
  cmp -s "$work/t1/membership.npy" "$work/txt$np/membership.npy" || fail "text over $np processes: memberships differ from one process's"
  cmp -s "$work/b1/membership.npy" "$work/bin$np/membership.npy" || fail "binary over $np processes: memberships differ"
  cmp -s "$work/t1.err" "$work/txt$np.err" || { diff "$work/t1.err" "$work/txt$np.err"; fail "text over $np processes: notes differ"; }
done
"$soac" validate kmeans -i "$work/p.txt" --format rodinia -r "$work/txt$top" --backend "$backend" >/dev/null || fail "validate text over $top processes"
# memberships=parts: each process writes its points' memberships, the manifest lists the files;
# their data, in order, are one process's memberships.
"$mpiexec" -n "$top" "$soac" run kmeans -i "$work/p.txt" --format rodinia -o "$work/parts" --backend "$backend" --set devices=mpi \
  --set memberships=parts >"$work/parts.log" 2>&1 || { cat "$work/parts.log"; fail "memberships=parts"; }
npy_data() { tail -c +"$((10 + $(od -An -tu2 -j8 -N2 "$1" | tr -d ' ') + 1))" "$1"; }  # a version 1.0 .npy's data
for p in $(seq 0 $((top - 1))); do
  grep -q "membership.part-$p.npy" "$work/parts/manifest.json" || fail "memberships=parts: part $p not listed"
done
cmp -s <(npy_data "$work/t1/membership.npy") <(for p in $(seq 0 $((top - 1))); do npy_data "$work/parts/membership.part-$p.npy"; done) ||
  fail "memberships=parts: the parts' data are not one process's memberships"
"$soac" validate kmeans -i "$work/p.txt" --format rodinia -r "$work/parts" --backend "$backend" >/dev/null || fail "validate memberships=parts"
"$soac" run kmeans -i "$work/p.txt" --format rodinia -o "$work/s1" --backend "$backend" --set strict=1 >/dev/null 2>"$work/s1.err"
one=$?
"$mpiexec" -n "$top" "$soac" run kmeans -i "$work/p.txt" --format rodinia -o "$work/s3" --backend "$backend" --set strict=1 --set devices=mpi \
  >/dev/null 2>"$work/s3.err"
code=$?
[ "$one" -ne 0 ] && [ "$code" -eq "$one" ] || { cat "$work/s3.err"; fail "strict over $top processes exited $code, one process $one"; }
# Rank 0 refuses line 700 and the last rank line 2900: whichever aborts first names its place.
grep -Eq "soac \(rank (0 of $top\): error: .*p.txt:700:.*'tcp' is not a number|$((top - 1)) of $top\): error: .*p.txt:2900:.*tokens after).*strict=1" \
  "$work/s3.err" || { cat "$work/s3.err"; fail "strict's error"; }

# hist, segreduce and stream runs over processes, each reading its part (bundle rows by offset, a
# raw file's range): the result of one process, bit for bit. argmax combines the partials by its
# own operator; segreduce's one segment is split over the processes, 101 over 2 are whole.
same_over() {  # NAME NP ARGS...: one process, then NP processes, the same result arrays
  local name="$1" np="$2"
  shift 2
  "$soac" run "$@" -o "$work/$name.1" --backend "$backend" >/dev/null 2>"$work/$name.err" || { cat "$work/$name.err"; fail "$name, one process"; }
  "$mpiexec" -n "$np" "$soac" run "$@" -o "$work/$name.$np" --backend "$backend" --set devices=mpi >"$work/$name.log" 2>&1 ||
    { cat "$work/$name.log"; fail "$name over $np processes"; }
  grep -q "$np ranks: one per MPI process" "$work/$name.log" || { cat "$work/$name.log"; fail "$name: no rank line"; }
  for f in "$work/$name.1"/*.npy; do
    cmp -s "$f" "$work/$name.$np/$(basename "$f")" || fail "$name over $np processes: $(basename "$f") differs from one process's"
  done
}
"$soac" gen hist -o "$work/h" --set n=100003 --set H=1000 --set RF=63 --set op=xcg >/dev/null 2>&1 || fail "gen hist"
same_over hist "$top" hist -i "$work/h"
for shape in "1 5001 $top" "101 37 2"; do
  set -- $shape
  "$soac" gen segreduce -o "$work/sr$1" --set operator=mss --set m="$1" --set n="$2" >/dev/null 2>&1 || fail "gen segreduce"
  same_over "segreduce$1" "$3" segreduce -i "$work/sr$1"
done
head -c 1000003 /dev/urandom >"$work/bytes.raw"
same_over stream "$top" stream -i "$work/bytes.raw" --format raw

"$mpiexec" -n 2 "$soac" bench hist --ranks mpi --backend "$backend" --set n=300000 --set H=256 --runs 2 --warmup 1 --no-progress \
  >"$work/bench.log" 2>&1 || { cat "$work/bench.log"; fail "bench hist --ranks mpi"; }
grep -q "2 processes .*" "$work/bench.log" && grep -q "parallel efficiency" "$work/bench.log" || { cat "$work/bench.log"; fail "no process table"; }

"$mpiexec" -n 2 "$soac" bench hist --ranks mpi --backend "$backend" --set Q=3 >"$work/bad.log" 2>&1
code=$?
[ "$code" -eq 2 ] || { cat "$work/bad.log"; fail "a bad setting exited $code, not 2 (usage)"; }
grep -q "soac (rank [01] of 2): error: .*unknown setting 'Q'" "$work/bad.log" || { cat "$work/bad.log"; fail "no rank-prefixed error"; }
echo "mpi_cli: passed"
