// ---- thread_per_row.cu: CSR SpMV, one thread per row ----

#include "common.cuh"
#include "epilogue.cuh"

extern "C" __global__ void SPARSERL_LAUNCH_BOUNDS ENTRY(
    const int rows, const int cols, const int nnz, const int* __restrict__ indptr,
    const int* __restrict__ indices, const T* __restrict__ values, const T* __restrict__ x,
    T* __restrict__ y SPARSERL_EP_PARAMS) {
    SPARSERL_EP_BEGIN
    (void)cols;
    (void)nnz;
    const long long first = sparserl_global_thread();
    if (first >= rows) {
        return;
    }
    const unsigned stride = sparserl_stride(sparserl_grid_threads(), rows);
    for (unsigned r = (unsigned)first; r < (unsigned)rows; r += stride) {
        const int row = (int)r;
        const int start = indptr[row];
        const unsigned len = (unsigned)(indptr[row + 1] - start);
        const ACC sum = row_dot<1u, UNROLL>(indices + start, values + start, x, 0u, len, 0);
        store_y(y, row, (T)sum);
    }
}
