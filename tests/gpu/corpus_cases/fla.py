"""How fla-core 0.6.0 (flash-linear-attention) launches its forward kernels
(tests/corpus/fla/), as cases for tests/gpu/corpus_parity.py.

Each case names the manifest's kernel, the constexpr values of the
specialization (as the manifest spells them: the dtype constexpr is DT, since
fla's kernels have params named T and B), the module and entry of the
@triton.jit function, and how fla's own wrapper calls it: `make(torch)`
returns every manifest param (launch-only ones too) with inputs made the way
the wrapper makes them (its shapes, dtypes and None arguments), and
`grid(params)` is the wrapper's grid.  `outputs` are compared bit for bit;
`inplace` outputs are inputs the kernel updates, or outputs fla allocates
with zeros (cloned, not poisoned, per run).  `jit_kwargs` gives the JIT what
fla's wrapper computes and the manifest's rules compute in kpack's launcher
(BD = next_power_of_2(D), ...), and None where a C caller passes a float.
Heuristics (h0 is not None, ...) are computed on both sides and not passed.
Where a kernel is memory-bound, its shapes are past the H100's 50 MB of L2.

Each make() names the wrapper it follows (fla/...).  Variable-length
batches use int32 cu_seqlens, as engines pass them, with fla's chunk_indices
(prepare_chunk_indices: (sequence, chunk) pairs in cu_seqlens' dtype) and
chunk_offsets (prepare_chunk_offsets: an int64 cumsum).

corpus_parity.py imports this file as the module `fla`, which shadows
fla-core's package (`fla.modules` is then not found): the harness must load
case files under names of their own before these cases can run.
"""
import random

TORCH_DTYPES = {"bf16": "bfloat16", "f16": "float16", "f32": "float32"}
RCP_LN2 = 1.4426950216  # fla.ops.utils.constant.RCP_LN2, GDN's cumsum scale


def _dtype(torch, name):
    return getattr(torch, TORCH_DTYPES[name])


def _cdiv(a, b):
    return (a + b - 1) // b


def _next_pow2(x):
    return 1 << (x - 1).bit_length()


def _lengths(n, mean, seed, short=0):
    """n sequence lengths around `mean` (fixed per case), the first `short`
    of them 1 to 3 tokens (shorter than a conv kernel)."""
    rng = random.Random(seed)
    out = [rng.randint(1, 3) for _ in range(short)]
    return out + [rng.randint(max(1, mean // 2), max(1, mean * 3 // 2)) for _ in range(n - short)]


def _cu_seqlens(torch, lens):
    cu = [0]
    for n in lens:
        cu.append(cu[-1] + n)
    return torch.tensor(cu, dtype=torch.int32, device="cuda")


def _chunk_indices(torch, lens, bt):
    """fla.ops.utils.index.prepare_chunk_indices, in cu_seqlens' dtype."""
    pairs = [v for i, n in enumerate(lens) for j in range(_cdiv(n, bt)) for v in (i, j)]
    return torch.tensor(pairs, dtype=torch.int32, device="cuda").view(-1, 2)


def _chunk_offsets(torch, lens, bt):
    """fla.ops.utils.index.prepare_chunk_offsets: int64, as torch's cumsum
    of int32 gives."""
    out = [0]
    for n in lens:
        out.append(out[-1] + _cdiv(n, bt))
    return torch.tensor(out, dtype=torch.int64, device="cuda")


def _case(kernel, module, entry, constexprs, shape, make, outputs, grid, **extra):
    return dict(kernel=kernel, module=module, entry=entry, constexprs=constexprs, shape=shape, make=make,
                outputs=outputs, grid=grid, dtypes=("DT",), **extra)


# fla/modules/norm/layernorm.py

def _layer_norm_row(dt, d, warps, residual, rows=32768):
    def make(torch):  # layer_norm_fwd, D > 512: layer_norm_fwd_kernel_row[(T,)]
        dtype = _dtype(torch, dt)
        x = torch.randn(rows, d, device="cuda", dtype=dtype)
        w = torch.randn(d, device="cuda", dtype=dtype)
        res = torch.randn(rows, d, device="cuda", dtype=dtype) if residual else None
        res_out = torch.empty(rows, d, device="cuda", dtype=dtype) if residual else None
        return dict(x=x, y=torch.empty_like(x), w=w, b=None, res=res, res_out=res_out, mean=None,
                    rstd=torch.empty(rows, device="cuda", dtype=torch.float32), eps=1e-6, T=rows)
    return _case("layer_norm_row", "fla.modules.norm.layernorm", "layer_norm_fwd_kernel_row",
                 dict(DT=dt, G=1, D=d, IS_RMS_NORM=True, HAS_RESIDUAL=residual, STORE_RESIDUAL_OUT=residual,
                      HAS_WEIGHT=True, HAS_BIAS=False, num_warps=warps),
                 "%s %dx%d%s" % (dt, rows, d, " +residual" if residual else ""), make,
                 ["y", "rstd"] + (["res_out"] if residual else []), lambda p: (p["T"],),
                 jit_kwargs=dict(BD=_next_pow2(d)))


def _layer_norm(dt, d, bt, rows=32768 * 32):
    def make(torch):  # layer_norm_fwd, D <= 512: layer_norm_fwd_kernel[grid]
        dtype = _dtype(torch, dt)
        x = torch.randn(rows, d, device="cuda", dtype=dtype)
        w = torch.randn(d, device="cuda", dtype=dtype)
        return dict(x=x, y=torch.empty_like(x), w=w, b=None, res=None, res_out=None, mean=None,
                    rstd=torch.empty(rows, device="cuda", dtype=torch.float32), eps=1e-6, T=rows)
    # NB = cdiv(T, 2048) in fla, which the kernel never reads: the manifest
    # builds NB = 1, and the JIT gets the same.
    return _case("layer_norm", "fla.modules.norm.layernorm", "layer_norm_fwd_kernel",
                 dict(DT=dt, G=1, D=d, NB=1, IS_RMS_NORM=True, HAS_RESIDUAL=False, STORE_RESIDUAL_OUT=False,
                      HAS_WEIGHT=True, HAS_BIAS=False, BT=bt, num_warps=4),
                 "%s %dx%d" % (dt, rows, d), make, ["y", "rstd"], lambda p: (_cdiv(p["T"], bt),),
                 jit_kwargs=dict(BD=_next_pow2(d)))


# fla/modules/norm/l2norm.py

def _l2norm(dt, d, bt, rows=32768 * 32):
    def make(torch):  # l2norm_fwd, D <= 512: l2norm_fwd_kernel[grid]
        x = torch.randn(rows, d, device="cuda", dtype=_dtype(torch, dt))
        return dict(x=x, y=torch.empty_like(x), rstd=torch.empty(rows, device="cuda", dtype=torch.float32),
                    eps=1e-6, T=rows)
    # NB = cdiv(T, 2048 * 32), never read by the kernel: 1 on both sides.
    return _case("l2norm", "fla.modules.norm.l2norm", "l2norm_fwd_kernel",
                 dict(DT=dt, D=d, NB=1, BT=bt, num_warps=4), "%s %dx%d" % (dt, rows, d), make, ["y", "rstd"],
                 lambda p: (_cdiv(p["T"], bt),), jit_kwargs=dict(BD=_next_pow2(d)))


# fla/modules/norm/layernorm_gated.py

def _layer_norm_group(dt, group_size, norm_before_gate, rows=32768, width=4096):
    groups = width // group_size
    warps = min(max(_next_pow2(group_size) // 256, 1), 8)

    def make(torch):  # layer_norm_fwd (RMSNormGated): grid (T, G), num_warps from BD
        dtype = _dtype(torch, dt)
        x = torch.randn(rows, width, device="cuda", dtype=dtype)
        z = torch.randn(rows, width, device="cuda", dtype=dtype)
        w = torch.randn(width, device="cuda", dtype=dtype)
        out = torch.empty_like(x)
        return dict(x=x, y=out, w=w, b=None, g=z, mean=None,
                    rstd=torch.empty(groups * rows, device="cuda", dtype=torch.float32),
                    stride_x_row=x.stride(0), stride_y_row=out.stride(0), stride_g_row=z.stride(0), T=rows,
                    D=group_size, eps=1e-6, G=groups)
    return _case("layer_norm_group", "fla.modules.norm.layernorm_gated", "layer_norm_fwd_kernel_group",
                 dict(DT=dt, NORM_BEFORE_GATE=norm_before_gate, IS_RMS_NORM=True, num_warps=warps),
                 "%s %dx%d groups of %d%s" % (dt, rows, width, group_size, ", norm first" if norm_before_gate else ""),
                 make, ["y", "rstd"], lambda p: (p["T"], p["G"]), jit_kwargs=dict(BD=_next_pow2(group_size)))


# fla/modules/norm/fused_norm_gate.py

def _layer_norm_gated(dt, activation, bt, rows=32768 * 32, d=128):
    def make(torch):  # layer_norm_gated_fwd, D <= 512 (FusedRMSNormGated over heads)
        dtype = _dtype(torch, dt)
        x = torch.randn(rows, d, device="cuda", dtype=dtype)
        g = torch.randn(rows, d, device="cuda", dtype=dtype)
        w = torch.randn(d, device="cuda", dtype=dtype)
        return dict(x=x, g=g, y=torch.empty_like(x), w=w, b=None, residual=None, residual_out=None, mean=None,
                    rstd=torch.empty(rows, device="cuda", dtype=torch.float32), eps=1e-5, T=rows)
    # NB = cdiv(T, 2048 * 32), never read by the kernel: 1 on both sides.
    return _case("layer_norm_gated", "fla.modules.norm.fused_norm_gate", "layer_norm_gated_fwd_kernel",
                 dict(DT=dt, D=d, NB=1, ACTIVATION=activation, IS_RMS_NORM=True, BT=bt, num_warps=4),
                 "%s %dx%d %s" % (dt, rows, d, activation), make, ["y", "rstd"], lambda p: (_cdiv(p["T"], bt),),
                 jit_kwargs=dict(BD=_next_pow2(d)))


# fla/modules/causal_conv1d/ops.py

def _conv1d_states(dt, d, varlen, initial_state, w=4):
    lens = _lengths(256, 256, seed=5, short=16) if varlen else [4096] * 8

    def make(torch):  # causal_conv1d_update_states, after causal_conv1d_fwd's prefill
        dtype = _dtype(torch, dt)
        n = len(lens)
        if varlen:  # x [1, total, D], one batch of packed sequences
            x = torch.randn(1, sum(lens), d, device="cuda", dtype=dtype)
            cu = _cu_seqlens(torch, lens)
            strides, t = (x.stride(0), x.stride(1), x.stride(2)), x.shape[1]
        else:
            x = torch.randn(n, lens[0], d, device="cuda", dtype=dtype)
            cu, strides, t = None, x.stride(), lens[0]
        h0 = torch.randn(n, d, w, device="cuda", dtype=dtype) if initial_state else None
        return dict(x=x, initial_state=h0, final_state=torch.empty(n, d, w, device="cuda", dtype=dtype),
                    cu_seqlens=cu, T=t, D=d, W=w, stride_x_n=strides[0], stride_x_t=strides[1],
                    stride_x_d=strides[2], N=n)
    return _case("conv1d_states", "fla.modules.causal_conv1d.ops", "causal_conv1d_states_fwd_kernel",
                 dict(DT=dt), "%s D=%d %s%s" % (dt, d, "varlen %d seqs" % len(lens) if varlen else "8x4096",
                                                 " +initial_state" if initial_state else ""),
                 make, ["final_state"], lambda p: (_cdiv(p["D"], min(_next_pow2(p["D"]), 256)) * p["N"],),
                 jit_kwargs=dict(BD=min(_next_pow2(d), 256), BW=_next_pow2(w)))


def _conv1d_update(dt, d, bd, n=1024, w=4):
    def make(torch):  # causal_conv1d_update: x [N, D], the cache updated in place
        dtype = _dtype(torch, dt)
        x = torch.randn(n, d, device="cuda", dtype=dtype)
        y = torch.empty_like(x)
        return dict(x=x, cache=torch.randn(n, d, w, device="cuda", dtype=dtype), residual=None, y=y,
                    weight=torch.randn(d, w, device="cuda", dtype=dtype), bias=None, stride_x_n=x.stride(0),
                    stride_x_d=x.stride(1), stride_y_n=y.stride(0), stride_y_d=y.stride(1), N=x.numel() // d)
    return _case("conv1d_update", "fla.modules.causal_conv1d.ops", "causal_conv1d_update_kernel",
                 dict(DT=dt, D=d, W=w, ACTIVATION="silu", BD=bd, num_warps=4), "%s %dx%d" % (dt, n, d), make,
                 ["y", "cache"], lambda p: (_cdiv(d, bd) * p["N"],), inplace=["cache"],
                 jit_kwargs=dict(BW=_next_pow2(w)))


def _conv1d_fwd(dt, d, initial_state, w=4, bt=64):
    lens = _lengths(64, 512, seed=7, short=4)

    def make(torch):  # causal_conv1d_fwd with cu_seqlens: x [1, total, D]
        dtype = _dtype(torch, dt)
        x = torch.randn(1, sum(lens), d, device="cuda", dtype=dtype)
        chunks = _chunk_indices(torch, lens, bt)
        h0 = torch.randn(len(lens), d, w, device="cuda", dtype=dtype) if initial_state else None
        return dict(x=x, y=torch.empty_like(x), weight=torch.randn(d, w, device="cuda", dtype=dtype), bias=None,
                    residual=None, cu_seqlens=_cu_seqlens(torch, lens), initial_state=h0, chunk_indices=chunks,
                    B=1, T=x.shape[1], stride_x_n=x.stride(0), stride_x_t=x.stride(1), stride_x_d=x.stride(2),
                    NT=len(chunks))
    return _case("conv1d_fwd", "fla.modules.causal_conv1d.ops", "causal_conv1d_fwd_kernel",
                 dict(DT=dt, D=d, W=w, BT=bt, ACTIVATION="silu", BD=64, num_warps=4),
                 "%s D=%d varlen %d seqs%s" % (dt, d, len(lens), " +initial_state" if initial_state else ""),
                 make, ["y"], lambda p: (_cdiv(d, 64), p["NT"], p["B"]), jit_kwargs=dict(BW=_next_pow2(w)))


# fla/modules/activations/ops.py

def _swiglu(dt, d, block, warps, rows):
    def make(torch):  # swiglu_fwd on x.chunk(2, -1) of a fused gate/up projection
        xy = torch.randn(rows, 2 * d, device="cuda", dtype=_dtype(torch, dt))
        x, y = xy.chunk(2, -1)  # prepare_input keeps the views: row stride 2 * D
        z = torch.empty_like(x, memory_format=torch.contiguous_format)
        return dict(x=x, y=y, z=z, stride_x_row=x.stride(0), stride_y_row=y.stride(0), stride_z_row=d,
                    T=x.numel())
    return _case("swiglu", "fla.modules.activations.ops", "swiglu_fwd_kernel",
                 dict(DT=dt, D=d, B=block, num_warps=warps), "%s %dx%d" % (dt, rows, d), make, ["z"],
                 lambda p: (_cdiv(p["T"], block),))


# fla/ops/delta_rule/fused_recurrent.py

def _fused_recurrent_delta_rule(dt, h, n_seqs, mean_len, k=128, v=128):
    lens = _lengths(n_seqs, mean_len, seed=11)

    def make(torch):  # fused_recurrent_delta_rule_fwd with cu_seqlens (B = 1)
        import torch.nn.functional as F
        dtype = _dtype(torch, dt)
        t = sum(lens)
        q = torch.randn(1, t, h, k, device="cuda", dtype=dtype)
        kk = F.normalize(torch.randn(1, t, h, k, device="cuda", dtype=torch.float32), dim=-1).to(dtype)
        vv = torch.randn(1, t, h, v, device="cuda", dtype=dtype)
        beta = torch.rand(1, t, h, device="cuda", dtype=dtype)  # per head: beta.ndim != v.ndim
        n = len(lens)
        return dict(q=q, k=kk, v=vv, u=torch.empty_like(vv), beta=beta, o=q.new_empty(1, *vv.shape),
                    h0=torch.randn(n, h, k, v, device="cuda", dtype=torch.float32),
                    ht=q.new_empty(n, h, k, v, dtype=torch.float32), cu_seqlens=_cu_seqlens(torch, lens),
                    scale=k ** -0.5, T=t, N=n)
    bk, bv = _next_pow2(k), min(_next_pow2(v), 8)
    return _case("fused_recurrent_delta_rule", "fla.ops.delta_rule.fused_recurrent",
                 "fused_recurrent_delta_rule_fwd_kernel",
                 dict(DT=dt, B=1, H=h, K=k, V=v, IS_BETA_HEADWISE=False, num_warps=1, num_stages=1),
                 "%s H=%d varlen %d seqs ~%d" % (dt, h, n_seqs, mean_len), make, ["u", "o", "ht"],
                 lambda p: (_cdiv(v, bv) * _cdiv(k, bk) * p["N"] * h,), jit_kwargs=dict(BK=bk, BV=bv))


# fla/ops/common/fused_recurrent.py

def _fused_recurrent(dt, warps, n_seqs, mean_len, h=16, k=128, v=128):
    lens = _lengths(n_seqs, mean_len, seed=13)
    bk, bv = min(_next_pow2(k), 64), min(_next_pow2(v), 64)  # _fused_recurrent_tiling
    nk, nv = _cdiv(k, bk), _cdiv(v, bv)

    def make(torch):  # fused_recurrent_fwd for GLA (gk) with cu_seqlens (B = 1)
        import torch.nn.functional as F
        dtype = _dtype(torch, dt)
        t, n = sum(lens), len(lens)
        q = torch.randn(1, t, h, k, device="cuda", dtype=dtype)
        gk = F.logsigmoid(torch.randn(1, t, h, k, device="cuda", dtype=torch.float32)) / 16
        vv = torch.randn(1, t, h, v, device="cuda", dtype=dtype)
        o = q.new_empty((nk, *vv.shape) if nk > 1 else vv.shape, dtype=torch.float32)
        return dict(q=q, k=torch.randn(1, t, h, k, device="cuda", dtype=dtype), v=vv, g=None, g_gamma=None,
                    gk=gk, gv=None, o=o, h0=torch.randn(n, h, k, v, device="cuda", dtype=torch.float32),
                    ht=q.new_empty(n, h, k, v, dtype=torch.float32), cu_seqlens=_cu_seqlens(torch, lens),
                    scale=k ** -0.5, B=1, T=t, N=n)
    return _case("fused_recurrent", "fla.ops.common.fused_recurrent", "fused_recurrent_fwd_kernel",
                 dict(DT=dt, H=h, K=k, V=v, REVERSE=False, USE_G=False, USE_G_GAMMA=False, USE_GK=True,
                      USE_GV=False, num_warps=warps),
                 "%s GLA H=%d %s %d seqs" % (dt, h, "decode" if mean_len == 1 else "varlen ~%d," % mean_len, n_seqs),
                 make, ["o", "ht"],
                 lambda p: (nv * nk * p["N"] * h,), jit_kwargs=dict(BK=bk, BV=bv))


# fla/ops/gated_delta_rule/fused_recurrent.py

def _fused_recurrent_gdn(dt, n_seqs, mean_len, gate_in_kernel, h=16, hv=32, k=128, v=128):
    lens = _lengths(n_seqs, mean_len, seed=17)
    bk, bv = _next_pow2(k), min(8, _next_pow2(v))

    def make(torch):  # fused_recurrent_gated_delta_rule_fwd with cu_seqlens (B = 1)
        import torch.nn.functional as F
        dtype = _dtype(torch, dt)
        t, n = sum(lens), len(lens)
        q = torch.randn(1, t, h, k, device="cuda", dtype=dtype)
        vv = torch.randn(1, t, hv, v, device="cuda", dtype=dtype)
        if gate_in_kernel:  # the raw gate; the kernel applies -exp(A_log) * softplus(g + dt_bias)
            g = torch.randn(1, t, hv, device="cuda", dtype=torch.float32)
            a_log = torch.rand(hv, device="cuda", dtype=torch.float32)
            dt_bias = torch.randn(hv, device="cuda", dtype=torch.float32)
        else:  # GDN's log decay, made before the kernel
            g = F.logsigmoid(torch.randn(1, t, hv, device="cuda", dtype=torch.float32))
            a_log = dt_bias = None
        return dict(q=q, k=torch.randn(1, t, h, k, device="cuda", dtype=dtype), v=vv, g=g, gk=None, gv=None,
                    beta=torch.rand(1, t, hv, device="cuda", dtype=dtype), A_log=a_log, dt_bias=dt_bias,
                    o=torch.empty_like(vv), h0=torch.randn(n, hv, k, v, device="cuda", dtype=torch.float32),
                    ht=q.new_empty(n, hv, k, v, dtype=torch.float32), cu_seqlens=_cu_seqlens(torch, lens),
                    scale=k ** -0.5, T=t, N=n)
    return _case("fused_recurrent_gdn", "fla.ops.gated_delta_rule.fused_recurrent",
                 "fused_recurrent_gated_delta_rule_fwd_kernel",
                 dict(DT=dt, H=h, HV=hv, K=k, V=v, USE_QK_L2NORM_IN_KERNEL=True, IS_BETA_HEADWISE=True,
                      STATE_V_FIRST=False, APPLY_BETA_SIGMOID=False, ALLOW_NEG_EIGVAL=False, num_warps=1,
                      num_stages=3),
                 "%s %s %d seqs%s" % (dt, "decode" if mean_len == 1 else "varlen ~%d," % mean_len, n_seqs,
                                      " gate in kernel" if gate_in_kernel else ""),
                 make, ["o", "ht"], lambda p: (_cdiv(v, bv) * p["N"] * hv,), jit_kwargs=dict(BK=bk, BV=bv))


# fla/ops/utils/cumsum.py

def _chunk_local_cumsum(dt, scaled, warps, n_seqs=256, mean_len=4096, h=32, bt=64):
    lens = _lengths(n_seqs, mean_len, seed=19)

    def make(torch):  # chunk_local_cumsum_scalar with cu_seqlens (B = 1), output_dtype f32
        g = torch.randn(1, sum(lens), h, device="cuda", dtype=_dtype(torch, dt))
        chunks = _chunk_indices(torch, lens, bt)
        return dict(s=g, o=torch.empty_like(g, dtype=torch.float32), scale=RCP_LN2 if scaled else 1.0,
                    cu_seqlens=_cu_seqlens(torch, lens), chunk_indices=chunks, T=g.shape[1], NT=len(chunks))
    # Without a scale fla passes scale=None, which the JIT gets; a C caller
    # passes a float, which HAS_SCALE = false leaves unread.
    extra = {} if scaled else dict(jit_kwargs=dict(scale=None))
    return _case("chunk_local_cumsum", "fla.ops.utils.cumsum", "chunk_local_cumsum_scalar_kernel",
                 dict(DT=dt, B=1, H=h, BT=bt, REVERSE=False, HAS_SCALE=scaled, num_warps=warps),
                 "%s H=%d varlen %d seqs ~%d%s" % (dt, h, n_seqs, mean_len, " *RCP_LN2" if scaled else ""),
                 make, ["o"], lambda p: (p["NT"] * 1 * h,), **extra)


# fla/ops/common/chunk_scaled_dot_kkt.py

def _gates(torch, b, t, hv):
    """A log2-space decay like GDN's chunk-local cumsum: small negative steps."""
    return (-torch.rand(b, t, hv, device="cuda", dtype=torch.float32) * 0.05).cumsum(1)


def _chunk_scaled_dot_kkt(dt, stages, lens=None, batch=4, t=8192, h=16, hv=32, k=128, bt=64):
    def make(torch):  # chunk_scaled_dot_kkt_fwd(k, g, beta, ...), output_dtype f32
        import torch.nn.functional as F
        dtype = _dtype(torch, dt)
        b, tt = (1, sum(lens)) if lens else (batch, t)
        kk = F.normalize(torch.randn(b, tt, h, k, device="cuda", dtype=torch.float32), dim=-1).to(dtype)
        chunks = _chunk_indices(torch, lens, bt) if lens else None
        return dict(k=kk, g=_gates(torch, b, tt, hv), beta=torch.rand(b, tt, hv, device="cuda", dtype=dtype),
                    A=torch.empty(b, tt, hv, bt, device="cuda", dtype=torch.float32),
                    cu_seqlens=_cu_seqlens(torch, lens) if lens else None, chunk_indices=chunks, T=tt,
                    NT=len(chunks) if lens else _cdiv(tt, bt), B=b)
    return _case("chunk_scaled_dot_kkt", "fla.ops.common.chunk_scaled_dot_kkt", "chunk_scaled_dot_kkt_fwd_kernel",
                 dict(DT=dt, H=h, HV=hv, K=k, BT=bt, BK=64, num_warps=4, num_stages=stages),
                 "%s %s" % (dt, "varlen %d seqs" % len(lens) if lens else "%dx%d" % (batch, t)), make, ["A"],
                 lambda p: (p["NT"], p["B"] * hv))


# fla/ops/gated_delta_rule/chunk_fwd.py

def _chunk_gdn_kkt_solve(dt, warps, lens=None, batch=4, t=8192, h=16, hv=32, k=128, bt=64):
    def make(torch):  # chunk_gated_delta_rule_fwd_intra, BT == 64: A = zeros(..., dtype=k.dtype)
        import torch.nn.functional as F
        dtype = _dtype(torch, dt)
        b, tt = (1, sum(lens)) if lens else (batch, t)
        kk = F.normalize(torch.randn(b, tt, h, k, device="cuda", dtype=torch.float32), dim=-1).to(dtype)
        chunks = _chunk_indices(torch, lens, bt) if lens else None
        return dict(k=kk, g=_gates(torch, b, tt, hv), beta=torch.rand(b, tt, hv, device="cuda", dtype=dtype),
                    A=torch.zeros(b, tt, hv, bt, device="cuda", dtype=dtype),
                    cu_seqlens=_cu_seqlens(torch, lens) if lens else None, chunk_indices=chunks, T=tt,
                    NT=len(chunks) if lens else _cdiv(tt, bt), B=b)
    return _case("chunk_gdn_kkt_solve", "fla.ops.gated_delta_rule.chunk_fwd",
                 "chunk_gated_delta_rule_fwd_kkt_solve_kernel",
                 dict(DT=dt, H=h, HV=hv, K=k, BT=bt, BC=16, BK=64, num_warps=warps),
                 "%s %s" % (dt, "varlen %d seqs" % len(lens) if lens else "%dx%d" % (batch, t)), make, ["A"],
                 lambda p: (p["NT"], p["B"] * hv), inplace=["A"])


# fla/ops/utils/solve_tril.py

def _solve_tril(dt, stages, lens=None, batch=4, t=8192, h=32, bt=64):
    def make(torch):  # solve_tril(A, ...): Ai = zeros_like(A, dtype=output_dtype)
        b, tt = (1, sum(lens)) if lens else (batch, t)
        # A strictly lower triangular in each chunk of BT rows of a sequence.
        if lens:
            pos = torch.cat([torch.arange(n, device="cuda") for n in lens])
        else:
            pos = torch.arange(tt, device="cuda")
        row = (pos % bt)[:, None]
        mask = torch.arange(bt, device="cuda")[None, :] < row  # [T, BT]
        a = torch.randn(b, tt, h, bt, device="cuda", dtype=torch.float32) * 0.05
        a = a * mask[None, :, None, :]
        chunks = _chunk_indices(torch, lens, bt) if lens else None
        return dict(A=a, Ai=torch.zeros_like(a, dtype=_dtype(torch, dt)),
                    cu_seqlens=_cu_seqlens(torch, lens) if lens else None, chunk_indices=chunks, T=tt,
                    NT=len(chunks) if lens else _cdiv(tt, bt), B=b)
    return _case("solve_tril", "fla.ops.utils.solve_tril", "merge_16x16_to_64x64_inverse_kernel",
                 dict(DT=dt, H=h, BT=bt, USE_TMA=False, DOT_PRECISION="ieee", num_warps=4, num_stages=stages),
                 "%s %s" % (dt, "varlen %d seqs" % len(lens) if lens else "%dx%d" % (batch, t)), make, ["Ai"],
                 lambda p: (p["NT"], p["B"] * h), inplace=["Ai"])


# fla/ops/gated_delta_rule/wy_fast.py

def _recompute_w_u(dt, stages, lens=None, batch=4, t=8192, h=16, hv=32, k=128, v=128, bt=64):
    def make(torch):  # recompute_w_u_fwd(k, v, beta, A, g, ...): BK = BV = 64
        import torch.nn.functional as F
        dtype = _dtype(torch, dt)
        b, tt = (1, sum(lens)) if lens else (batch, t)
        kk = F.normalize(torch.randn(b, tt, h, k, device="cuda", dtype=torch.float32), dim=-1).to(dtype)
        vv = torch.randn(b, tt, hv, v, device="cuda", dtype=dtype)
        chunks = _chunk_indices(torch, lens, bt) if lens else None
        return dict(k=kk, v=vv, beta=torch.rand(b, tt, hv, device="cuda", dtype=dtype),
                    w=kk.new_empty(b, tt, hv, k), u=torch.empty_like(vv),
                    A=(torch.randn(b, tt, hv, bt, device="cuda", dtype=torch.float32) * 0.1).to(dtype),
                    g=_gates(torch, b, tt, hv), cu_seqlens=_cu_seqlens(torch, lens) if lens else None,
                    chunk_indices=chunks, T=tt, NT=len(chunks) if lens else _cdiv(tt, bt), B=b)
    return _case("recompute_w_u", "fla.ops.gated_delta_rule.wy_fast", "recompute_w_u_fwd_kernel",
                 dict(DT=dt, H=h, HV=hv, K=k, V=v, BT=bt, BK=64, BV=64, num_warps=4, num_stages=stages),
                 "%s %s" % (dt, "varlen %d seqs" % len(lens) if lens else "%dx%d" % (batch, t)), make, ["w", "u"],
                 lambda p: (p["NT"], p["B"] * hv))


# fla/ops/common/chunk_delta_h.py

def _chunk_delta_h(dt, bv, warps, stages, n_seqs=64, mean_len=512, h=16, hv=32, k=128, v=128, bt=64):
    lens = _lengths(n_seqs, mean_len, seed=23)

    def make(torch):  # chunk_gated_delta_rule_fwd_h with cu_seqlens (B = 1), save_new_value
        import torch.nn.functional as F
        dtype = _dtype(torch, dt)
        t, n = sum(lens), len(lens)
        nt = sum(_cdiv(x, bt) for x in lens)
        kk = F.normalize(torch.randn(1, t, h, k, device="cuda", dtype=torch.float32), dim=-1)
        # w is A (beta * exp2(g) * k): k's directions, smaller.
        w = (kk.repeat_interleave(hv // h, dim=2) * 0.5).to(dtype)
        u = torch.randn(1, t, hv, v, device="cuda", dtype=dtype)
        return dict(k=kk.to(dtype), v=u, w=w, v_new=torch.empty_like(u), g=_gates(torch, 1, t, hv), gk=None,
                    h=u.new_empty(1, nt, hv, k, v), h0=torch.randn(n, hv, k, v, device="cuda", dtype=torch.float32),
                    ht=u.new_zeros(n, hv, k, v, dtype=torch.float32), cu_seqlens=_cu_seqlens(torch, lens),
                    chunk_offsets=_chunk_offsets(torch, lens, bt), T=t, N=n)
    return _case("chunk_delta_h", "fla.ops.common.chunk_delta_h", "chunk_gated_delta_rule_fwd_kernel_h_blockdim64",
                 dict(DT=dt, H=h, HV=hv, K=k, V=v, BT=bt, STATE_V_FIRST=False, BV=bv, num_warps=warps,
                      num_stages=stages),
                 "%s varlen %d seqs ~%d" % (dt, n_seqs, mean_len), make, ["v_new", "h", "ht"],
                 lambda p: (_cdiv(v, bv) * p["N"] * hv,), inplace=["ht"])


# fla/ops/common/chunk_o.py

def _chunk_o(dt, bkv, warps, lens=None, batch=2, t=16384, h=16, hv=32, k=128, v=128, bt=64):
    def make(torch):  # chunk_fwd_o(q, k, v_new, h, g, ...): o = empty_like(v)
        dtype = _dtype(torch, dt)
        b, tt = (1, sum(lens)) if lens else (batch, t)
        chunks = _chunk_indices(torch, lens, bt) if lens else None
        nt = len(chunks) if lens else _cdiv(tt, bt)
        vv = torch.randn(b, tt, hv, v, device="cuda", dtype=dtype)
        return dict(q=torch.randn(b, tt, h, k, device="cuda", dtype=dtype),
                    k=torch.randn(b, tt, h, k, device="cuda", dtype=dtype), v=vv,
                    h=(torch.randn(b, nt, hv, k, v, device="cuda", dtype=torch.float32) * 0.1).to(dtype),
                    g=_gates(torch, b, tt, hv), g_gamma=None, o=torch.empty_like(vv),
                    cu_seqlens=_cu_seqlens(torch, lens) if lens else None, chunk_indices=chunks,
                    scale=k ** -0.5, T=tt, NT=nt, B=b)
    return _case("chunk_o", "fla.ops.common.chunk_o", "chunk_fwd_kernel_o",
                 dict(DT=dt, H=h, HV=hv, K=k, V=v, BT=bt, STATE_V_FIRST=False, BK=bkv, BV=bkv, num_warps=warps,
                      num_stages=3),
                 "%s %s" % (dt, "varlen %d seqs" % len(lens) if lens else "%dx%d" % (batch, t)), make, ["o"],
                 lambda p: (_cdiv(v, bkv) * p["NT"], p["B"] * hv))


CASES = [
    _layer_norm_row("bf16", 4096, 8, False),
    _layer_norm_row("f16", 2048, 4, True, rows=65536),
    _layer_norm("bf16", 128, 64),
    _layer_norm("f16", 64, 32),
    _l2norm("bf16", 128, 32),
    _l2norm("f16", 64, 16),
    _layer_norm_group("bf16", 128, False),
    _layer_norm_group("f16", 1024, True),
    _layer_norm_gated("bf16", "swish", 16),
    _layer_norm_gated("f16", "sigmoid", 32),
    _conv1d_states("bf16", 4096, True, True),
    _conv1d_states("f16", 8192, False, False),
    _conv1d_update("bf16", 8192, 256),
    _conv1d_update("f16", 4096, 64, n=2048),
    _conv1d_fwd("bf16", 4096, False),
    _conv1d_fwd("f16", 8192, True),
    _swiglu("bf16", 14336, 4096, 8, 8192),
    _swiglu("f16", 11008, 1024, 4, 8192),
    _fused_recurrent_delta_rule("bf16", 16, 64, 512),
    _fused_recurrent_delta_rule("f16", 32, 32, 256),
    _fused_recurrent("bf16", 4, 64, 512),
    _fused_recurrent("f16", 8, 256, 1),
    _fused_recurrent_gdn("bf16", 256, 1, False),
    _fused_recurrent_gdn("f16", 64, 128, True),
    _chunk_local_cumsum("f32", True, 2),
    _chunk_local_cumsum("bf16", False, 1),
    _chunk_scaled_dot_kkt("bf16", 3),
    _chunk_scaled_dot_kkt("f16", 2, lens=_lengths(64, 512, seed=29)),
    _chunk_gdn_kkt_solve("bf16", 4),
    _chunk_gdn_kkt_solve("f16", 2, lens=_lengths(64, 512, seed=31)),
    _solve_tril("bf16", 3),
    _solve_tril("f32", 2, lens=_lengths(64, 512, seed=37)),
    _recompute_w_u("bf16", 3),
    _recompute_w_u("f16", 2, lens=_lengths(64, 512, seed=41)),
    _chunk_delta_h("bf16", 64, 4, 2),
    _chunk_delta_h("f16", 32, 2, 3),
    _chunk_o("bf16", 64, 4),
    _chunk_o("f16", 128, 8, lens=_lengths(64, 512, seed=43)),
]
