// attrs.cuh - kernels whose outputs show which launch attributes a launch
// really had, for the kpack package tests/gpu/attrs/package.yaml (sm_90):
//
//   cluster_fixed<N>    __cluster_dims__(2, 1, 1): the cubin's cluster, which
//                       the driver applies to a plain launch;
//   cluster_runtime<C>  no cluster in the source: the launch sets one;
//   grid_reduce<BLOCK>  a grid-wide barrier, which needs a cooperative launch.
//
// Written for kpack's GPU checks (attrs_check.cu instantiates the same
// templates to launch them directly).
#pragma once

#include <cooperative_groups.h>

namespace kpack_attrs {
namespace detail {

// Block b writes out[4b .. 4b+3] = {blocks in its cluster, its rank there,
// tag, the blockIdx.x that the block of the next rank keeps in its shared
// memory}.  The last one reads distributed shared memory, which only a real
// cluster has: a block outside one (or in another cluster) cannot be reached.
__device__ __forceinline__ void report_cluster(int* out, int tag) {
  namespace cg = cooperative_groups;
  __shared__ int own_index;
  const cg::cluster_group cluster = cg::this_cluster();
  if (threadIdx.x == 0) own_index = static_cast<int>(blockIdx.x);
  cluster.sync();  // every block of the cluster has written own_index
  if (threadIdx.x == 0) {
    const unsigned blocks = cluster.num_blocks();
    const unsigned rank = cluster.block_rank();
    const int* peer = cluster.map_shared_rank(&own_index, static_cast<int>((rank + 1) % blocks));
    int* o = out + 4 * static_cast<size_t>(blockIdx.x);
    o[0] = static_cast<int>(blocks);
    o[1] = static_cast<int>(rank);
    o[2] = tag;
    o[3] = *peer;
  }
  cluster.sync();  // no block exits while another may still read its shared memory
}

// The sum of s[0 .. BLOCK) into s[0]; every thread of the block calls it.
template <int BLOCK>
__device__ __forceinline__ void block_sum(int* s) {
  __syncthreads();
#pragma unroll
  for (int width = BLOCK / 2; width > 0; width /= 2) {
    if (static_cast<int>(threadIdx.x) < width) s[threadIdx.x] += s[threadIdx.x + width];
    __syncthreads();
  }
}

}  // namespace detail

// The cluster is the kernel's own: 2 blocks along x.  The grid must be even.
template <int N>
__global__ void __cluster_dims__(2, 1, 1) cluster_fixed(int* out) {
  detail::report_cluster(out, N);
}

// The cluster is the launch's (C blocks along x, C dividing the grid); C only
// names the instantiation and is written out.
template <int C>
__global__ void cluster_runtime(int* out) {
  detail::report_cluster(out, C);
}

// Two phases across the whole grid: block b sums its slice of in[0 .. n)
// (ceil(n / gridDim.x) elements from b * that) into partials[b]; after
// this_grid().sync(), block 0 sums partials[0 .. gridDim.x) into out[0].
// out[1] = 1 says the grid could synchronize (this_grid().is_valid(): the
// driver gave the launch a grid workspace); without one the kernel writes
// out[1] = 0 and nothing else, rather than trapping.  That is not proof of
// a cooperative launch: an H200 with a CUDA 13.0 driver gives a plain
// launch of this kernel a workspace too.  What only a cooperative launch
// has is the co-residency guarantee, which the driver enforces by refusing
// a grid larger than fits (CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE).  The
// caller keeps |sum| below 2^31 (no overflow anywhere).
template <int BLOCK>
__global__ void __launch_bounds__(BLOCK) grid_reduce(const int* in, int n, int* partials, int* out) {
  namespace cg = cooperative_groups;
  const cg::grid_group grid = cg::this_grid();
  if (!grid.is_valid()) {
    if (blockIdx.x == 0 && threadIdx.x == 0) out[1] = 0;
    return;
  }
  __shared__ int s[BLOCK];
  const long long chunk = (static_cast<long long>(n) + gridDim.x - 1) / gridDim.x;
  const long long begin = chunk * blockIdx.x;
  const long long end = begin + chunk < n ? begin + chunk : n;
  int sum = 0;
  for (long long i = begin + threadIdx.x; i < end; i += BLOCK) sum += in[i];
  s[threadIdx.x] = sum;
  detail::block_sum<BLOCK>(s);
  if (threadIdx.x == 0) partials[blockIdx.x] = s[0];

  grid.sync();  // every block's partial is written and visible

  if (blockIdx.x != 0) return;
  int total = 0;
  for (unsigned b = threadIdx.x; b < gridDim.x; b += BLOCK) total += partials[b];
  __syncthreads();  // s[0] was read above
  s[threadIdx.x] = total;
  detail::block_sum<BLOCK>(s);
  if (threadIdx.x == 0) {
    out[0] = s[0];
    out[1] = 1;
  }
}

}  // namespace kpack_attrs
