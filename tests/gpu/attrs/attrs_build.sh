#!/usr/bin/env bash
# Builds the launch-attribute check (tests/gpu/attrs/attrs_check.cu) for a
# GPU machine that has neither nvcc nor meson:
#
#   attrs_build.sh KPACK OUT_DIR
#
# KPACK is the kpack compiler (build/compiler/kpack).  Steps:
#
#   1. kpack builds tests/gpu/attrs/package.yaml (prefix kat, sm_90) into
#      attrs.h, attrs.c (launchers) and attrs.S (the embedded fatbins);
#      the launchers must call kpack_launch for cluster_fixed (its cluster
#      is the cubin's), kpack_launch_ex(..., 0u, C, 1u, 1u) for
#      cluster_runtime and kpack_launch_ex(..., KPACK_LAUNCH_COOPERATIVE,
#      0u, 0u, 0u) for grid_reduce;
#   2. cc compiles those and the kpack runtime (runtime/kpack_runtime.c,
#      driver.c, errors.c);
#   3. nvcc compiles attrs_check.cu, which instantiates the same templates
#      itself, with kpack's unit flags (-O3 -std=c++17) and sm_90 SASS only,
#      and links everything with the static CUDA runtime and -ldl -lpthread:
#      no link against libcuda (kpack's runtime dlopens it);
#   4. checks the result: no libcuda or shared cudart needed, --list works
#      without a GPU, and every kernel of kpack's cubins has machine code
#      byte-identical to the same instantiation in attrs_check
#      (tests/gpu/flashinfer_sass_compare.py, which compares any kpack
#      work-dir with any program), so the direct launches and the occupancy
#      that sizes the cooperative grids are those of kpack's code.
#
# OUT_DIR gets attrs_check, attrs.json (kpack's inventory) and COMMIT.
# Intermediate files go to $KPACK_ATTRS_WORK (default build-attrs/ in the
# repository, ignored by git).  kpack compiles $KPACK_ATTRS_JOBS units at
# once (default 1: seven small units).  Stage for the GPU machine with
# OUT_DIR = .device/attrs and run tests/gpu/attrs/attrs_device_run.sh there.
set -euo pipefail
if [ $# -ne 2 ]; then
  echo "usage: $0 KPACK OUT_DIR" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
kpack=$(realpath "$1")
out=$(mkdir -p "$2" && cd "$2" && pwd)
cuda=${CUDA_HOME:-/usr/local/cuda}
nvcc=$cuda/bin/nvcc
work=${KPACK_ATTRS_WORK:-$root/build-attrs}
jobs=${KPACK_ATTRS_JOBS:-1}
[ -x "$nvcc" ] || { echo "attrs_build: no nvcc at $nvcc" >&2; exit 1; }
gen=$work/gen obj=$work/obj
mkdir -p "$gen" "$obj"

# kpack runs itself again for each unit (Ninja calls "KPACK step"): run a
# private copy, so that a rebuild of the compiler meanwhile cannot take the
# binary away mid-build.
mkdir -p "$work/bin"
cp "$kpack" "$work/bin/kpack.tmp" && mv -f "$work/bin/kpack.tmp" "$work/bin/kpack"
"$work/bin/kpack" version > /dev/null

echo "attrs_build: kpack build (units cached in $work/kpack/cache)"
"$work/bin/kpack" build "$here/package.yaml" --root "$here" -j "$jobs" \
  --header "$gen/attrs.h" --launcher "$gen/attrs.c" --asm "$gen/attrs.S" \
  --work-dir "$work/kpack" --inventory "$out/attrs.json" --quiet

# The launch path each kernel must take (launcher_gen's output, one launcher
# per specialization).
launch_calls() {  # launcher name: its return statement, flattened
  awk -v f="$1" '$0 ~ "^kpack_status " f "\\(" {on = 1} on {printf "%s ", $0} on && /^}/ {exit}' "$gen/attrs.c" |
    grep -o 'return kpack_launch[_a-z]*(.*);' | tr -s ' '
}
expect_launch() {  # launcher, the ERE its launch call must match
  local call
  call=$(launch_calls "$1")
  if ! grep -Eq "$2" <<< "$call"; then
    echo "attrs_build: $1 launches as '$call'; expected /$2/" >&2
    exit 1
  fi
}
for n in 3 5; do expect_launch "kat_cluster_fixed_n$n" '^return kpack_launch\(&kpack_spec_[0-9]+, stream,'; done
for c in 1 2 4; do
  expect_launch "kat_cluster_runtime_c$c" "^return kpack_launch_ex\(.*kpack_args, 0u, ${c}u, 1u, 1u\);$"
done
for b in 128 512; do
  expect_launch "kat_grid_reduce_b$b" '^return kpack_launch_ex\(.*kpack_args, KPACK_LAUNCH_COOPERATIVE, 0u, 0u, 0u\);$'
done

echo "attrs_build: C objects (launchers, fatbins, runtime)"
cflags=(-O2 -std=c11 -Wall -Wextra -I "$gen" -I "$root/runtime" -I "$cuda/include")
cc "${cflags[@]}" -c "$gen/attrs.c" -o "$obj/attrs.o"
cc -c "$gen/attrs.S" -o "$obj/attrs_fatbins.o"
for src in kpack_runtime driver errors workspace tensor_map; do
  cc "${cflags[@]}" -c "$root/runtime/$src.c" -o "$obj/$src.o"
done

echo "attrs_build: nvcc attrs_check.cu (sm_90 SASS)"
gencode=(-gencode "arch=compute_90,code=sm_90")
"$nvcc" -O3 -std=c++17 "${gencode[@]}" \
  -I "$here" -I "$gen" -I "$root/runtime" \
  -Xcompiler -Wall,-Wextra -c "$here/attrs_check.cu" -o "$obj/attrs_check.o"
"$nvcc" "${gencode[@]}" -cudart static -o "$out/attrs_check" \
  "$obj/attrs_check.o" "$obj/attrs.o" "$obj/attrs_fatbins.o" \
  "$obj/kpack_runtime.o" "$obj/driver.o" "$obj/errors.o" "$obj/workspace.o" "$obj/tensor_map.o" -ldl -lpthread -lrt

# What the GPU machine needs to be true of the binary.
if readelf -d "$out/attrs_check" | grep -E 'NEEDED.*(libcuda\.so|libcudart\.so)'; then
  echo "attrs_build: attrs_check links libcuda or a shared cudart" >&2
  exit 1
fi
"$out/attrs_check" --list > "$work/list.log" || {
  cat "$work/list.log" >&2
  echo "attrs_build: attrs_check --list failed" >&2
  exit 1
}
head -1 "$work/list.log"

# The direct launches and the occupancy query must see kpack's very code.
if command -v python3 > /dev/null && command -v objcopy > /dev/null; then
  objcopy -O binary --only-section=.nv_fatbin "$out/attrs_check" "$work/nv_fatbin.bin"
  python3 "$root/tests/gpu/flashinfer_sass_compare.py" "$work/nv_fatbin.bin" "$work/kpack/units" || {
    echo "attrs_build: kpack's SASS and the direct instantiations' differ (see above)" >&2
    exit 1
  }
else
  echo "attrs_build: note: no python3 or objcopy, SASS comparison skipped"
fi

git -C "$root" rev-parse HEAD > "$out/COMMIT"
if [ -n "$(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
  echo "attrs_build: note: the working tree has uncommitted changes; COMMIT names HEAD only"
fi
du -sh "$out"
echo "attrs_build: $out/attrs_check"
