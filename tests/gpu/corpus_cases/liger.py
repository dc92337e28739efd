"""How Liger-Kernel 0.8.5 launches its forward kernels (tests/corpus/liger/),
as cases for tests/gpu/corpus_parity.py.

Each case names the manifest's kernel, the constexpr values of the
specialization (as the manifest spells them), the module and entry of the
@triton.jit function, and how Liger's own wrapper calls it: `make(torch)`
returns every manifest param (launch-only ones too) with inputs made the way
the wrapper makes them (contiguous, its dtypes), and `grid(params)` is the
wrapper's grid.  `outputs` are compared bit for bit; `inplace` outputs are
inputs the kernel overwrites (cloned, not poisoned, per run).  Shapes are
past the H100's 50 MB of L2, so the timings compare kernels, not launch
overhead.
"""


def _rms_norm(dtype_name, cols, block, warps, rows=32768):
    def make(torch):
        dtype = getattr(torch, {"bf16": "bfloat16", "f16": "float16", "f32": "float32"}[dtype_name])
        X = torch.randn(rows, cols, device="cuda", dtype=dtype)
        W = torch.randn(cols, device="cuda", dtype=dtype)
        Y = torch.empty_like(X)
        RSTD = torch.empty(rows, device="cuda", dtype=torch.float32)
        return dict(Y_ptr=Y, Y_row_stride=Y.stride(0), X_ptr=X, X_row_stride=X.stride(0), W_ptr=W,
                    W_row_stride=W.stride(0), RSTD_ptr=RSTD, RSTD_row_stride=RSTD.stride(0), n_cols=cols,
                    eps=1e-6, offset=0.0, n_rows=rows)
    return dict(kernel="rms_norm", module="liger_kernel.ops.rms_norm", entry="_rms_norm_forward_kernel",
                constexprs=dict(T=dtype_name, casting_mode=0, elementwise_affine=True, BLOCK_SIZE=block,
                                num_warps=warps),
                shape="%s %dx%d" % (dtype_name, rows, cols), make=make, outputs=["Y_ptr", "RSTD_ptr"],
                grid=lambda p: (p["n_rows"],))


CASES = [
    _rms_norm("bf16", 4096, 4096, 8),
    _rms_norm("f16", 8192, 8192, 16),
]
