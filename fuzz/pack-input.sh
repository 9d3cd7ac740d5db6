#!/usr/bin/env bash
# Packs files into one input of fuzz_app (the form fuzz/fuzz_app.cpp describes), on stdout:
#   fuzz/pack-input.sh APP FORMAT|bundle [HEADER-LINE...] -- FILE... [result/FILE...]
# e.g. fuzz/pack-input.sh hist bundle "variant: shared" -- data/h/manifest.json data/h/image.npy
# A FILE given as result/PATH is stored as result/<its name>, a result bundle's file.
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 APP FORMAT|bundle [HEADER-LINE...] -- FILE..." >&2; exit 2; }
app=$1 format=$2
shift 2
printf 'app: %s' "$app"
[ "$format" = bundle ] || printf '\nformat: %s' "$format"
while [ $# -gt 0 ] && [ "$1" != -- ]; do printf '\n%s' "$1"; shift; done
[ $# -gt 0 ] && shift
for f in "$@"; do
  name=$(basename "$f")
  case "$f" in result/*) f=${f#result/}; name=result/$(basename "$f") ;; esac
  printf '\n==> %s <==\n' "$name"
  cat "$f"
done
