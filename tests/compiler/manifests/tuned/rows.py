# The tuned package's Triton kernel (rows.yaml): out[i] = 2 * x[i].  The
# golden test only generates code for it; tests/e2e/tuning_tables.sh builds
# it.
import triton
import triton.language as tl


@triton.jit
def scale_rows(x, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, 2 * tl.load(x + offs, mask=mask), mask=mask)
