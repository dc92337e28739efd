"""How Liger-Kernel 0.8.5 launches its forward kernels (tests/corpus/liger/),
as cases for tests/gpu/corpus_parity.py.

Each case names the manifest's kernel, the constexpr values of the
specialization (as the manifest spells them), the module and entry of the
@triton.jit function, and how Liger's own wrapper calls it: `make(torch)`
returns every manifest param (launch-only ones too) with inputs made the way
the wrapper makes them (contiguous, its dtypes), and `grid(params)` is the
wrapper's grid.  `outputs` are compared bit for bit; `inplace` outputs are
inputs the kernel overwrites (cloned, not poisoned, per run); `aliases` and
`jit_kwargs` are described in corpus_parity.py.  Shapes are past the H100's
50 MB of L2, so the timings compare kernels, not launch overhead.

Each make() names the wrapper it follows (liger_kernel/ops/...).
"""

TORCH_DTYPES = {"bf16": "bfloat16", "f16": "float16", "f32": "float32"}


def _dtype(torch, name):
    return getattr(torch, TORCH_DTYPES[name])


def _rows(n_rows):
    """The grid of a wrapper that launches one program per row."""
    return lambda p: (p[n_rows],)


def _rms_norm(dtype_name, cols, block, warps, rows=32768):
    def make(torch):  # rms_norm.py rms_norm_forward, the row kernel
        dtype = _dtype(torch, dtype_name)
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


def _block_rms_norm(dtype_name, casting_mode, head_dim, tokens=32768, heads=32):
    rows = tokens * heads  # a per-head QK norm: (tokens, heads, head_dim) viewed (-1, head_dim)

    def make(torch):  # rms_norm.py rms_norm_forward, BLOCK_SIZE <= 256 and n_rows >= 32768
        dtype = _dtype(torch, dtype_name)
        X = torch.randn(rows, head_dim, device="cuda", dtype=dtype)
        W = torch.randn(head_dim, device="cuda", dtype=dtype)
        Y = torch.empty_like(X)
        RSTD = torch.empty(rows, device="cuda", dtype=torch.float32)
        return dict(Y_ptr=Y, Y_row_stride=Y.stride(0), X_ptr=X, X_row_stride=X.stride(0), W_ptr=W,
                    W_row_stride=W.stride(0), RSTD_ptr=RSTD, RSTD_row_stride=RSTD.stride(0), n_rows=rows,
                    n_cols=head_dim, eps=1e-6, offset=1.0 if casting_mode == 1 else 0.0)
    return dict(kernel="block_rms_norm", module="liger_kernel.ops.rms_norm", entry="_block_rms_norm_forward_kernel",
                constexprs=dict(T=dtype_name, casting_mode=casting_mode, elementwise_affine=True,
                                BLOCK_SIZE=head_dim, BLOCK_ROW=16),
                shape="%s %dx%d cast %d" % (dtype_name, rows, head_dim, casting_mode), make=make,
                outputs=["Y_ptr", "RSTD_ptr"], grid=lambda p: ((p["n_rows"] + 15) // 16,))


def _layer_norm(dtype_name, cols, block, warps, rows=32768):
    def make(torch):  # layer_norm.py layer_norm_forward
        dtype = _dtype(torch, dtype_name)
        X = torch.randn(rows, cols, device="cuda", dtype=dtype)
        W = torch.randn(cols, device="cuda", dtype=dtype)
        B = torch.randn(cols, device="cuda", dtype=dtype)
        Y = torch.empty_like(X)
        Mean = torch.empty(rows, device="cuda", dtype=torch.float32)
        RSTD = torch.empty(rows, device="cuda", dtype=torch.float32)
        return dict(Y_ptr=Y, Y_row_stride=Y.stride(0), X_ptr=X, X_row_stride=X.stride(0), W_ptr=W,
                    W_row_stride=W.stride(0), B_ptr=B, B_row_stride=B.stride(0), Mean_ptr=Mean,
                    Mean_row_stride=Mean.stride(0), RSTD_ptr=RSTD, RSTD_row_stride=RSTD.stride(0), n_cols=cols,
                    eps=1e-5, n_rows=rows)
    return dict(kernel="layer_norm", module="liger_kernel.ops.layer_norm", entry="_layer_norm_forward_kernel",
                constexprs=dict(T=dtype_name, BLOCK_SIZE=block, num_warps=warps),
                shape="%s %dx%d" % (dtype_name, rows, cols), make=make, outputs=["Y_ptr", "Mean_ptr", "RSTD_ptr"],
                grid=_rows("n_rows"))


def _rope(dtype_name, n_qh, n_kh, hd, seq_len, bsz=1):
    def make(torch):  # rope.py rope_forward: q, k (bsz, heads, seq, hd) made (bsz, seq, heads, hd) contiguous
        dtype = _dtype(torch, dtype_name)
        q = torch.randn(bsz, n_qh, seq_len, hd, device="cuda", dtype=dtype).transpose(1, 2).contiguous()
        k = torch.randn(bsz, n_kh, seq_len, hd, device="cuda", dtype=dtype).transpose(1, 2).contiguous()
        # HF's rotary embedding: cos/sin (1, seq, hd) in the activations' dtype, halves duplicated.
        freqs = torch.outer(torch.arange(seq_len, device="cuda", dtype=torch.float32),
                            1.0 / 500000.0 ** (torch.arange(0, hd, 2, device="cuda", dtype=torch.float32) / hd))
        emb = torch.cat((freqs, freqs), dim=-1)[None]
        cos, sin = emb.cos().to(dtype).contiguous(), emb.sin().to(dtype).contiguous()
        return dict(q_ptr=q, q_row_stride=q.stride(1), k_ptr=k, k_row_stride=k.stride(1), cos=cos,
                    cos_row_stride=cos.stride(-2), sin=sin, sin_row_stride=sin.stride(-2), sl=seq_len)
    pad_q, pad_k = 1 << (n_qh - 1).bit_length(), 1 << (n_kh - 1).bit_length()
    return dict(kernel="rope", module="liger_kernel.ops.rope", entry="_triton_rope",
                constexprs=dict(T=dtype_name, bs=bsz, cos_bs=1, n_qh=n_qh, n_kh=n_kh, hd=hd, pad_n_qh=pad_q,
                                pad_n_kh=pad_k, pad_hd=hd, pad_rd=hd, rd=hd, BLOCK_SIZE=max(pad_q, pad_k)),
                shape="%s q%d kv%d hd%d seq %d" % (dtype_name, n_qh, n_kh, hd, seq_len), make=make,
                outputs=["q_ptr", "k_ptr"], inplace=["q_ptr", "k_ptr"], grid=lambda p: (bsz * p["sl"],))


def _qwen2vl_mrope(dtype_name, n_qh, n_kh, seq_len, hd=128, bsz=1):
    def make(torch):  # qwen2vl_mrope.py qwen2vl_mrope_forward
        dtype = _dtype(torch, dtype_name)
        q = torch.randn(bsz, n_qh, seq_len, hd, device="cuda", dtype=dtype).transpose(1, 2).contiguous()
        k = torch.randn(bsz, n_kh, seq_len, hd, device="cuda", dtype=dtype).transpose(1, 2).contiguous()
        # (3, bsz, seq, hd): the temporal, height and width positions' cos/sin.
        angles = torch.rand(3, bsz, seq_len, hd // 2, device="cuda") * 1000.0
        emb = torch.cat((angles, angles), dim=-1)
        cos, sin = emb.cos().to(dtype).contiguous(), emb.sin().to(dtype).contiguous()
        return dict(q_ptr=q, k_ptr=k, cos=cos, sin=sin, sl=seq_len)
    pad_q, pad_k = 1 << (n_qh - 1).bit_length(), 1 << (n_kh - 1).bit_length()
    return dict(kernel="qwen2vl_mrope", module="liger_kernel.ops.qwen2vl_mrope", entry="_triton_qwen2vl_mrope",
                constexprs=dict(T=dtype_name, bs=bsz, n_qh=n_qh, n_kh=n_kh, hd=hd, pad_n_qh=pad_q, pad_n_kh=pad_k,
                                pad_hd=hd, mrope_section_t=16, mrope_section_h=24, BLOCK_SIZE=max(pad_q, pad_k)),
                shape="%s q%d kv%d hd%d seq %d" % (dtype_name, n_qh, n_kh, hd, seq_len), make=make,
                outputs=["q_ptr", "k_ptr"], inplace=["q_ptr", "k_ptr"], grid=lambda p: (bsz * p["sl"],))


def _llama4_rope(dtype_name, seq_len, bsz=1, n_q=40, n_k=8, hd=128):
    def make(torch):  # llama4_rope.py llama4_rope_forward, imag_sign 1.0 (forward)
        dtype = _dtype(torch, dtype_name)
        q = torch.randn(bsz, seq_len, n_q, hd, device="cuda", dtype=dtype)
        k = torch.randn(bsz, seq_len, n_k, hd, device="cuda", dtype=dtype)
        angles = torch.rand(seq_len, hd // 2, device="cuda") * 1000.0
        freqs_cis = torch.polar(torch.ones_like(angles), angles)  # complex64 (seq, hd / 2)
        freqs = torch.view_as_real(freqs_cis).contiguous()        # f32 (seq, hd / 2, 2)
        return dict(q_ptr=q, k_ptr=k, freqs_complex_ptr=freqs, q_row_stride=q.stride(1), k_row_stride=k.stride(1),
                    q_head_stride=q.stride(2), k_head_stride=k.stride(2), freqs_row_stride=freqs.stride(0),
                    seq_len=seq_len, batch_size=bsz, imag_sign=1.0)
    return dict(kernel="llama4_rope", module="liger_kernel.ops.llama4_rope", entry="_llama4_rope_kernel",
                constexprs=dict(T=dtype_name, head_dim_half=hd // 2, n_q_heads=n_q, n_k_heads=n_k, BLOCK_SIZE=64,
                                num_warps=4, num_stages=2),
                shape="%s q%d kv%d hd%d seq %d" % (dtype_name, n_q, n_k, hd, seq_len), make=make,
                outputs=["q_ptr", "k_ptr"], inplace=["q_ptr", "k_ptr"],
                grid=lambda p: (p["batch_size"] * p["seq_len"], max(n_q, n_k)))


def _gated(kernel, module, entry, names, dtype_name, cols, block, warps, rows):
    """swiglu and geglu: c = act(a) * b over (rows, cols)."""
    a_name, b_name, c_name = names

    def make(torch):  # swiglu.py swiglu_forward / geglu.py geglu_forward
        dtype = _dtype(torch, dtype_name)
        a = torch.randn(rows, cols, device="cuda", dtype=dtype)
        b = torch.randn(rows, cols, device="cuda", dtype=dtype)
        c = torch.empty_like(a)
        p = {a_name: a, b_name: b, c_name: c, "stride": c.stride(-2), "n_rows": rows}
        if kernel == "swiglu":
            p["gate_multiplier"] = 1.0
        return p
    return dict(kernel=kernel, module=module, entry=entry,
                constexprs=dict(T=dtype_name, n_cols=cols, BLOCK_SIZE=block, num_warps=warps),
                shape="%s %dx%d" % (dtype_name, rows, cols), make=make, outputs=[c_name], grid=_rows("n_rows"))


def _cross_entropy(dtype_name, vocab, rows, reduction, grad, ignored=0.1):
    def make(torch):  # cross_entropy.py cross_entropy_forward, no weight, z-loss, smoothing or softcap
        dtype = _dtype(torch, dtype_name)
        X = torch.randn(rows, vocab, device="cuda", dtype=dtype)
        target = torch.randint(0, vocab, (rows,), device="cuda", dtype=torch.int64)
        target[torch.rand(rows, device="cuda") < ignored] = -100
        loss_1d = torch.zeros(rows, device="cuda", dtype=dtype)
        n_non_ignore = int((target != -100).sum().item())
        return dict(X_ptr=X, X_stride=X.stride(-2), Y_ptr=target, Y_stride=target.stride(-1), weight_ptr=None,
                    loss_ptr=loss_1d, z_loss_ptr=None, loss_stride=loss_1d.stride(-1), token_accuracy_ptr=None,
                    token_accuracy_stride=0, predicted_tokens_ptr=None, predicted_tokens_stride=0, n_cols=vocab,
                    n_non_ignore=n_non_ignore, sum_non_ignore_weight=n_non_ignore, weight_sum=0.0,
                    ignore_index=-100, softcap=0.0, n_rows=rows)
    return dict(kernel="cross_entropy", module="liger_kernel.ops.cross_entropy", entry="liger_cross_entropy_kernel",
                constexprs=dict(T=dtype_name, lse_square_scale=0.0, label_smoothing=0.0, reduction=reduction,
                                RETURN_Z_LOSS=False, RETURN_TOKEN_ACCURACY=False, RETURN_PREDICTED_TOKENS=False,
                                BLOCK_SIZE=32768, HAS_WEIGHT=False, HAS_SOFTCAPPING=False, HAS_GRADIENTS=grad,
                                num_warps=32),
                # Liger passes softcap=None without soft-capping; the C launcher takes a float.
                jit_kwargs=dict(softcap=None),
                shape="%s %dx%d %s %s" % (dtype_name, rows, vocab, reduction, "grad" if grad else "nograd"),
                make=make, outputs=["X_ptr", "loss_ptr"], inplace=["X_ptr"], grid=_rows("n_rows"))


def _fused_add_rms_norm(dtype_name, cols, block, warps, rows=32768):
    def make(torch):  # fused_add_rms_norm.py fused_add_rms_norm_forward
        dtype = _dtype(torch, dtype_name)
        X = torch.randn(rows, cols, device="cuda", dtype=dtype)
        R = torch.randn(rows, cols, device="cuda", dtype=dtype)
        W = torch.randn(cols, device="cuda", dtype=dtype)
        Y, S = torch.empty_like(X), torch.empty_like(X)
        RSTD = torch.empty(rows, device="cuda", dtype=torch.float32)
        return dict(Y_ptr=Y, Y_row_stride=Y.stride(0), S_ptr=S, S_row_stride=S.stride(0), X_ptr=X,
                    X_row_stride=X.stride(0), R_ptr=R, R_row_stride=R.stride(0), W_ptr=W, W_row_stride=W.stride(0),
                    RSTD_ptr=RSTD, RSTD_row_stride=RSTD.stride(0), n_cols=cols, eps=1e-6, offset=0.0, n_rows=rows)
    return dict(kernel="fused_add_rms_norm", module="liger_kernel.ops.fused_add_rms_norm",
                entry="_fused_add_rms_norm_forward_kernel",
                constexprs=dict(T=dtype_name, casting_mode=0, BLOCK_SIZE=block, num_warps=warps, num_stages=2),
                shape="%s %dx%d" % (dtype_name, rows, cols), make=make, outputs=["Y_ptr", "S_ptr", "RSTD_ptr"],
                grid=_rows("n_rows"))


def _group_norm(dtype_name, batch, channels, spatial, groups=32):
    def make(torch):  # group_norm.py group_norm_forward
        dtype = _dtype(torch, dtype_name)
        X = torch.randn(batch, channels, spatial, spatial, device="cuda", dtype=dtype).view(batch, groups, -1)
        hidden = X.shape[-1]
        W = torch.randn(channels, device="cuda", dtype=dtype)
        B = torch.randn(channels, device="cuda", dtype=dtype)
        Y = torch.empty((batch, groups, hidden), device="cuda", dtype=dtype)
        Mean = torch.zeros((batch, groups), device="cuda", dtype=dtype)
        RSTD = torch.zeros((batch, groups), device="cuda", dtype=dtype)
        return dict(Y_ptr=Y, Y_row_stride=Y.stride(0), Y_col_stride=Y.stride(1), X_ptr=X, X_row_stride=X.stride(0),
                    X_col_stride=X.stride(1), Mean_ptr=Mean, Mean_row_stride=Mean.stride(0),
                    Mean_col_stride=Mean.stride(1), RSTD_ptr=RSTD, RSTD_row_stride=RSTD.stride(0),
                    RSTD_col_stride=RSTD.stride(1), W_ptr=W, B_ptr=B, hidden_size=hidden,
                    channels_per_group=channels // groups, eps=1e-5, batch_size=batch, num_groups=groups)
    hidden = channels // groups * spatial * spatial
    block = min(65536, 1 << (hidden - 1).bit_length())
    return dict(kernel="group_norm", module="liger_kernel.ops.group_norm", entry="_group_norm_forward_kernel",
                constexprs=dict(T=dtype_name, BLOCK_SIZE=block),
                shape="%s %dx%dx%dx%d" % (dtype_name, batch, channels, spatial, spatial), make=make,
                outputs=["Y_ptr", "Mean_ptr", "RSTD_ptr"], grid=lambda p: (p["batch_size"], p["num_groups"]))


def _jsd(dtype_name, rows, vocab, has_label, ignored=0.1):
    def make(torch):  # backends/_triton/jsd.py jsd_loss_and_grad_triton, from jsd.py jsd_forward
        dtype = _dtype(torch, dtype_name)
        X = torch.randn(rows, vocab, device="cuda").log_softmax(-1).to(dtype)  # dX = _input.clone()
        Y = torch.randn(rows, vocab, device="cuda").log_softmax(-1).to(dtype)
        loss = torch.zeros((rows, vocab), device="cuda", dtype=torch.float32)
        if has_label:
            labels = torch.randint(0, vocab, (rows,), device="cuda", dtype=torch.int64)
            labels[torch.rand(rows, device="cuda") < ignored] = -100
            n_non_ignore = int((labels != -100).sum().item())
        else:
            labels = torch.empty(1, device="cuda")  # Liger's f32 dummy
            n_non_ignore = rows
        return dict(X_ptr=X, X_stride=X.stride(-2), Y_ptr=Y, Y_stride=Y.stride(-2), loss_ptr=loss,
                    loss_stride=loss.stride(-2), dX_ptr=X, dX_stride=X.stride(-2), label_ptr=labels,
                    n_non_ignore=n_non_ignore, n_cols=vocab, n_rows=rows)
    return dict(kernel="jsd", module="liger_kernel.ops.jsd", entry="_jsd_kernel",
                constexprs=dict(T=dtype_name, beta=0.5, ignore_index=-100, BLOCK_SIZE=4096, HAS_LABEL=has_label),
                shape="%s %dx%d %s" % (dtype_name, rows, vocab, "labels" if has_label else "no labels"), make=make,
                outputs=["dX_ptr", "loss_ptr"], inplace=["dX_ptr"], aliases={"X_ptr": "dX_ptr"},
                grid=_rows("n_rows"))


def _kl_div(dtype_name, rows, vocab, reduction):
    def make(torch):  # kl_div.py kldiv_forward_triton, log_target False
        dtype = _dtype(torch, dtype_name)
        y_pred = torch.randn(rows, vocab, device="cuda").log_softmax(-1).to(dtype)
        y_true = torch.randn(rows, vocab, device="cuda").softmax(-1).to(dtype)
        out = torch.zeros((rows, vocab) if reduction == 0 else (rows,), device="cuda", dtype=torch.float32)
        return dict(y_ptr=y_pred, y_stride=y_pred.stride(0), gt_ptr=y_true, gt_stride=y_true.stride(0),
                    loss_ptr=out, loss_stride=out.stride(0), n_cols=vocab, eps=1e-10, n_rows=rows)
    return dict(kernel="kl_div", module="liger_kernel.ops.kl_div", entry="_kldiv_kernel_forward",
                constexprs=dict(T=dtype_name, BLOCK_SIZE=16384, reduction=reduction, log_target=False, num_warps=16),
                shape="%s %dx%d reduction %d" % (dtype_name, rows, vocab, reduction), make=make,
                outputs=["loss_ptr"], grid=_rows("n_rows"))


def _tvd(dtype_name, rows, vocab, has_label, ignored=0.1):
    def make(torch):  # tvd.py tv_distance_forward_triton, reduction "batchmean"
        dtype = _dtype(torch, dtype_name)
        p = torch.randn(rows, vocab, device="cuda").softmax(-1).to(dtype)
        q = torch.randn(rows, vocab, device="cuda").softmax(-1).to(dtype)
        out = torch.zeros(rows, device="cuda", dtype=torch.float32)
        grads = torch.empty_like(p)
        if has_label:
            labels = torch.randint(0, vocab, (rows,), device="cuda", dtype=torch.int64)
            labels[torch.rand(rows, device="cuda") < ignored] = -100
            n_non_ignore = int((labels != -100).sum().item())
        else:
            labels = torch.empty(1, device="cuda")  # Liger's f32 dummy
            n_non_ignore = rows
        return dict(p_ptr=p, p_stride=p.stride(0), q_ptr=q, q_stride=q.stride(0), loss_ptr=out,
                    loss_stride=out.stride(0), grads_ptr=grads, grads_stride=grads.stride(0), label_ptr=labels,
                    n_cols=vocab, scale=1.0 / n_non_ignore, n_rows=rows)
    return dict(kernel="tvd", module="liger_kernel.ops.tvd", entry="_tv_distance_kernel",
                constexprs=dict(T=dtype_name, ignore_index=-100, BLOCK_SIZE=16384, HAS_LABEL=has_label, reduction=3,
                                num_warps=16),
                shape="%s %dx%d %s" % (dtype_name, rows, vocab, "labels" if has_label else "no labels"), make=make,
                outputs=["loss_ptr", "grads_ptr"], grid=_rows("n_rows"))


def _softmax(dtype_name, rows, cols, block, warps):
    def make(torch):  # softmax.py _softmax_forward (single block: n_cols <= BLOCK_SIZE)
        dtype = _dtype(torch, dtype_name)
        x = torch.randn(rows, cols, device="cuda", dtype=dtype)
        y = torch.empty_like(x)
        return dict(Y_ptr=y, Y_row_stride=y.stride(0), X_ptr=x, X_row_stride=x.stride(0), n_cols=cols, n_rows=rows)
    return dict(kernel="softmax", module="liger_kernel.ops.softmax", entry="_softmax_single_block_forward_kernel",
                constexprs=dict(T=dtype_name, BLOCK_SIZE=block, num_warps=warps),
                shape="%s %dx%d" % (dtype_name, rows, cols), make=make, outputs=["Y_ptr"], grid=_rows("n_rows"))


def _sparsemax(dtype_name, rows, cols, block, warps=4):
    def make(torch):  # sparsemax.py _sparsemax_forward over the last dim
        dtype = _dtype(torch, dtype_name)
        x = torch.randn(rows, cols, device="cuda", dtype=dtype)
        x_sorted = torch.sort(x.float(), dim=-1, descending=True).values
        out = torch.empty_like(x)
        return dict(x_ptr=x, x_stride_row=x.stride(0), sorted_x_ptr=x_sorted, sorted_x_stride_row=x_sorted.stride(0),
                    o_ptr=out, o_stride_row=out.stride(0), n_cols=cols, n_rows=rows)
    # num_warps is the kernel's own constexpr; Liger passes it as num_warps=, which is the launch option too.
    return dict(kernel="sparsemax", module="liger_kernel.ops.sparsemax", entry="_sparsemax_forward_kernel",
                constexprs=dict(T=dtype_name, BLOCK_SIZE=block, num_warps=warps),
                shape="%s %dx%d" % (dtype_name, rows, cols), make=make, outputs=["o_ptr"], grid=_rows("n_rows"))


def _dyt(dtype_name, rows, cols, block_n, warps):
    def make(torch):  # dyt.py liger_dyt_fwd, with beta
        dtype = _dtype(torch, dtype_name)
        x = torch.randn(rows, cols, device="cuda", dtype=dtype)
        alpha = torch.full((1,), 0.5, device="cuda", dtype=dtype)
        gamma = torch.randn(cols, device="cuda", dtype=dtype)
        beta = torch.randn(cols, device="cuda", dtype=dtype)
        return dict(X=x, Y=torch.empty_like(x), Alpha=alpha, Gamma=gamma, Beta=beta, M=rows)
    # The autotuner is bypassed with this config (BLOCK_N, num_stages, num_warps).
    return dict(kernel="dyt", module="liger_kernel.ops.dyt", entry="_dyt_fwd_kernel",
                constexprs=dict(T=dtype_name, HAVE_BETA=True, N=cols, BLOCK_N=block_n, num_stages=2, num_warps=warps),
                shape="%s %dx%d" % (dtype_name, rows, cols), make=make, outputs=["Y"],
                grid=lambda p: ((cols + block_n - 1) // block_n, p["M"]))


def _poly_norm(dtype_name, cols, block, warps, rows=32768):
    def make(torch):  # poly_norm.py poly_norm_forward, the module's parameters cast to the model's dtype
        dtype = _dtype(torch, dtype_name)
        X = torch.randn(rows, cols, device="cuda", dtype=dtype)
        W = torch.full((3,), 1.0 / 3.0, device="cuda", dtype=dtype)
        B = torch.tensor(1.0, device="cuda", dtype=dtype)
        Y = torch.empty_like(X)
        RSTD = torch.empty((rows, 3), device="cuda", dtype=torch.float32)
        return dict(Y_ptr=Y, Y_row_stride=Y.stride(0), X_ptr=X, X_row_stride=X.stride(0), W_ptr=W, B_ptr=B,
                    RSTD_ptr=RSTD, RSTD_row_stride=RSTD.stride(0), n_cols=cols, eps=1e-6, n_rows=rows)
    return dict(kernel="poly_norm", module="liger_kernel.ops.poly_norm", entry="_poly_norm_forward_kernel",
                constexprs=dict(T=dtype_name, BLOCK_SIZE=block, num_warps=warps),
                shape="%s %dx%d" % (dtype_name, rows, cols), make=make, outputs=["Y_ptr", "RSTD_ptr"],
                grid=_rows("n_rows"))


def _relu_squared(dtype_name, rows, cols, block, warps):
    def make(torch):  # relu_squared.py relu_squared_forward
        dtype = _dtype(torch, dtype_name)
        X = torch.randn(rows, cols, device="cuda", dtype=dtype)
        Y = torch.empty_like(X)
        return dict(Y_ptr=Y, Y_stride=Y.stride(-2), X_ptr=X, X_stride=X.stride(-2), n_rows=rows)
    return dict(kernel="relu_squared", module="liger_kernel.ops.relu_squared", entry="_relu_squared_forward_kernel",
                constexprs=dict(T=dtype_name, n_cols=cols, BLOCK_SIZE=block, num_warps=warps),
                shape="%s %dx%d" % (dtype_name, rows, cols), make=make, outputs=["Y_ptr"], grid=_rows("n_rows"))


def _modulated_rms_norm(dtype_name, affine, cols, block, warps, batch=8, tokens=4096):
    rows = batch * tokens

    def make(torch):  # modulated_rms_norm.py modulated_rms_norm_forward, llama casting, scale and shift (B, 1, D)
        dtype = _dtype(torch, dtype_name)
        X = torch.randn(rows, cols, device="cuda", dtype=dtype)
        W = torch.randn(cols, device="cuda", dtype=dtype) if affine else None
        scale = torch.randn(batch, cols, device="cuda", dtype=dtype)
        shift = torch.randn(batch, cols, device="cuda", dtype=dtype)
        Y = torch.empty_like(X)
        RSTD = torch.empty(rows, device="cuda", dtype=torch.float32)
        return dict(Y_ptr=Y, Y_row_stride=Y.stride(0), X_ptr=X, X_row_stride=X.stride(0), W_ptr=W,
                    W_row_stride=W.stride(0) if affine else 0, Scale_ptr=scale, Scale_row_stride=scale.stride(0),
                    Shift_ptr=shift, Shift_row_stride=shift.stride(0), RSTD_ptr=RSTD, RSTD_row_stride=RSTD.stride(0),
                    n_cols=cols, eps=1e-6, offset=0.0, n_rows=rows)
    return dict(kernel="modulated_rms_norm", module="liger_kernel.ops.modulated_rms_norm",
                entry="_modulated_rms_norm_forward_kernel",
                constexprs=dict(T=dtype_name, casting_mode=0, elementwise_affine=affine, has_shift=True,
                                rows_per_modulation=tokens, BLOCK_SIZE=block, num_warps=warps),
                shape="%s %dx%d %s" % (dtype_name, rows, cols, "affine" if affine else "no weight"), make=make,
                outputs=["Y_ptr", "RSTD_ptr"], grid=_rows("n_rows"))


CASES = [
    _rms_norm("bf16", 4096, 4096, 8),
    _rms_norm("f16", 8192, 8192, 16),
    _block_rms_norm("bf16", 0, 128),
    _block_rms_norm("f16", 1, 64),
    _layer_norm("bf16", 4096, 4096, 8),
    _layer_norm("f16", 2048, 2048, 8),
    # The case: Llama-3 8B heads, a prefill whose length is a multiple
    # of 16 (the JIT's aligned i32 build), and 70B heads with one that is not.
    _rope("bf16", 32, 8, 128, 32768),
    _rope("f16", 64, 8, 128, 20001),
    _qwen2vl_mrope("bf16", 28, 4, 32768),
    _qwen2vl_mrope("f16", 16, 2, 30001),
    _llama4_rope("bf16", 32768),
    _gated("swiglu", "liger_kernel.ops.swiglu", "_swiglu_forward_kernel", ("a_ptr", "b_ptr", "c_ptr"),
           "bf16", 14336, 16384, 16, 8192),
    _gated("swiglu", "liger_kernel.ops.swiglu", "_swiglu_forward_kernel", ("a_ptr", "b_ptr", "c_ptr"),
           "f16", 28672, 32768, 32, 4096),
    _gated("geglu", "liger_kernel.ops.geglu", "_geglu_tanh_forward_kernel", ("a", "b", "c"),
           "bf16", 16384, 16384, 16, 8192),
    _gated("geglu", "liger_kernel.ops.geglu", "_geglu_tanh_forward_kernel", ("a", "b", "c"),
           "f16", 24576, 32768, 32, 4096),
    _cross_entropy("bf16", 128256, 4096, "mean", True),
    _cross_entropy("f16", 32000, 8192, "none", False),
    _fused_add_rms_norm("bf16", 4096, 4096, 8),
    _fused_add_rms_norm("f16", 8192, 8192, 16),
    # SDXL at 1024 pixels: the first stage (320 channels at 128x128, looped
    # blocks of 65536) and the innermost (1280 channels at 16x16).
    _group_norm("bf16", 8, 320, 128),
    _group_norm("f16", 128, 1280, 16),
    _jsd("bf16", 4096, 32000, True),
    _jsd("f16", 2048, 128256, False),
    _kl_div("bf16", 4096, 32000, 3),
    _kl_div("f16", 2048, 32000, 0),
    _tvd("bf16", 4096, 32000, True),
    _tvd("f16", 2048, 128256, False),
    _softmax("bf16", 32768, 4096, 4096, 8),
    _softmax("f32", 4096, 32000, 32768, 32),
    _sparsemax("bf16", 65536, 1024, 1024),
    _sparsemax("f16", 131072, 500, 512),
    _sparsemax("bf16", 16384, 4000, 4096, 8),
    _dyt("bf16", 32768, 4096, 1024, 4),
    _dyt("f16", 16384, 8192, 4096, 16),
    _poly_norm("bf16", 4096, 4096, 8),
    _poly_norm("f16", 8192, 8192, 16),
    _relu_squared("bf16", 8192, 16384, 16384, 16),
    _relu_squared("f16", 4096, 24576, 32768, 32),
    _modulated_rms_norm("bf16", False, 3072, 4096, 8),
    _modulated_rms_norm("f16", True, 5120, 8192, 16),
]
