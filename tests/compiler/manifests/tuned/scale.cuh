// Never compiled: the golden test only generates code for it.
template <typename T, int BLOCK, bool WIDE>
__device__ __forceinline__ void scale(const T* x, T* out, uint32_t n) {}
