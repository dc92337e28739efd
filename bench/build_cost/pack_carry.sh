#!/bin/sh
# bench/build_cost/pack_carry.sh BUILD BUILD_BATCH1 OLD_STATIC_KPACK NEW_STATIC_KPACK:
# packs what bench/build_cost/device_run.sh runs on the GPU machine (which
# cannot build kpack: no LLVM, no yaml-cpp) into build-carry/build_cost.tar.xz:
#   - the GPU checks of BUILD (batched fatbins): gpu_test, faults_check,
#     gpu_smem_check, gpu_tma_check, libkernels_shared.so, the launch bench;
#   - the launch bench of BUILD_BATCH1 (the same package with -Dkpack_batch=1,
#     one fatbin per specialization as before batches), for --lazy side by side;
#   - the kpack of the commit before batching and this one, both static, and
#     Ninja, for the scale benchmark (2,000 x 2) side by side.
set -eu
build=$1 build1=$2 old=$3 new=$4
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
for f in tests/gpu/gpu_tma_check tests/gpu/gpu_test tests/gpu/faults_check tests/gpu/gpu_smem_check \
         tests/gpu/libkernels_shared.so bench/launch/kpack_launch_bench; do
  cp "$build/$f" "$stage/"
done
cp "$build1/bench/launch/kpack_launch_bench" "$stage/kpack_launch_bench_batch1"
cp -r "$build/manifests/kernels.kpack/fatbins" "$stage/fatbins"
cp -r "$build1/manifests/kernels.kpack/fatbins" "$stage/fatbins_batch1"
cp "$old" "$stage/kpack-old"
cp "$new" "$stage/kpack-new"
cp "$(command -v ninja)" "$stage/ninja"
{ git rev-parse --short HEAD; git status --porcelain | grep -q . && echo "(with uncommitted changes)" || true; } |
  tr '\n' ' ' > "$stage/COMMIT"
mkdir -p build-carry
tar -C "$stage" -cJf build-carry/build_cost.tar.xz .
ls -la build-carry/build_cost.tar.xz
