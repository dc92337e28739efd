template <int BLOCK>
__device__ __forceinline__ void persistent(const float* x, int64_t n) {}
template <int V>
__device__ __forceinline__ void check(int op, int64_t a, int64_t b, int64_t expect, bool flag) {}
