// ---- sell.cu: SELL-C-sigma SpMV (C = 32), one thread per row slot ----
//
// Reads the matrix's SELL-C-sigma layout (see sparserl_rt::sell) through
// the common ABI: `indptr` holds the slice pointers, `indices` and `values`
// the stored columns and values (slice by slice, column-major: element j of
// slot `lane` of slice s sits at slice_ptr[s] + 32 j + lane, so a warp loads
// 32 consecutive elements per step), `nnz` the number of row slots, and the
// appended `meta` = [row_of[slots], slot_len[slots]]. Each thread walks its
// own row's length, so the padding is never read.

#include "common.cuh"
#include "epilogue.cuh"

#ifndef SPARSERL_SELL_C
#define SPARSERL_SELL_C 32
#endif

extern "C" __global__ void SPARSERL_LAUNCH_BOUNDS ENTRY(
    const int rows, const int cols, const int slots, const int* __restrict__ slice_ptr,
    const int* __restrict__ indices, const T* __restrict__ values, const T* __restrict__ x,
    T* __restrict__ y, const int* __restrict__ meta SPARSERL_EP_PARAMS) {
    SPARSERL_EP_BEGIN
    (void)rows;
    (void)cols;
    const long long first = sparserl_global_thread();
    if (first >= slots) {
        return;
    }
    const unsigned stride = sparserl_stride(sparserl_grid_threads(), slots);
    for (unsigned t = (unsigned)first; t < (unsigned)slots; t += stride) {
        const int row = meta[t];
        // len * 32 <= the stored elements <= INT_MAX (checked at upload).
        const unsigned len = (unsigned)meta[slots + t] * (unsigned)SPARSERL_SELL_C;
        const int base = slice_ptr[t / SPARSERL_SELL_C] + (int)(t % SPARSERL_SELL_C);
        const ACC sum = row_dot<(unsigned)SPARSERL_SELL_C, UNROLL>(indices + base, values + base,
                                                                   x, 0u, len, 0);
        if (row >= 0) {
            store_y(y, row, (T)sum);
        }
    }
}
