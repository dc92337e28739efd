#!/bin/sh
# bench/tune/pack_carry.sh BUILD STATIC_BUILD: packs what bench/tune/
# device_run.sh runs on the GPU machine (which has neither LLVM nor
# yaml-cpp) into build-carry/tune.tar.xz, under the 64 MiB carry limit: the
# static kpack (meson setup STATIC_BUILD -Dstatic_kpack=true), the Triton
# helper, the bundled package's tuning harness and launch bench, and its
# fatbins; COMMIT names the tree they were built from.
set -eu
build=$1 static=$2
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
cp "$static/compiler/kpack" "$stage/"
# The static kpack still links libzstd dynamically (llvm-config --system-libs).
cp -L /lib/x86_64-linux-gnu/libzstd.so.1 "$stage/"
cp "$build/manifests/kernels-tune" "$build/bench/launch/kpack_launch_bench" "$stage/"
cp -r "$build/manifests/kernels.kpack/fatbins" "$stage/fatbins"
{ git rev-parse --short HEAD; git status --porcelain | grep -q . && echo "(with uncommitted changes)" || true; } |
  tr '\n' ' ' > "$stage/COMMIT"
mkdir -p build-carry
tar -C "$stage" -cJf build-carry/tune.tar.xz .
ls -la build-carry/tune.tar.xz
