#!/usr/bin/env bash
# Regenerates the seed corpora in fuzz/corpus/ from `soac gen` (small datasets of every app, in
# soac bundles and in the originals' formats) and a few hand-made files:
#   fuzz/make-corpus.sh [SOAC]      (default build/cli/soac)
# Seeds are kept to a few KB each so the fuzzer mutates them quickly and the repository stays small.
set -euo pipefail
cd "$(dirname "$0")/.."
soac=${1:-build/cli/soac}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
corpus=fuzz/corpus
rm -rf "$corpus"
mkdir -p "$corpus"/{app,npy,parboil_histo,parboil_tpacf,rodinia_graph,rodinia_kmeans,image,options,futhark_data}
gen() { "$soac" gen "$@" >/dev/null 2>&1 || { echo "make-corpus: soac gen $* failed" >&2; exit 1; }; }

# Every app's dataset as a bundle, shrunk: APP PRESET [--set K=V ...].
bundles=(
  "scatter tiny --set n=40 --set k=12"
  "hist tiny --set n=64 --set H=31 --set RF=3"
  "hist small --set n=50 --set H=16 --set op=hdw"
  "segreduce tiny --set m=6 --set n=5"
  "segreduce mss --set m=4 --set n=6"
  "scan small --set n=80 --set segment=7"
  "radixsort tiny --set n=40"
  "kmeans tiny --set n=30 --set d=3 --set k=3 --set blobs=3"
  "backprop tiny --set layer_size=20"
  "histo tiny --set image_width=9 --set image_height=7 --set histo_width=5 --set histo_height=4"
  "tpacf tiny --set points=12 --set randoms=2"
  "samples-hist tiny --set bytes=77"
  "gromacs tiny --set particles=12 --set pairs=30 --set lists=5"
  "imgreg tiny --set width=12 --set height=10 --set levels=8"
  "bfs tiny --set nodes=12"
  "stream tiny --set bytes=61"
  "histeq tiny --set frames=2 --set width=7 --set height=5"
  "blackscholes tiny --set options=9"
  "conv1d tiny --set elements=23"
)
for spec in "${bundles[@]}"; do
  read -r app preset sets <<<"$spec"
  out="$work/$app-$preset"
  # shellcheck disable=SC2086
  gen "$app" --preset "$preset" $sets -o "$out"
  fuzz/pack-input.sh "$app" bundle -- "$out"/manifest.json "$out"/*.npy >"$corpus/app/$app-$preset"
  for f in "$out"/*.npy; do cp "$f" "$corpus/npy/$app-$preset-$(basename "$f")"; done
done

# Some with a result bundle (from soac run on the host backend) for validate to check.
for name in scatter-tiny hist-tiny segreduce-mss histo-tiny bfs-tiny kmeans-tiny gromacs-tiny tpacf-tiny; do
  app=${name%-*} out="$work/$name"
  "$soac" run "$app" -i "$out" -o "$out.result" --backend host >/dev/null 2>&1 || { echo "make-corpus: soac run $app failed" >&2; exit 1; }
  results=()
  for f in "$out.result"/*; do [ "$(basename "$f")" = manifest.json ] || results+=("result/$f"); done
  fuzz/pack-input.sh "$app" bundle -- "$out"/manifest.json "$out"/*.npy "result/$out.result/manifest.json" "${results[@]}" \
    >"$corpus/app/$name-result"
done

# The originals' formats, through the apps and through their readers' own targets.
gen histo --preset tiny --set image_width=9 --set image_height=7 --set histo_width=5 --set histo_height=4 --format parboil -o "$work/img.bin"
fuzz/pack-input.sh histo parboil "set: iterations=2" -- "$work/img.bin" >"$corpus/app/histo-parboil"
cp "$work/img.bin" "$corpus/parboil_histo/tiny.bin"
gen tpacf --preset tiny --set points=10 --set randoms=2 --format parboil -o "$work/tpacf"
fuzz/pack-input.sh tpacf parboil "inputs: ." -- "$work"/tpacf/* >"$corpus/app/tpacf-parboil"
{ printf '\003'; cat "$work/tpacf/Datapnts.1"; } >"$corpus/parboil_tpacf/three-of-data"
{ printf '\000'; cat "$work/tpacf/Randompnts.1"; } >"$corpus/parboil_tpacf/all-of-random"
gen bfs --preset tiny --set nodes=12 --format rodinia -o "$work/graph.txt"
fuzz/pack-input.sh bfs rodinia "variant: auto,alpha=3" -- "$work/graph.txt" >"$corpus/app/bfs-rodinia"
cp "$work/graph.txt" "$corpus/rodinia_graph/tiny.txt"
for f in rodinia rodinia-bin; do
  gen kmeans --preset tiny --set n=12 --set d=3 --set k=3 --set blobs=3 --format $f -o "$work/points.$f"
  fuzz/pack-input.sh kmeans $f "set: k=2" -- "$work/points.$f" >"$corpus/app/kmeans-$f"
done
{ printf '\000'; cat "$work/points.rodinia"; } >"$corpus/rodinia_kmeans/text"
{ printf '\001'; cat "$work/points.rodinia-bin"; } >"$corpus/rodinia_kmeans/binary"
gen imgreg --preset tiny --set width=12 --set height=10 --set levels=8 --format image -o "$work/imgreg"
fuzz/pack-input.sh imgreg image "inputs: fixed.png moving.png" -- "$work"/imgreg/* >"$corpus/app/imgreg-image"
cp "$work"/imgreg/*.png "$corpus/image/"
gen samples-hist --preset tiny --set bytes=50 --format raw -o "$work/bytes.raw"
fuzz/pack-input.sh samples-hist raw -- "$work/bytes.raw" >"$corpus/app/samples-hist-raw"
gen stream --preset tiny --set bytes=40 --format raw -o "$work/stream.raw"
fuzz/pack-input.sh stream raw "set: dtype=uint32" "set: bins=7" -- "$work/stream.raw" >"$corpus/app/stream-raw"
gen conv1d --preset tiny --set elements=23 --format raw -o "$work/conv.raw"
fuzz/pack-input.sh conv1d raw "set: radius=2" -- "$work/conv.raw" >"$corpus/app/conv1d-raw"
gen histeq --preset tiny --set frames=2 --set width=7 --set height=5 --format raw -o "$work/video.raw"
fuzz/pack-input.sh histeq raw "set: width=7" "set: height=5" -- "$work/video.raw" >"$corpus/app/histeq-raw"
gen blackscholes --preset tiny --set options=9 --format raw -o "$work/bs"
fuzz/pack-input.sh blackscholes raw "inputs: ." -- "$work"/bs/* >"$corpus/app/blackscholes-raw"

# Images in other formats stb_image reads: a PGM, a 24-bit BMP (Parboil histo's writer), an 8-bit
# grey TGA; python3 writes them byte for byte.
python3 - "$corpus/image" <<'PY'
import struct, sys, os
d = sys.argv[1]
w, h = 5, 3
px = bytes((x * 40 + y * 20) % 256 for y in range(h) for x in range(w))
open(os.path.join(d, "grey.pgm"), "wb").write(b"P5\n%d %d\n255\n" % (w, h) + px)
row = (w * 3 + 3) // 4 * 4
body = b"".join(bytes(c for x in range(w) for c in (px[y * w + x],) * 3).ljust(row, b"\0") for y in range(h))
head = b"BM" + struct.pack("<IHHI", 54 + len(body), 0, 0, 54) + struct.pack("<IiiHHIIiiII", 40, w, h, 1, 24, 0, len(body), 0, 0, 0, 0)
open(os.path.join(d, "rgb.bmp"), "wb").write(head + body)
tga = struct.pack("<BBBHHBHHHHBB", 0, 0, 3, 0, 0, 0, 0, 0, w, h, 8, 0) + px
open(os.path.join(d, "grey.tga"), "wb").write(tga)
open(os.path.join(d, "wide.ppm"), "wb").write(b"P6 2 1 65535 " + bytes([16] * 12))
PY

# Futhark's data files (datasets/futhark_data.hpp): text, binary, and both in one file.
python3 - "$corpus/futhark_data" <<'PY'
import struct, sys, os
d = sys.argv[1]
def binary(type4, dims, fmt, elems):
    return b"b\x02" + bytes([len(dims)]) + type4 + b"".join(struct.pack("<Q", n) for n in dims) + struct.pack("<" + fmt * len(elems), *elems)
def put(name, data):
    open(os.path.join(d, name), "wb").write(data)
put("text-scalars", b"1i8 -2i16 3 4i64 5u8 6u16 7u32 8u64 1.5f16 2.5f32 3.25 true false f32.nan -f64.inf 0x1F 0b101 1_000\n")
put("text-arrays", b"-- arrays\n[[1f32, 2f32], [3f32, 4f32],]\nempty([0][3]i32)\n[empty([0]u8), empty([0]u8)]\n[[true], [false]]\n")
put("binary-i32", binary(b" i32", [3], "i", [7, -8, 9]))
put("binary-f16-bool", binary(b" f16", [2], "H", [0x3e00, 0xfc00]) + binary(b"bool", [2, 2], "B", [1, 0, 0, 1]))
put("mixed", b"-- jindex, ntype, facel, pos\n[0, 2, 3]\n19i32 0.5f32\n" + binary(b" f32", [2, 3], "f", [0.5, 1, -2, 0.25, 3, 4]) + b"\n[1.5, 2.5]\n")
PY

# Option texts: the first byte picks the app and preset, then one value per line.
printf '\000n=1e7\nH=2^20\nRF=0\nk=3\nshared,M=1,S=2,RF=63\nstrategy=global,atomic=xcg\n' >"$corpus/options/numbers"
printf '\001auto,alpha=3,beta=5.5,tpn=64\nauto,round=7,blocks=1\nsegmented\nrodinia\nsource=-1\n' >"$corpus/options/bfs"
printf '\007slices,private=on\nparboil\npoints=10\nrandoms=2\n2^62\n-0.25\n' >"$corpus/options/tpacf"
printf '\011hist,parts=2\nk=dataset\ninit=kmeans++\nthreshold=0.5\nrodinia-bin\n' >"$corpus/options/kmeans"
du -sh "$corpus"/* >&2
