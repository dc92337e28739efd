#!/usr/bin/env bash
# Builds mask_store_ab: the attention_mask_fill template with its 16-byte
# store as st.global.wb (the template's), .cs (evict-first) and .cg (L2
# only), each in its own namespace, for the A/B in mask_store_ab.cu.
#   bash bench/experiments/mask_store_ab.sh OUTDIR   (then OUTDIR/mask_store_ab)
set -eu
out=$1
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
for v in wb cs cg; do
  sed -e "s/kpack_mask/kpack_mask_$v/g" -e "s/attention_mask_fill(/attention_mask_fill_$v(/" \
      -e "s/__stwb(/__st$v(/" -e "s|#include \"common.cuh\"|#include \"$here/../../templates/common.cuh\"|" \
      "$here/../../templates/attention_mask_fill.cuh" > "$out/mask_$v.cuh"
done
nvcc -O3 -std=c++17 -arch=sm_90a -I"$out" -o "$out/mask_store_ab" "$here/mask_store_ab.cu"
