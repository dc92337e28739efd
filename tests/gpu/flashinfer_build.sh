#!/usr/bin/env bash
# Builds the FlashInfer corpus check (tests/gpu/flashinfer_check.cu) for a GPU
# machine that has neither nvcc nor meson:
#
#   flashinfer_build.sh KPACK OUT_DIR [CACHE]
#
# KPACK is the kpack compiler (build/compiler/kpack), CACHE the corpus cache
# (tests/corpus/fetch.sh; default $KPACK_CORPUS_CACHE or
# ~/.cache/kpack/corpus), which holds the FlashInfer wheel's headers and the
# CCCL they are built with.  Steps:
#
#   1. kpack builds tests/corpus/flashinfer/package.yaml (prefix fic, sm_80
#      and sm_90 from the package file) into fic.h, fic.c (launchers) and
#      fic.S (the embedded fatbins, no PTX);
#   2. cc compiles those and the kpack runtime (runtime/*.c); c++ compiles
#      tests/gpu/reference.cc (the element conversions);
#   3. nvcc compiles flashinfer_check.cu, which instantiates the same
#      FlashInfer templates itself, with kpack's unit flags (-O3
#      -std=c++17, the same -I roots in the same order) and SASS only
#      (-gencode arch=compute_XX,code=sm_XX: no PTX, so
#      CUDA_DISABLE_PTX_JIT=1 changes nothing), and links everything with
#      the static CUDA runtime and -ldl -lpthread: no link against libcuda
#      (kpack's runtime dlopens it; the program reaches the driver API
#      through cudaGetDriverEntryPointByVersion).
#
#   4. checks the result: no libcuda or shared cudart needed, --self-test
#      passes (no GPU), and every kernel of kpack's cubins has machine code
#      byte-identical to the same instantiation in flashinfer_check
#      (flashinfer_sass_compare.py).
#
# OUT_DIR gets flashinfer_check, fic.json (kpack's inventory) and COMMIT.
# Intermediate files go to $KPACK_FLASHINFER_WORK (default build-flashinfer/
# in the repository, ignored by git), which keeps kpack's unit cache between
# builds.  Stage for the GPU machine with OUT_DIR = .device/flashinfer and
# run tests/gpu/flashinfer_device_run.sh there.
set -euo pipefail
if [ $# -lt 2 ] || [ $# -gt 3 ]; then
  echo "usage: $0 KPACK OUT_DIR [CACHE]" >&2
  exit 2
fi
root=$(cd "$(dirname "$0")/../.." && pwd)
kpack=$(realpath "$1")
out=$(mkdir -p "$2" && cd "$2" && pwd)
cache=${3:-${KPACK_CORPUS_CACHE:-$HOME/.cache/kpack/corpus}}
cuda=${CUDA_HOME:-/usr/local/cuda}
nvcc=$cuda/bin/nvcc
work=${KPACK_FLASHINFER_WORK:-$root/build-flashinfer}
cccl=$cache/nvidia_cuda_cccl-13.1.115/nvidia/cu13/include/cccl
fi_include=$cache/flashinfer_python-0.7.2.post1/flashinfer/data/include
for dir in "$cccl" "$fi_include/flashinfer"; do
  [ -d "$dir" ] || { echo "flashinfer_build: $dir is missing (run tests/corpus/fetch.sh)" >&2; exit 1; }
done
[ -x "$nvcc" ] || { echo "flashinfer_build: no nvcc at $nvcc" >&2; exit 1; }
gen=$work/gen obj=$work/obj
mkdir -p "$gen" "$obj"

# kpack runs itself again for each unit (Ninja calls "KPACK step"): run a
# private copy, so that a rebuild of the compiler meanwhile cannot take the
# binary away mid-build.
mkdir -p "$work/bin"
cp "$kpack" "$work/bin/kpack.tmp" && mv -f "$work/bin/kpack.tmp" "$work/bin/kpack"
"$work/bin/kpack" version > /dev/null

echo "flashinfer_build: kpack build (units cached in $work/kpack/cache)"
"$work/bin/kpack" build "$root/tests/corpus/flashinfer/package.yaml" --root "$root/tests/corpus" \
  -I "$cccl" -I "$fi_include" \
  --header "$gen/fic.h" --launcher "$gen/fic.c" --asm "$gen/fic.S" \
  --work-dir "$work/kpack" --inventory "$out/fic.json" --quiet

echo "flashinfer_build: C objects (launchers, fatbins, runtime)"
cflags=(-O2 -std=c11 -Wall -I "$gen" -I "$root/runtime" -I "$cuda/include")
cc "${cflags[@]}" -c "$gen/fic.c" -o "$obj/fic.o"
cc -c "$gen/fic.S" -o "$obj/fic_fatbins.o"
for src in kpack_runtime driver errors workspace tensor_map; do
  cc "${cflags[@]}" -c "$root/runtime/$src.c" -o "$obj/$src.o"
done
c++ -O2 -std=c++17 -Wall -Wextra -c "$root/tests/gpu/reference.cc" -o "$obj/reference.o"

echo "flashinfer_build: nvcc flashinfer_check.cu (sm_80, sm_90 SASS)"
gencode=(-gencode "arch=compute_80,code=sm_80" -gencode "arch=compute_90,code=sm_90")
"$nvcc" -O3 -std=c++17 "${gencode[@]}" --threads 2 \
  -I "$cccl" -I "$fi_include" -I "$root/tests/corpus/flashinfer" \
  -I "$gen" -I "$root/runtime" -I "$root/tests/gpu" \
  -Xcompiler -Wall -c "$root/tests/gpu/flashinfer_check.cu" -o "$obj/flashinfer_check.o"
"$nvcc" "${gencode[@]}" -cudart static -o "$out/flashinfer_check" \
  "$obj/flashinfer_check.o" "$obj/reference.o" "$obj/fic.o" "$obj/fic_fatbins.o" \
  "$obj/kpack_runtime.o" "$obj/driver.o" "$obj/errors.o" "$obj/workspace.o" "$obj/tensor_map.o" -ldl -lpthread -lrt

# What the GPU machine needs to be true of the binary.
if readelf -d "$out/flashinfer_check" | grep -E 'NEEDED.*(libcuda\.so|libcudart\.so)'; then
  echo "flashinfer_build: flashinfer_check links libcuda or a shared cudart" >&2
  exit 1
fi
"$out/flashinfer_check" --self-test > "$work/self-test.log" || {
  cat "$work/self-test.log" >&2
  echo "flashinfer_build: flashinfer_check --self-test failed" >&2
  exit 1
}
tail -1 "$work/self-test.log"

# The direct launches must run kpack's very code: compare the machine code
# of every kernel of kpack's cubins with flashinfer_check's (needs python3
# and objcopy; skipped without them).
if command -v python3 > /dev/null && command -v objcopy > /dev/null; then
  objcopy -O binary --only-section=.nv_fatbin "$out/flashinfer_check" "$work/nv_fatbin.bin"
  python3 "$root/tests/gpu/flashinfer_sass_compare.py" "$work/nv_fatbin.bin" "$work/kpack/units" || {
    echo "flashinfer_build: kpack's SASS and the direct instantiations' differ (see above)" >&2
    exit 1
  }
else
  echo "flashinfer_build: note: no python3 or objcopy, SASS comparison skipped"
fi

git -C "$root" rev-parse HEAD > "$out/COMMIT"
if [ -n "$(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
  echo "flashinfer_build: note: the working tree has uncommitted changes; COMMIT names HEAD only"
fi
du -sh "$out"
echo "flashinfer_build: $out/flashinfer_check"
