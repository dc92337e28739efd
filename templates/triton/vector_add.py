"""vector_add in Triton: out[i] = x[i] + y[i], 0 <= i < n.

Triton counterpart of templates/vector_add.cuh (manifests/vector_add.yaml).

    vector_add(x, y, out, n, BLOCK: constexpr)

  x, y  *T   (T = f32, f16 or bf16: the element type comes from the pointers)
  out   *T
  n     i64  (the JIT passes i32 when n fits; both work)
  BLOCK constexpr int: elements per program, a power of two

Launch: grid = (cdiv(n, BLOCK),), num_warps chosen by the caller (4 for
BLOCK <= 4096 elements of 16 bits, 8 above; each thread then owns
BLOCK / (32 * num_warps) elements, i.e. several 16-byte vectors per input).

The sum is done in fp32 and rounded once (for f16 and bf16 this is bit-
identical to a native add).  In place (out == x or out == y) is allowed:
every element is read before it is written, by the same thread.

Every program but the last takes an unmasked path, so its loads and stores
are 16-byte vectors as soon as the pointers are known to be 16-byte aligned
(the JIT specializes on that; an AOT build must give the pointers a
divisibility-16 hint), whatever n is.  The last program masks.  Offsets are
64-bit at the program level (pid * BLOCK), 32-bit inside a program.
"""
import triton
import triton.language as tl


@triton.jit
def vector_add(x, y, out, n, BLOCK: tl.constexpr):
    start = tl.program_id(0).to(tl.int64) * BLOCK
    offs = tl.arange(0, BLOCK)
    xb = x + start
    yb = y + start
    ob = out + start
    if start + BLOCK <= n:
        a = tl.load(xb + offs).to(tl.float32)
        b = tl.load(yb + offs).to(tl.float32)
        tl.store(ob + offs, (a + b).to(out.dtype.element_ty))
    else:
        m = offs < (n - start)
        a = tl.load(xb + offs, mask=m, other=0.0).to(tl.float32)
        b = tl.load(yb + offs, mask=m, other=0.0).to(tl.float32)
        tl.store(ob + offs, (a + b).to(out.dtype.element_ty), mask=m)
