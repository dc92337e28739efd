# Never compiled: the golden test only generates code for it.
import triton
import triton.language as tl


@triton.jit
def rows_kernel(x, out, n, BLOCK: tl.constexpr, SPLIT: tl.constexpr):
    row = tl.program_id(0)
    part = tl.program_id(1)
    cols = part * BLOCK + tl.arange(0, BLOCK)
    mask = cols < n
    tl.store(out + row * n + cols, tl.load(x + row * n + cols, mask=mask), mask=mask)
