#!/usr/bin/env bash
# The scale benchmark (issue 5): a synthetic package of A x B
# specializations (default 50 x 40 = 2,000) x 2 archs through `kpack build`.
# Prints, as JSON lines and a table:
#   - planning and generation: load + expand + plan + schedule + generate
#     (kpack --perf), goal < 1 s;
#   - build wall time against the sum of the unit steps' times / jobs,
#     goal <= 1.10 (packaging, checking and embedding cost <= 10%);
#   - compile time of a C consumer of the generated header, library size.
#
#   bench/scale/run.sh KPACK [CUDA_ROOT] [OUT_DIR]   (env A, B, JOBS)
set -eu
kpack=$(realpath "$1"); cuda_root=${2:-/usr/local/cuda}; out=${3:-scale-out}
here=$(dirname "$(realpath "$0")"); root=$(dirname "$(dirname "$here")")
jobs=${JOBS:-$(nproc)}
mkdir -p "$out"; out=$(realpath "$out")
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
cd "$work"
python3 "$here/gen_package.py" pkg --a "${A:-50}" --b "${B:-40}" | tee "$out/scale.txt"

secs_since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN {printf "%.3f", b - a}'; }

build() {  # log name, extra options
  local log=$1; shift
  local start
  start=$(date +%s.%N)
  python3 "$root/bench/build_cost/cputime.py" "$out/$log.cpu" \
    "$kpack" build pkg/kpack.yaml --header gen/scale.h --launcher gen/scale.c --asm gen/scale.S \
    --work-dir gen/work --cuda-root "$cuda_root" -j "$jobs" --perf --quiet "$@" > "$out/$log" 2>&1
  echo "wall $(secs_since "$start")" >> "$out/$log"
  cat "$out/$log.cpu" >> "$out/$log"
}
ms() { awk -v pass="$2" '$1 == "kpack:" && $2 == pass {print $3}' "$out/$1"; }

# 1. Header only: load + expand + generate, no toolkit.
start=$(date +%s.%N)
"$kpack" header pkg/kpack.yaml --header gen/header-only.h --perf > "$out/header.log" 2>&1
header_wall=$(secs_since "$start")

# 2. The full build from an empty cache, then a no-op rebuild.
build cold.log
build noop.log

# 3. A consumer of the header, and the library (skipped without a C compiler).
cc=${CC:-cc}
consumer_s=-1 archive_s=-1 lib_size=0
if command -v "$cc" > /dev/null; then
  start=$(date +%s.%N)
  "$cc" -std=c99 -O2 -c -I gen -I "$root/runtime" pkg/consumer.c -o consumer.o
  consumer_s=$(secs_since "$start")
  start=$(date +%s.%N)
  "$cc" -O2 -c -I gen -I "$root/runtime" gen/scale.c -o launch.o
  "$cc" -c gen/scale.S -o fatbins.o
  ar rcs libscale.a launch.o fatbins.o
  archive_s=$(secs_since "$start")
  lib_size=$(stat -c %s libscale.a)
fi

python3 - "$out" "$jobs" "$header_wall" "$consumer_s" "$archive_s" "$lib_size" \
  "$(du -sb gen/work/fatbins | cut -f1)" <<'PY'
import json, re, sys
out, jobs, header_wall, consumer_s, archive_s, lib_size, fatbin_dir = sys.argv[1:]
jobs = int(jobs)
def perf(log):
    d = {}
    for line in open(f"{out}/{log}"):
        m = re.match(r"kpack: (\S+(?: \S+)?) ([0-9.]+) ms", line)
        if m: d[m.group(1)] = float(m.group(2)) / 1000
        m = re.match(r"kpack: unit steps ([0-9.e+]+) s", line)
        if m: d["unit steps"] = float(m.group(1))
        m = re.match(r"kpack: schedule ([0-9.]+) ms", line)
        if m: d["schedule"] = float(m.group(1)) / 1000
        m = re.match(r"kpack: (\d+) units: (\d+) compiled", line)
        if m: d["units"], d["compiled"] = int(m.group(1)), int(m.group(2))
        m = re.match(r"wall ([0-9.]+)", line)
        if m: d["wall"] = float(m.group(1))
        m = re.match(r"cpu user ([0-9.]+) system ([0-9.]+)", line)
        if m: d["cpu"] = float(m.group(1)) + float(m.group(2))
    return d
cold, noop = perf("cold.log"), perf("noop.log")
planning = sum(cold.get(k, 0) for k in ("load", "expand", "plan", "schedule", "generate"))
ideal = cold["unit steps"] / jobs
r = {
    "units": cold.get("units"), "compiled": cold.get("compiled"), "jobs": jobs,
    "planning_and_generation_s": round(planning, 3), "header_only_wall_s": float(header_wall),
    "build_wall_s": cold["wall"], "unit_steps_sum_s": round(cold["unit steps"], 1),
    "ideal_s": round(ideal, 1), "wall_over_ideal": round(cold["wall"] / ideal, 3),
    "noop_rebuild_wall_s": noop["wall"], "consumer_compile_s": float(consumer_s),
    "archive_s": float(archive_s), "library_bytes": int(lib_size), "fatbin_bytes": int(fatbin_dir),
    "cpu_s": cold.get("cpu"), "specializations": cold.get("units", 0) // 2,
    "cpu_per_specialization_s": round(cold["cpu"] / (cold.get("units", 0) // 2), 4) if cold.get("cpu") else None,
    "passes_cold": cold, "passes_noop": noop,
}
json.dump(r, open(f"{out}/scale.json", "w"), indent=1)
print(f"| units | jobs | planning+generation | build wall | sum(unit)/jobs | ratio | CPU | CPU/spec | no-op rebuild | consumer cc | library |")
print(f"| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
print(f"| {r['units']} | {jobs} | {planning:.3f} s | {r['build_wall_s']:.1f} s | {ideal:.1f} s | "
      f"{r['wall_over_ideal']:.3f} | {r['cpu_s']} s | {r['cpu_per_specialization_s']} s | "
      f"{r['noop_rebuild_wall_s']:.2f} s | {r['consumer_compile_s']:.2f} s | {int(lib_size) / 2**20:.1f} MiB |")
PY
