"""Isolates why a Triton kernel built by kpack runs slower than under Triton's JIT.

    python3 bench/triton/signature_ab.py [--rep MS]

For softmax (BLOCK 8192, 16 warps) at the odd GPT-2 width 4096 x 50257
(where kpack's unhinted build ran 0.78x of the JIT's throughput at commit
810a8e4),
this compiles the same @triton.jit kernel three ways and launches each
through Triton's own launcher (CompiledKernel[grid]), so only the code
differs:

  kpack   the signature kpack builds: every integer i64, no hints
  i32     every integer i32, no hints
  jit     what the JIT specializes for these values: integers i32, and
          tt.divisibility=16 on the 16-byte aligned pointers and on the
          integers that are multiples of 16 (rows = 4096)

and, beside them, the JIT's own call (kernel[grid](...)).  Inputs rotate
over 3 sets (each past L2).  One JSON line per measurement on stdout:
{"section": "signature_ab", "kernel", "dtype", "variant", "us", "tbps"}.
Outputs of every variant are compared with the JIT's, bit for bit.
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "templates", "triton"))


def emit(**kw):
    print(json.dumps(kw), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rep", type=int, default=200)
    args = ap.parse_args()
    import torch
    import triton
    from triton.backends.compiler import GPUTarget
    import softmax as S

    dev = torch.device("cuda")
    cap = torch.cuda.get_device_capability()
    target = GPUTarget("cuda", cap[0] * 10 + cap[1], 32)
    backend = triton.compiler.make_backend(target)
    rows, cols = 4096, 50257
    tdt = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
    tname = {"f32": "fp32", "f16": "fp16", "bf16": "bf16"}

    def compile_variant(fn, sig, constexprs, attrs, num_warps):
        opts = backend.parse_options({"num_warps": num_warps, "num_stages": 3})
        src = triton.compiler.ASTSource(fn=fn, signature=sig, constexprs=constexprs, attrs=attrs)
        return triton.compile(src, target=target, options=opts.__dict__)

    def bench(call, sets):
        state = [0]

        def fn():
            i = state[0]
            state[0] = (i + 1) % len(sets)
            call(*sets[i])

        return triton.testing.do_bench(fn, warmup=25, rep=args.rep, return_mode="median")

    failures = 0
    for dt in ("bf16", "f16", "f32"):
        es = torch.finfo(tdt[dt]).bits // 8
        # ---- softmax(inp, out, rows, cols, in_row_stride, out_row_stride, BLOCK), BLOCK 8192, w16
        sets = []
        for _ in range(3):
            x = torch.randn(rows, cols, device=dev, dtype=tdt[dt])
            sets.append((x, torch.empty_like(x)))
        nbytes = 2 * rows * cols * es
        ptr = "*" + tname[dt]
        names = ["inp", "out", "rows", "cols", "in_row_stride", "out_row_stride"]

        def sig_of(ity):
            s = {n: (ptr if i < 2 else ity) for i, n in enumerate(names)}
            s["BLOCK"] = "constexpr"
            return s

        d16 = [["tt.divisibility", 16]]
        variants = {
            "kpack": compile_variant(S.softmax, sig_of("i64"), {"BLOCK": 8192}, {}, 16),
            "i32": compile_variant(S.softmax, sig_of("i32"), {"BLOCK": 8192}, {}, 16),
            "jit": compile_variant(S.softmax, sig_of("i32"), {"BLOCK": 8192},
                                   {(0,): d16, (1,): d16, (2,): d16}, 16),
        }
        ref = None
        x0, y0 = sets[0]
        S.softmax[(rows,)](x0, y0, rows, cols, cols, cols, BLOCK=8192, num_warps=16)
        torch.cuda.synchronize()
        ref = y0.clone()
        for name, ck in variants.items():
            def call(x, y, ck=ck):
                ck[(rows, 1, 1)](x, y, rows, cols, cols, cols, 8192)
            y0.fill_(float("nan"))
            call(x0, y0)
            torch.cuda.synchronize()
            bits = torch.int32 if es == 4 else torch.int16
            same = bool(torch.equal(y0.view(bits), ref.view(bits)))
            failures += not same
            ms = bench(call, sets)
            emit(section="signature_ab", kernel="softmax", dtype=dt, variant=name, us=round(ms * 1e3, 2),
                 tbps=round(nbytes / (ms * 1e-3) / 1e12, 4), same_as_jit=same)

        def jit_call(x, y):
            S.softmax[(rows,)](x, y, rows, cols, cols, cols, BLOCK=8192, num_warps=16)

        ms = bench(jit_call, sets)
        emit(section="signature_ab", kernel="softmax", dtype=dt, variant="jit_call", us=round(ms * 1e3, 2),
             tbps=round(nbytes / (ms * 1e-3) / 1e12, 4))
        del sets, variants
        torch.cuda.empty_cache()
    emit(section="signature_ab_done", failures=failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
