// Never compiled: the golden test only generates code for it.
template <int VEC, typename T, bool WIDE>
__device__ __forceinline__ void norm(const T* x, T* out, uint32_t d) {}
