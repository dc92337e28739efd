// Never compiled: the golden test only generates code for it.
template <int TILE>
__device__ __forceinline__ void pick(float* out, int32_t len) {}
