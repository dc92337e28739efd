#!/usr/bin/env bash
# End to end for TMA descriptors, clusters and Triton's scratch through the
# real kpack, nvcc, Python and Triton, with no GPU: the tma package
# (tests/compiler/manifests/tma) builds; the check pass reads each cubin's
# CUtensorMap params (and Triton's shapes and strides after them) and its
# cluster; the launchers encode each map with the layout Triton chose, ask
# the runtime for scratch and launch clusters; the inventory and kpack
# inspect say what each launch needs; the generated C compiles; bad
# manifests are errors at their lines and leave nothing behind.
set -u
kpack=$(realpath "$1")
cuda_root=$2
source_root=$(realpath "$3")
python=${4:-python3}
if ! "$python" -c 'import triton' 2>/dev/null; then
  echo "Triton is not installed for $python: skipped"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
. "$source_root/tests/e2e/checks.sh"
cp -r "$source_root/tests/compiler/manifests/tma" m

build() {
  rm -rf out
  "$kpack" build m/kpack.yaml --header out/tma.h --launcher out/tma.c --asm out/tma.S --inventory out/tma.json \
    --work-dir work --cuda-root "$cuda_root" --python "$python" -v "$@" > log 2>&1
}

# 1. The package builds: a host descriptor is its map, i32 shapes and i64
# strides in Triton's cubin (the check pass compared the layout), the map
# alone in nvcc's.
if build && grep -q '6 units: 6 compiled, 0 from cache' log \
   && grep -q 'static const kpack_tensor_map_spec kpack_tmspec_src = {9u, 2u, 2u, {64u, 64u}, 3u, 0u};' out/tma.c \
   && grep -q 'static const kpack_tensor_map_spec kpack_tmspec_src = {9u, 2u, 2u, {32u, 64u}, 3u, 0u};' out/tma.c \
   && grep -q 'static const kpack_tensor_map_spec kpack_tmspec_src = {7u, 4u, 2u, {32u, 64u}, 0u, 0u};' out/tma.c \
   && grep -q '"name":"src","triton_type":"tensordesc<bf16\[64, 128\]>"' work/units/copy_triton_bf16_m64_n128_add_one_w4_ctas2.sm_90a.json \
   && grep -q 'void \*kpack_args\[\] = {(void \*)kpack_map_src, (void \*)&kpack_shape32_src\[0\], (void \*)&kpack_shape32_src\[1\], (void \*)&src_strides\[0\], (void \*)&src_strides\[1\], (void \*)kpack_map_dst,' out/tma.c \
   && grep -q 'void \*kpack_args\[\] = {(void \*)kpack_map_src, (void \*)&dst, (void \*)&M, (void \*)&N};' out/tma.c \
   && grep -q 'template __global__ void copy_box<float, 32, 64>(const __grid_constant__ CUtensorMap, float\*, int32_t, int32_t);' work/units/copy_cuda_f32_m32_n64.sm_90.cu; then
  pass "host tensor descriptors build for Triton and CUDA; each launch encodes the map with the layout Triton chose"
else
  fail "tensordesc build"; cat log; grep -n "tmspec\|kpack_args" out/tma.c | head -20
fi

# 2. num_ctas=2: Triton's cubin has a 2-CTA cluster (checked), and the
# launcher multiplies the grid and launches clusters, spread.
if grep -q 'const int64_t kpack_grid\[3\] = {kpack_mul_(kpack_cdiv_((int64_t)M, 64, &kpack_bad), 2, &kpack_bad), kpack_cdiv_((int64_t)N, 128, &kpack_bad), 1};' out/tma.c \
   && [ "$(grep -c 'KPACK_LAUNCH_CLUSTER_SPREAD, 2u, 1u, 1u);' out/tma.c)" = 2 ]; then
  pass "num_ctas=2 launches clusters of 2 CTAs per program"
else
  fail "clusters"; grep -n "kpack_grid\|CLUSTER" out/tma.c
fi

# 3. Global scratch: 128 bytes per program from the runtime's workspace,
# right before the launch; none asked where a kernel needs none.
if grep -q 'if ((kpack_st = kpack_scratch_for_("scratch_triton_f16_m64_n64", stream, kpack_grid, 128, 128, 0, 1, kpack_scratch)) != KPACK_SUCCESS)' out/tma.c \
   && [ "$(grep -c 'kpack_scratch_for_("' out/tma.c)" = 1 ]; then
  pass "a kernel with Triton's global scratch gets it from the runtime's workspace"
else
  fail "scratch"; grep -n "scratch" out/tma.c | head
fi

# 4. The inventory and kpack inspect say what each launch needs.
"$kpack" inspect out/tma.json > inspect.txt 2>&1
if grep -qx '  copy_triton_bf16_m64_n128_add_one_w4_ctas2 sm_90a: cluster of 2 CTAs; tensordesc box \[32, 64\] swizzle 128B; tensordesc box \[32, 64\] swizzle 128B' inspect.txt \
   && grep -qx '  scratch_triton_f16_m64_n64 sm_90a: global scratch 128 bytes per CTA (align 128)' inspect.txt \
   && grep -q '"global_scratch": *{' out/tma.json && grep -q '"num_ctas": *2' out/tma.json; then
  pass "the inventory and kpack inspect list clusters, scratch and TMA layouts"
else
  fail "inspect"; cat inspect.txt
fi

# 5. The generated C compiles against the runtime's headers (C11, warnings as errors).
if cc -std=c11 -Wall -Wextra -Werror -I out -I "$source_root/runtime" -c out/tma.c -o tma.o 2> cc.log; then
  pass "the generated launchers compile"
else
  fail "launcher C"; cat cc.log
fi

# 6. Bad input: a manifest that calls a pointer a tensordesc is refused
# by Triton at the kernel's line; a CUDA kernel whose parameter is not a
# CUtensorMap fails the instantiation; nothing is written.
cp m/scratch_triton.yaml scratch.bak
sed -i 's/{name: x, type: T\*, divisibility: 16}/{name: x, type: tensordesc, dtype: T, block: [BM, BN]}/' m/scratch_triton.yaml
if ! build && grep -q "scratch_triton.yaml:1:9: error: Triton failed (exit code 1) for kernel 'scratch_triton' specialization scratch_triton_f16_m64_n64" log \
   && [ ! -e out/tma.c ] && [ ! -e out/tma.h ]; then
  pass "a pointer the manifest calls a tensordesc is Triton's error, tied to the specialization; no outputs"
else
  fail "tensordesc on a pointer"; cat log
fi
cp scratch.bak m/scratch_triton.yaml
sed -i 's/swizzle: none}/swizzle: none}\n  - {name: extra, type: const tensordesc, dtype: T, block: [BM, BN], swizzle: none}/' m/copy_cuda.yaml
if ! build && grep -q "copy_cuda.yaml:1:9: error: nvcc failed (exit code 1) for kernel 'copy_cuda' specialization copy_cuda_f32_m32_n64" log \
   && grep -q 'must be a __global__ function taking exactly (const __grid_constant__ CUtensorMap src, const __grid_constant__ CUtensorMap extra, float\* dst, int32_t M, int32_t N)' log \
   && [ ! -e out/tma.c ]; then
  pass "a CUDA kernel that does not take the manifest's maps fails its instantiation; no outputs"
else
  fail "CUDA tensordesc mismatch"; cat log
fi
finish
