// Activations for FlashInfer's act_and_mul_kernel, written for kpack's
// corpus: the kernel takes the activation as a template argument, a
// function `float (*)(const float&)`, and FlashInfer's Python package
// generates these at run time.  Here they are plain __device__ functions,
// so that kpack instantiates the unchanged kernel with each ahead of time.
#pragma once

#include <flashinfer/activation.cuh>

namespace kpack_corpus {

// SiLU (x * sigmoid(x)), in fp32.
__device__ __forceinline__ float silu(const float& x) { return x / (1.0f + __expf(-x)); }

// GELU, the exact (erf) form, in fp32.
__device__ __forceinline__ float gelu(const float& x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); }

}  // namespace kpack_corpus
