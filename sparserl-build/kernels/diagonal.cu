// ---- diagonal.cu: DIA SpMV, one thread per row ----
//
// Reads the matrix's diagonal layout (see sparserl_rt::dia) through the common
// ABI: `nnz` is the number of diagonals (at most 64), `indptr` the ascending
// diagonal offsets (col - row), `values` the diagonal-major values (row r of
// diagonal d at d * rows + r, zero padded); `indices` is not read. No column
// indices or row pointers are loaded and consecutive threads read consecutive
// values of each diagonal. Columns outside [0, cols) are skipped, so padding
// never reads x out of bounds and a non-finite x entry is never multiplied by
// a padding zero. The diagonal loop is unrolled UNROLL times with independent
// accumulators, the last group predicated.

#include "common.cuh"
#include "epilogue.cuh"

#define SPARSERL_MAX_DIAGONALS 64

extern "C" __global__ void SPARSERL_LAUNCH_BOUNDS ENTRY(
    const int rows, const int cols, const int nnz, const int* __restrict__ indptr,
    const int* __restrict__ indices, const T* __restrict__ values, const T* __restrict__ x,
    T* __restrict__ y SPARSERL_EP_PARAMS) {
    SPARSERL_EP_BEGIN
    (void)indices;
    __shared__ int offsets[SPARSERL_MAX_DIAGONALS];
    const int ndiag = nnz < SPARSERL_MAX_DIAGONALS ? nnz : SPARSERL_MAX_DIAGONALS;
    for (int d = threadIdx.x; d < ndiag; d += BLOCK) {
        offsets[d] = indptr[d];
    }
    __syncthreads();
    const long long first = sparserl_global_thread();
    if (first >= rows) {
        return;
    }
    const unsigned stride = sparserl_stride(sparserl_grid_threads(), rows);
    const unsigned ucols = (unsigned)cols;
    for (unsigned r = (unsigned)first; r < (unsigned)rows; r += stride) {
        ACC acc[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            acc[u] = ACC(0);
        }
        const T* __restrict__ v = values + r;
        // Groups of UNROLL diagonals; the last group is predicated (ndiag is
        // uniform, so no divergence) so that all its loads are in flight
        // together even when there are fewer diagonals than UNROLL.
        for (int d = 0; d < ndiag; d += UNROLL) {
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) {
                if (d + u < ndiag) {
                    // r + offset in [-(2^31), 2^32): compare as unsigned after a
                    // 64-bit sum so negative columns wrap above cols.
                    const long long c = (long long)r + offsets[d + u];
                    const T a = v[(size_t)(d + u) * (size_t)rows];
                    if ((unsigned long long)c < (unsigned long long)ucols) {
                        acc[u] += (ACC)a * (ACC)load_x(x, (int)c);
                    }
                }
            }
        }
#pragma unroll
        for (int u = 1; u < UNROLL; ++u) {
            acc[0] += acc[u];
        }
        store_y(y, (int)r, (T)acc[0]);
    }
}
