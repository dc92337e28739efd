#!/usr/bin/env python3
"""Writes a synthetic package for the scale benchmark: one small kernel
with two int constexprs, A x B specializations, each for every arch given.

    gen_package.py DIR [--a 50] [--b 40] [--archs sm_80,sm_90]
"""
import argparse
import os

p = argparse.ArgumentParser()
p.add_argument("dir")
p.add_argument("--a", type=int, default=50)
p.add_argument("--b", type=int, default=40)
p.add_argument("--archs", default="sm_80,sm_90")
args = p.parse_args()
os.makedirs(args.dir, exist_ok=True)
archs = ", ".join(args.archs.split(","))
with open(os.path.join(args.dir, "kpack.yaml"), "w") as f:
    f.write(f"package: scale\narchs: [{archs}]\nmax_specializations: 100000\nkernels: [axpb.yaml]\n")
with open(os.path.join(args.dir, "axpb.yaml"), "w") as f:
    f.write(
        "kernel: axpb\nsource: axpb.cuh\nentry: axpb\n"
        "doc: out[i] = A * x[i] + B, for the scale benchmark.\n"
        "constexprs:\n"
        f"  - {{name: A, type: int, values: [{', '.join(str(v) for v in range(1, args.a + 1))}], tag: a}}\n"
        f"  - {{name: B, type: int, values: [{', '.join(str(v) for v in range(args.b))}], tag: b}}\n"
        "params:\n  - {name: x, type: const f32*}\n  - {name: out, type: f32*}\n  - {name: n, type: i64}\n"
        "launch: {grid: 'cdiv(n, 256)', block: 256}\n")
with open(os.path.join(args.dir, "axpb.cuh"), "w") as f:
    f.write(
        "template <int A, int B>\n"
        "__device__ __forceinline__ void axpb(const float* x, float* out, int64_t n) {\n"
        "  int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;\n"
        "  if (i < n) out[i] = A * x[i] + B;\n"
        "}\n")
with open(os.path.join(args.dir, "consumer.c"), "w") as f:
    f.write('#include "scale.h"\nint main(void) { return (int)scale_num_specializations() == 0; }\n')
print(f"{args.a * args.b} specializations x {len(args.archs.split(','))} archs in {args.dir}")
