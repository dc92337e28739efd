template <typename T, int BLOCK>
__device__ __forceinline__ void scale_rows(const T* x, T* out, float alpha, int rows, int64_t cols) {}
