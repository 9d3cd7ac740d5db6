#!/usr/bin/env python3
"""The mutated-bundle sweep (issue 28): every app's tiny dataset, mutated in every way a user's
file could be wrong, through `soac run` and `soac validate` on the host backend.

For each app: `soac gen` writes its tiny dataset, `soac run` / `soac validate` must accept it
(exit 0). Then three kinds of mutation, each run with a timeout:
  dataset  every manifest field (params, format, version, kind, app, each array's entry) set to
           0, negative, huge, the wrong type or removed; each .npy truncated, extended, its
           header and data bytes flipped, its data filled with 0x00 / 0xFF / 0x7F bytes
           -> `soac run` on it and `soac validate` of it against the good result
  result   the same mutations of the good result -> `soac validate`
  gen      each parameter given to `soac gen --set` as 0, negative, huge, a fraction (strings:
           an unknown word, empty) -> when gen accepts, `soac run` and `soac validate` must not
           reject the dataset (gen rejects what run would reject)
A command fails the sweep when it ends by a signal, runs past the timeout, or exits with a code
other than the documented 0-5 (README: 0 ok, 1 invalid, 2 usage, 3 input, 4 CUDA, 5 memory).

--select K/N runs the mutations whose stable hash is K modulo N (the bounded CTest entry runs a
fixed fraction); --jobs runs that many commands at once. Prints the failures, a count per app
and exit code, and exits 1 when anything failed.

Each command runs under a virtual-memory limit (--memory-mb) so that a mutation asking for a
huge allocation can never take the machine down: soac must say "out of memory" (exit 5) from
its own check, or the allocation fails (std::bad_alloc, also 5).
"""

import argparse
import collections
import concurrent.futures
import copy
import hashlib
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile

# name -> (app, preset, extra gen --set): datasets small enough for hundreds of runs, one per
# app and one per other form of an app (blackscholes' FHPC17 form, segreduce's Black-Scholes).
APPS = {
    "backprop": ("backprop", "tiny", []),
    "bfs": ("bfs", "tiny", []),
    "blackscholes": ("blackscholes", "tiny", []),
    "blackscholes-fhpc17": ("blackscholes", "fhpc17-18", ["options=50", "days=20"]),
    "conv1d": ("conv1d", "tiny", []),
    "gromacs": ("gromacs", "tiny", []),
    "hist": ("hist", "tiny", []),
    "histeq": ("histeq", "tiny", []),
    "histo": ("histo", "tiny", []),
    "imgreg": ("imgreg", "tiny", ["width=64", "height=64", "levels=16"]),
    "kmeans": ("kmeans", "tiny", ["n=300"]),
    "radixsort": ("radixsort", "tiny", ["n=1000"]),
    "samples-hist": ("samples-hist", "tiny", ["bytes=4099"]),
    "scan": ("scan", "small", ["n=1000", "segment=10"]),
    "scatter": ("scatter", "tiny", []),
    "segreduce": ("segreduce", "tiny", []),
    "segreduce-blackscholes": ("segreduce", "tiny", ["operator=blackscholes"]),
    "stream": ("stream", "tiny", ["bytes=4099"]),
    "tpacf": ("tpacf", "tiny", ["points=20", "randoms=2"]),
}

HUGE = [2**31, 2**40, 2**62, -(2**62)]
PARAM_VALUES = [("zero", 0), ("minus1", -1), ("huge31", 2**31), ("huge40", 2**40), ("huge62", 2**62),
                ("minhuge", -(2**62)), ("big_float", 1e300), ("half", 0.5), ("nan_string", "nan"),
                ("word", "foo"), ("empty", ""), ("null", None), ("list", []), ("object", {}),
                ("true", True)]
GEN_NUMBERS = [("zero", "0"), ("minus1", "-1"), ("huge31", "2^31"), ("huge40", "2^40"), ("huge62", "2^62"),
               ("half", "0.5")]
GEN_STRINGS = [("word", "foo"), ("empty", "")]
DTYPES = ["bool", "int8", "uint8", "int32", "uint32", "int64", "float32", "float64"]
DOCUMENTED = {0, 1, 2, 3, 4, 5}


def stable_hash(text):
    return int(hashlib.sha256(text.encode()).hexdigest()[:12], 16)


def read_manifest(d):
    with open(os.path.join(d, "manifest.json")) as f:
        return json.load(f)


def write_manifest(d, m):
    with open(os.path.join(d, "manifest.json"), "w") as f:
        json.dump(m, f)


# ---- mutations: each is (name, function(dir) applied to a copy of the bundle) ----------------

def manifest_edit(edit):
    def apply(d):
        m = read_manifest(d)
        edit(m)
        write_manifest(d, m)
    return apply


def set_path(m, path, value, remove=False):
    node = m
    for key in path[:-1]:
        node = node[key]
    if remove:
        node.pop(path[-1], None)
    else:
        node[path[-1]] = copy.deepcopy(value)


def manifest_mutations(m):
    out = []
    for key in sorted(m.get("params", {})):
        for label, value in PARAM_VALUES:
            out.append((f"params.{key}={label}", manifest_edit(lambda mm, k=key, v=value: set_path(mm, ["params", k], v))))
        out.append((f"params.{key} removed", manifest_edit(lambda mm, k=key: set_path(mm, ["params", k], None, True))))
    for key, values in [("format", ["x", 1]), ("version", [0, 2, -1, "1", 2**62]), ("kind", ["result", 3]),
                        ("app", ["hist", ""]), ("params", [[], "x", None]), ("arrays", [[], {}, None]),
                        ("files", [[], "x"])]:
        for v in values:
            out.append((f"{key}={json.dumps(v)}", manifest_edit(lambda mm, k=key, v=v: set_path(mm, [k], v))))
        out.append((f"{key} removed", manifest_edit(lambda mm, k=key: set_path(mm, [k], None, True))))
    out.append(("not an object", lambda d: open(os.path.join(d, "manifest.json"), "w").write("[1, 2]")))
    out.append(("invalid JSON", lambda d: open(os.path.join(d, "manifest.json"), "w").write('{"format": ')))
    for name in sorted(m.get("arrays", {})):
        entry = ["arrays", name]
        out.append((f"array {name} removed", manifest_edit(lambda mm, e=entry: set_path(mm, e, None, True))))
        for dt in DTYPES:
            if dt != m["arrays"][name]["dtype"]:
                out.append((f"array {name} dtype={dt}", manifest_edit(lambda mm, e=entry, t=dt: set_path(mm, e + ["dtype"], t))))
        shape = m["arrays"][name]["shape"]
        shapes = [[0], [1], [2**40], [-1], [], "x", shape + [1]]
        if shape:
            shapes += [[shape[0] + 1] + shape[1:], [max(shape[0] - 1, 0)] + shape[1:]]
        for s in shapes:
            out.append((f"array {name} shape={json.dumps(s)}", manifest_edit(lambda mm, e=entry, s=s: set_path(mm, e + ["shape"], s))))
        out.append((f"array {name} file=../x", manifest_edit(lambda mm, e=entry: set_path(mm, e + ["file"], "../x.npy"))))
    return out


def npy_layout(path):
    """(data offset, file size) of a .npy file as soac writes it."""
    with open(path, "rb") as f:
        head = f.read(12)
    major = head[6]
    header_len = int.from_bytes(head[8:10], "little") if major == 1 else int.from_bytes(head[8:12], "little")
    offset = (10 if major == 1 else 12) + header_len
    return offset, os.path.getsize(path)


def file_edit(fn):
    return fn


def truncate_to(path, size):
    with open(path, "r+b") as f:
        f.truncate(size)


def append(path, data):
    with open(path, "ab") as f:
        f.write(data)


def flip(path, pos):
    with open(path, "r+b") as f:
        f.seek(pos)
        b = f.read(1)
        if not b:
            return
        f.seek(pos)
        f.write(bytes([b[0] ^ 0xFF]))


def fill(path, start, byte):
    size = os.path.getsize(path)
    with open(path, "r+b") as f:
        f.seek(start)
        f.write(bytes([byte]) * (size - start))


def array_mutations(d, m):
    out = []
    for name, entry in sorted(m.get("arrays", {}).items()):
        rel = entry["file"]
        path = os.path.join(d, rel)
        offset, size = npy_layout(path)
        item = max(1, (size - offset) // max(1, _count(entry["shape"])))
        p = lambda dd, r=rel: os.path.join(dd, r)
        out += [
            (f"{rel} deleted", lambda dd, p=p: os.remove(p(dd))),
            (f"{rel} empty", lambda dd, p=p: truncate_to(p(dd), 0)),
            (f"{rel} header only", lambda dd, p=p, o=offset: truncate_to(p(dd), o)),
            (f"{rel} half data", lambda dd, p=p, o=offset, s=size: truncate_to(p(dd), o + (s - o) // 2)),
            (f"{rel} one byte short", lambda dd, p=p, s=size: truncate_to(p(dd), max(s - 1, 0))),
            (f"{rel} one element short", lambda dd, p=p, s=size, i=item: truncate_to(p(dd), max(s - i, 0))),
            (f"{rel} one byte more", lambda dd, p=p: append(p(dd), b"\0")),
            (f"{rel} one element more", lambda dd, p=p, i=item: append(p(dd), b"\x7f" * i)),
            (f"{rel} doubled", lambda dd, p=p, o=offset: append(p(dd), open(p(dd), "rb").read()[o:])),
            (f"{rel} data 0x00", lambda dd, p=p, o=offset: fill(p(dd), o, 0x00)),
            (f"{rel} data 0xff", lambda dd, p=p, o=offset: fill(p(dd), o, 0xFF)),
            (f"{rel} data 0x7f", lambda dd, p=p, o=offset: fill(p(dd), o, 0x7F)),
            (f"{rel} data 0x80", lambda dd, p=p, o=offset: fill(p(dd), o, 0x80)),
        ]
        # Byte flips: the magic, the version, the header length, a few header characters (the
        # dtype, the shape), the first, middle and last data bytes and a few in between.
        header_positions = [0, 1, 6, 8, 9] + [min(offset - 1, 10 + k * max(1, (offset - 10) // 8)) for k in range(8)]
        data_positions = sorted({offset + (size - offset) * k // 12 for k in range(12)} | {size - 1})
        for pos in sorted(set(header_positions)) + [q for q in data_positions if q < size]:
            out.append((f"{rel} byte {pos} flipped", lambda dd, p=p, q=pos: flip(p(dd), q)))
    for name in sorted(m.get("files", {})):
        p = lambda dd, r=name: os.path.join(dd, r)
        out += [(f"file {name} deleted", lambda dd, p=p: os.remove(p(dd))),
                (f"file {name} one byte short", lambda dd, p=p: truncate_to(p(dd), max(os.path.getsize(p(dd)) - 1, 0))),
                (f"file {name} byte 0 flipped", lambda dd, p=p: flip(p(dd), 0))]
    return out


def _count(shape):
    n = 1
    for s in shape:
        n *= s
    return n


# ---- running -----------------------------------------------------------------------------------

class Runner:
    def __init__(self, soac, timeout, memory_mb):
        self.soac, self.timeout, self.memory = soac, timeout, memory_mb * 2**20

    def _limit(self):
        resource.setrlimit(resource.RLIMIT_AS, (self.memory, self.memory))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        # Files up to 1 GiB: a mutation asking for a huge generated file must be refused by soac
        # (exit 5), not fill the disk.
        resource.setrlimit(resource.RLIMIT_FSIZE, (2**30, 2**30))

    def __call__(self, args):
        cmd = [self.soac] + args + ["--backend", "host"]
        try:
            p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=self.timeout,
                               preexec_fn=self._limit, env=dict(os.environ, OMP_NUM_THREADS="2"))
        except subprocess.TimeoutExpired:
            return "timeout", ""
        if p.returncode < 0:
            return f"signal {signal.Signals(-p.returncode).name}", p.stderr.decode(errors="replace").strip()[-300:]
        return p.returncode, p.stderr.decode(errors="replace").strip()[-300:]


def prepare(label, work, runner):
    app, preset, sets = APPS[label]
    base = os.path.join(work, label, "base")
    args = ["gen", app, "--preset", preset, "-o", base]
    for s in sets:
        args += ["--set", s]
    for cmd in (args, ["run", app, "-i", base, "-o", base + ".result"], ["validate", app, "-i", base, "-r", base + ".result"]):
        code, err = runner(cmd)
        if code != 0:
            raise SystemExit(f"{app}: the unmutated dataset fails: soac {' '.join(cmd)} -> {code}: {err}")
    return base


def cases_for(label, work):
    """Every mutation of a dataset as (id, kind, mutate-function or gen --set key and value)."""
    base = os.path.join(work, label, "base")
    result = base + ".result"
    out = []
    for kind, d in (("dataset", base), ("result", result)):
        m = read_manifest(d)
        for name, fn in manifest_mutations(m) + array_mutations(d, m):
            out.append((f"{label} {kind}: {name}", kind, fn))
    params = read_manifest(base)["params"]
    for key in sorted(params):
        if key in ("seed", "preset"):
            continue
        values = GEN_STRINGS if isinstance(params[key], str) else GEN_NUMBERS
        for _, v in values:
            out.append((f"{label} gen: --set {key}={v}", "gen", (key, v)))
    return out


def run_case(case, label, work, runner):
    cid, kind, what = case
    app, preset, sets = APPS[label]
    base = os.path.join(work, label, "base")
    scratch = tempfile.mkdtemp(dir=os.path.join(work, label))
    failures, codes = [], []

    def check(args, allowed=DOCUMENTED):
        code, err = runner(args)
        codes.append(code)
        if code not in allowed:
            failures.append(f"{cid}: soac {' '.join(args[:2])} -> {code}" + (f" ({err.splitlines()[-1]})" if err else ""))
        return code

    try:
        if kind == "dataset":
            d = os.path.join(scratch, "data")
            shutil.copytree(base, d)
            what(d)
            check(["run", app, "-i", d, "-o", os.path.join(scratch, "out")])
            check(["validate", app, "-i", d, "-r", base + ".result"])
        elif kind == "result":
            r = os.path.join(scratch, "result")
            shutil.copytree(base + ".result", r)
            what(r)
            check(["validate", app, "-i", base, "-r", r])
        else:
            key, value = what
            d = os.path.join(scratch, "data")
            args = ["gen", app, "--preset", preset, "-o", d] + [x for s in sets for x in ("--set", s)] + ["--set", f"{key}={value}"]
            if check(args) == 0:
                # gen accepted it, so run must not reject it as a usage or input error.
                ran = check(["run", app, "-i", d, "-o", os.path.join(scratch, "out")], {0, 5})
                if ran == 0:
                    check(["validate", app, "-i", d, "-r", os.path.join(scratch, "out")], {0})
    except Exception as e:  # a mutation the sweep itself could not make is a sweep bug, not soac's
        failures.append(f"{cid}: sweep error {e!r}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return cid, failures, codes


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--soac", required=True, help="the soac executable")
    ap.add_argument("--apps", default=",".join(APPS), help="comma-separated datasets of APPS (default: all)")
    ap.add_argument("--select", default="0/1", help="K/N: run the mutations whose hash is K modulo N")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--timeout", type=float, default=20, help="seconds per command")
    ap.add_argument("--memory-mb", type=int, default=4096, help="virtual memory limit per command")
    ap.add_argument("--work", help="work directory (default: a temporary one, removed after)")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every mutation and its exit codes")
    a = ap.parse_args()
    k, n = (int(x) for x in a.select.split("/"))
    apps = [x for x in a.apps.split(",") if x]
    for x in apps:
        if x not in APPS:
            raise SystemExit(f"unknown dataset {x} (known: {', '.join(APPS)})")
    runner = Runner(os.path.abspath(a.soac), a.timeout, a.memory_mb)
    work = a.work or tempfile.mkdtemp(prefix="soac-mutate-")
    os.makedirs(work, exist_ok=True)
    failures, per_app, codes, total = [], collections.Counter(), collections.Counter(), 0
    try:
        jobs = []
        with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
            for app in apps:
                prepare(app, work, runner)
                for case in cases_for(app, work):
                    if stable_hash(case[0]) % n == k:
                        jobs.append((app, pool.submit(run_case, case, app, work, runner)))
            for app, job in jobs:
                cid, fails, cs = job.result()
                total += 1
                per_app[app] += 1
                codes.update(str(c) for c in cs)
                failures += fails
                if a.verbose:
                    print(f"{cid}: {cs}")
    finally:
        if not a.work:
            shutil.rmtree(work, ignore_errors=True)
    print(f"mutations: {total} ({', '.join(f'{x} {c}' for x, c in sorted(per_app.items()))})")
    print(f"commands: {sum(codes.values())}, exit codes: {dict(sorted(codes.items()))}")
    for f in failures:
        print("FAIL " + f)
    print(f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
