// ---- group_per_row.cu: CSR SpMV, LANES lanes per row, shuffle reduction ----
//
// One template for two index layouts. By default `indices` holds 32-bit
// columns. The narrow strategy's prelude (narrow.cu) defines
// SPARSERL_GROUP_INDEX_T as short and SPARSERL_GROUP_BASE(row) as row before
// this fragment: each index is then the 16-bit offset col - row. Both macros
// are undefined at the end, so every entry of a module states its own.

#include "common.cuh"
#include "epilogue.cuh"

#ifndef SPARSERL_GROUP_INDEX_T
#define SPARSERL_GROUP_INDEX_T int
#define SPARSERL_GROUP_BASE(row) 0
#endif

#if LANES < 2 || LANES > 32 || (LANES & (LANES - 1)) != 0
#error "LANES must be a power of two in 2..=32"
#endif

extern "C" __global__ void SPARSERL_LAUNCH_BOUNDS ENTRY(
    const int rows, const int cols, const int nnz, const int* __restrict__ indptr,
    const SPARSERL_GROUP_INDEX_T* __restrict__ indices, const T* __restrict__ values,
    const T* __restrict__ x, T* __restrict__ y SPARSERL_EP_PARAMS) {
    SPARSERL_EP_BEGIN
    (void)cols;
    (void)nnz;
    // Groups are LANES-aligned inside a warp (BLOCK is a multiple of 32), so
    // every lane of a group sees the same row and takes the same branches.
    const long long tid = sparserl_global_thread();
    const unsigned lane = (unsigned)(tid & (LANES - 1));
    const long long first = tid / LANES;
    if (first >= rows) {
        return;  // uniform across the group: no shuffle partner is left behind
    }
    const unsigned stride = sparserl_stride(sparserl_grid_threads() / LANES, rows);
    const unsigned mask = group_mask<LANES>();
    for (unsigned r = (unsigned)first; r < (unsigned)rows; r += stride) {
        const int row = (int)r;
        const int start = indptr[row];
        const unsigned len = (unsigned)(indptr[row + 1] - start);
        ACC sum = row_dot<(unsigned)LANES, UNROLL>(indices + start, values + start, x, lane, len,
                                                   SPARSERL_GROUP_BASE(row));
        sum = group_reduce<LANES>(sum, mask);
        if (lane == 0) {
            store_y(y, row, (T)sum);
        }
    }
}

#undef SPARSERL_GROUP_INDEX_T
#undef SPARSERL_GROUP_BASE
