"""Row softmax in Triton.

Triton counterpart of templates/softmax.cuh (manifests/softmax.yaml).

    softmax(inp, out, rows, cols, in_row_stride, out_row_stride, BLOCK: constexpr)

  inp   *T  row r starts at inp + r * in_row_stride; columns contiguous
  out   *T  row r starts at out + r * out_row_stride
  rows, cols, in_row_stride, out_row_stride  i64 (strides in elements)
  BLOCK constexpr int: columns per tile, a power of two (T = f32, f16, bf16)

Launch: grid = (rows,): one program per row (programs >= rows return);
num_warps about BLOCK / 512 (4 to 32).  (A grid-stride loop over rows
made ptxas spill the 32768-column tile, so there is none.)

out[r, c] = exp(in[r, c] - max_r) / sum_c' exp(in[r, c'] - max_r), fp32 math,
rounded once to T.  Like torch.softmax: -inf entries give 0, a row of only
-inf (or with +inf or NaN) gives NaN.

cols <= BLOCK: the row is one tile held in registers, read once, written once.
cols > BLOCK:  two passes over min(BLOCK, 8192)-wide chunks: an online max/sum kept per
lane (one exp per element: the lane's running max moves or the element is
folded in), reduced across the program at the end, then a second pass that
re-reads the row (mostly from L2) and writes it.  Full chunks are unmasked
(16-byte accesses when the row starts are 16-byte aligned), the last is
masked.  In place (out == inp, same strides) is allowed.
"""
import triton
import triton.language as tl

LOG2E: tl.constexpr = tl.constexpr(1.4426950408889634)
# Chunk width of the two-pass path: wider chunks only cost registers.
MAX_CHUNK: tl.constexpr = tl.constexpr(8192)


@triton.jit
def _online_fold(mv, sv, x):
    # Per lane: state (mv, sv) = (running max, sum of exp(v - mv)); folds x
    # in with one exp.  x = -inf contributes nothing (also when mv = -inf).
    d = x - mv
    e = tl.where(x == float("-inf"), 0.0, tl.exp2(-tl.abs(d) * LOG2E))
    sv = tl.where(x > mv, sv * e + 1.0, sv + e)
    mv = tl.maximum(mv, x)
    return mv, sv


@triton.jit
def _online_finish(mv, sv):
    # (max, sum of exp(x - safe max), safe max) of the row from the lanes' states.
    m = tl.max(mv, 0)
    ms = tl.where(m == float("-inf"), 0.0, m)
    s = tl.sum(sv * tl.exp2((mv - ms) * LOG2E), 0)
    return m, s


@triton.jit
def softmax(inp, out, rows, cols, in_row_stride, out_row_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    dtype: tl.constexpr = out.dtype.element_ty
    if row < rows:
        xr = inp + tl.cast(row, tl.int64) * in_row_stride
        yr = out + tl.cast(row, tl.int64) * out_row_stride
        if cols == BLOCK:
            # The common case of a full tile: no masks (fewer registers).
            x = tl.load(xr + offs).to(tl.float32)
            m = tl.max(x, 0)
            e = tl.exp2((x - m) * LOG2E)
            inv = 1.0 / tl.sum(e, 0)
            tl.store(yr + offs, (e * inv).to(dtype))
        elif cols <= BLOCK:
            msk = offs < cols
            x = tl.load(xr + offs, mask=msk, other=float("-inf")).to(tl.float32)
            m = tl.max(x, 0)
            e = tl.exp2((x - m) * LOG2E)
            inv = 1.0 / tl.sum(e, 0)
            tl.store(yr + offs, (e * inv).to(dtype), mask=msk)
        else:
            CHUNK: tl.constexpr = min(BLOCK, MAX_CHUNK)
            co = tl.arange(0, CHUNK)
            mv = tl.full([CHUNK], float("-inf"), tl.float32)
            sv = tl.zeros([CHUNK], tl.float32)
            body = (cols // CHUNK) * CHUNK
            for c in range(0, body, CHUNK):
                x = tl.load(xr + c + co).to(tl.float32)
                mv, sv = _online_fold(mv, sv, x)
            if body < cols:
                msk = co < cols - body
                x = tl.load(xr + body + co, mask=msk, other=float("-inf")).to(tl.float32)
                mv, sv = _online_fold(mv, sv, x)
            m, s = _online_finish(mv, sv)
            inv = 1.0 / s
            for c in range(0, body, CHUNK):
                x = tl.load(xr + c + co).to(tl.float32)
                tl.store(yr + c + co, (tl.exp2((x - m) * LOG2E) * inv).to(dtype))
            if body < cols:
                msk = co < cols - body
                x = tl.load(xr + body + co, mask=msk, other=float("-inf")).to(tl.float32)
                tl.store(yr + body + co, (tl.exp2((x - m) * LOG2E) * inv).to(dtype), mask=msk)
