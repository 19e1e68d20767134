// ---- spmm_transpose.cu: column-major X and Y through row-major workspaces ----
//
// The transposed path of a row-warp or nnz-split variant (id suffix `.t`):
// the unit's kernels are compiled row-major (SPMM_LAYOUT 0) and these two
// entries move the dense matrices between the user's column-major X and Y
// and the row-major workspaces. Same ABI as every SpMM entry:
//   SPMM_TRANSPOSE 1 (`_tin`):  x = X, column-major `cols x n` at ldx;
//                               y = the row-major workspace, ld ldy.
//   SPMM_TRANSPOSE 2 (`_tout`): x = the row-major workspace `rows x n` at ldx
//                               (the plain product A X);
//                               y = Y, column-major at ldy:
//                               Y = alpha x + beta Y (+ the epilogue).
// One block of 256 threads per 32 x 32 tile through shared memory (padded
// rows: no bank conflicts), grid-stride over the tiles; both sides coalesced.

#include "spmm_common.cuh"

#if !defined(SPMM_TRANSPOSE) || (SPMM_TRANSPOSE != 1 && SPMM_TRANSPOSE != 2)
#error "spmm_transpose.cu needs SPMM_TRANSPOSE 1 (in) or 2 (out)"
#endif

extern "C" __global__ void __launch_bounds__(256) ENTRY(
    const int rows, const int cols, const int nnz, const int n, const int* __restrict__ indptr,
    const int* __restrict__ indices, const T* __restrict__ values, const T* __restrict__ x,
    const int ldx, T* __restrict__ y, const int ldy, const T alpha, const T beta,
    const T* __restrict__ bias) {
    (void)nnz;
    (void)indptr;
    (void)indices;
    (void)values;
    __shared__ T tile[32][33];
#if SPMM_TRANSPOSE == 1
    (void)rows;
    (void)alpha;
    (void)beta;
    (void)bias;
    const int r = cols;
#else
    (void)cols;
    const int r = rows;
#endif
    if (n <= 0 || r <= 0) {
        return;
    }
    const int tx = (int)(threadIdx.x & 31u);
    const int ty = (int)(threadIdx.x >> 5);
    const long long tiles_c = (n + 31) / 32;
    const long long tiles = (long long)((r + 31) / 32) * tiles_c;
    for (long long t = blockIdx.x; t < tiles; t += gridDim.x) {
        const int i0 = (int)(t / tiles_c) * 32;
        const int j0 = (int)(t % tiles_c) * 32;
#if SPMM_TRANSPOSE == 1
        // Column-major reads: consecutive lanes on consecutive rows.
        for (int k = ty; k < 32; k += 8) {
            const int i = i0 + tx, j = j0 + k;
            if (i < r && j < n) {
                tile[k][tx] = x[(long long)j * ldx + i];
            }
        }
        __syncthreads();
        // Row-major writes: consecutive lanes on consecutive columns.
        for (int k = ty; k < 32; k += 8) {
            const int i = i0 + k, j = j0 + tx;
            if (i < r && j < n) {
                y[(long long)i * ldy + j] = tile[tx][k];
            }
        }
#else
        for (int k = ty; k < 32; k += 8) {
            const int i = i0 + k, j = j0 + tx;
            if (i < r && j < n) {
                tile[tx][k] = x[(long long)i * ldx + j];
            }
        }
        __syncthreads();
        for (int k = ty; k < 32; k += 8) {
            const int i = i0 + tx, j = j0 + k;
            if (i < r && j < n) {
                const long long at = (long long)j * ldy + i;
                y[at] = spmm_final<SPMM_EPILOGUE>((SPMM_ACC)tile[k][tx], y, at, alpha, beta, bias,
                                                  j);
            }
        }
#endif
        __syncthreads();
    }
}
