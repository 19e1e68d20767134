// ---- block_per_row.cu: CSR SpMV, one thread block per row ----

#include "common.cuh"
#include "epilogue.cuh"

extern "C" __global__ void SPARSERL_LAUNCH_BOUNDS ENTRY(
    const int rows, const int cols, const int nnz, const int* __restrict__ indptr,
    const int* __restrict__ indices, const T* __restrict__ values, const T* __restrict__ x,
    T* __restrict__ y SPARSERL_EP_PARAMS) {
    SPARSERL_EP_BEGIN
    (void)cols;
    (void)nnz;
    __shared__ ACC warp_sums[BLOCK / 32];
    const unsigned lane = threadIdx.x & 31u;
    const unsigned warp = threadIdx.x >> 5;
    // The row loop is uniform across the block, so the barriers are safe.
    // blockIdx.x, gridDim.x < 2^31, so r + gridDim.x fits in 32 bits unsigned.
    for (unsigned r = blockIdx.x; r < (unsigned)max(rows, 0); r += gridDim.x) {
        const int row = (int)r;
        const int start = indptr[row];
        const unsigned len = (unsigned)(indptr[row + 1] - start);
        ACC sum = row_dot<(unsigned)BLOCK, UNROLL>(indices + start, values + start, x,
                                                 threadIdx.x, len, 0);
        sum = group_reduce<32>(sum, SPARSERL_FULL_MASK);
        if (lane == 0) {
            warp_sums[warp] = sum;
        }
        __syncthreads();
        if (warp == 0) {
            ACC v = lane < BLOCK / 32 ? warp_sums[lane] : ACC(0);
            v = group_reduce<32>(v, SPARSERL_FULL_MASK);
            if (lane == 0) {
                store_y(y, row, (T)v);
            }
        }
        // warp_sums is reused by the next row.
        __syncthreads();
    }
}
