#!/usr/bin/env bash
# Planning time of the scale package (issue 5), without a GPU or any nvcc
# unit: `kpack build --perf` with `--ninja true`, a "Ninja" that runs no
# edge, so kpack loads, expands, plans (probing nvcc's version) and writes
# the 6,000 request files and build.ninja (schedule) exactly as in a real
# build, then stops: the units were not built (that error is expected).
# The generate pass needs the compiled units (it comes after check), so it
# is timed by `kpack header --perf`, which generates the header only.
# RUNS runs (default 3) on one fresh package; prints per-run sums.
#
#   bench/scale/plan.sh KPACK [CUDA_ROOT] [OUT_DIR]   (env A, B, RUNS)
set -eu
kpack=$(realpath "$1"); cuda_root=${2:-/usr/local/cuda}; out=${3:-plan-out}
here=$(dirname "$(realpath "$0")")
mkdir -p "$out"; out=$(realpath "$out")
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
cd "$work"
python3 "$here/gen_package.py" pkg --a "${A:-50}" --b "${B:-40}" | tee "$out/scale.txt"
ms() { awk -v pass="$2" '$1 == "kpack:" && $2 == pass {print $3}' "$1"; }
for run in $(seq "${RUNS:-3}"); do
  # Each run writes every request file into a fresh directory, as a first
  # build does.  Nothing is deleted between runs: ext4 then skips the
  # recently freed inodes one by one when it creates files (recently_deleted
  # in perf), which made schedule 10x slower than in a fresh directory.
  gen=gen$run
  "$kpack" build pkg/kpack.yaml --header $gen/scale.h --launcher $gen/scale.c --asm $gen/scale.S \
    --work-dir $gen/work --cuda-root "$cuda_root" --perf --quiet --ninja true > build.log 2>&1 || true
  # The log less its 4,000 expected "was not built" errors, which are counted.
  { grep -v ' was not built (ninja exit code 0)$' build.log
    echo "($(grep -c ' was not built (ninja exit code 0)$' build.log) expected 'unit ... was not built' errors left out)"
  } > "$out/plan$run.log"
  "$kpack" header pkg/kpack.yaml --header $gen/header-only.h --perf > "$out/header$run.log" 2>&1
  grep -q "units: 0 compiled" "$out/plan$run.log" || { echo "run $run did not plan:"; head "$out/plan$run.log"; exit 1; }
  awk -v run="$run" -v l="$(ms "$out/plan$run.log" load)" -v e="$(ms "$out/plan$run.log" expand)" \
      -v p="$(ms "$out/plan$run.log" plan)" -v s="$(ms "$out/plan$run.log" schedule)" \
      -v g="$(ms "$out/header$run.log" generate)" 'BEGIN {
    printf "run %d: load %.1f + expand %.1f + plan %.1f + schedule %.1f + generate (header) %.1f = %.3f s\n",
           run, l, e, p, s, g, (l + e + p + s + g) / 1000 }' | tee -a "$out/summary.txt"
done
