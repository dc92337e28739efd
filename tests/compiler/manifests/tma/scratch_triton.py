"""x += 1 over an M x N row-major tensor through a device-side tensor
descriptor, which Triton builds in global scratch memory (128 bytes per
program)."""
import triton
import triton.language as tl


@triton.jit
def add_one(x, M, N, stride, BM: tl.constexpr, BN: tl.constexpr):
    desc = tl.make_tensor_descriptor(x, shape=[M, N], strides=[stride, 1], block_shape=[BM, BN])
    row = tl.program_id(0) * BM
    col = tl.program_id(1) * BN
    desc.store([row, col], desc.load([row, col]) + 1)
