"""Cross-entropy forward in Triton.

Triton counterpart of templates/cross_entropy.cuh (manifests/cross_entropy.yaml).

    cross_entropy_fwd(logits, targets, loss, rows, vocab, row_stride, ignore_index,
                      BLOCK: constexpr)

  logits        *T   row r starts at logits + r * row_stride (T = f32, f16, bf16);
                     the vocab dimension is contiguous
  targets       *i64 [rows]
  loss          *f32 [rows]
  rows, vocab, row_stride (elements), ignore_index   i64
  BLOCK         constexpr int: vocab chunk per step, a power of two

Launch: grid = (rows,): one program per row (programs >= rows return);
num_warps 4 to 16 (BLOCK / 512 is a good start).

loss[r] = logsumexp(logits[r, :]) - logits[r, targets[r]] in fp32;
        = 0    where targets[r] == ignore_index (engines pass -100);
        = NaN  where the target is otherwise outside [0, vocab) (nothing out
               of bounds is read).
Ignored rows are not read.  Other rows are read once: an online
logsumexp over BLOCK-wide chunks kept per lane (one exp per element),
reduced across the program at the end.  Full chunks are unmasked (16-byte
loads when the row starts are 16-byte aligned), the last is masked.
"""
import triton
import triton.language as tl

LOG2E: tl.constexpr = tl.constexpr(1.4426950408889634)
LN2: tl.constexpr = tl.constexpr(0.6931471805599453)


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
def cross_entropy_fwd(logits, targets, loss, rows, vocab, row_stride, ignore_index, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    if row < rows:
        tgt = tl.load(targets + row)
        if tgt == ignore_index:
            tl.store(loss + row, 0.0)
        else:
            xr = logits + tl.cast(row, tl.int64) * row_stride
            ok = (tgt >= 0) & (tgt < vocab)
            # Issued before the row so that its latency hides behind it.
            xt = tl.load(xr + tl.where(ok, tgt, 0), mask=ok, other=0.0).to(tl.float32)
            mv = tl.full([BLOCK], float("-inf"), tl.float32)
            sv = tl.zeros([BLOCK], tl.float32)
            body = (vocab // BLOCK) * BLOCK
            for c in range(0, body, BLOCK):
                x = tl.load(xr + c + offs).to(tl.float32)
                mv, sv = _online_fold(mv, sv, x)
            if body < vocab:
                msk = offs < vocab - body
                x = tl.load(xr + body + offs, mask=msk, other=float("-inf")).to(tl.float32)
                mv, sv = _online_fold(mv, sv, x)
            m = tl.max(mv, 0)
            ms = tl.where(m == float("-inf"), 0.0, m)
            s = tl.sum(sv * tl.exp2((mv - ms) * LOG2E), 0)
            lse = ms + tl.log2(s) * LN2
            tl.store(loss + row, tl.where(ok, lse - xt, float("nan")))
