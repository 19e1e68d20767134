// ---- spmm_col_tile.cu: CSR SpMM, a register tile of TILE_K columns per row ----
//
// A work item is one row and one tile of TILE_K consecutive columns; GROUP
// lanes share it (GROUP = 1: a thread per item, as thread-per-row SpMV).
// The lanes split the row's nonzeros (stride GROUP), each keeping TILE_K
// accumulators, so the row's (column, value) pairs are read once per tile
// instead of once per column; the partial tiles are summed with a butterfly
// of shuffles and lane j stores columns j, j + GROUP, ... of the tile. With
// column-major X and Y consecutive items are consecutive rows of one tile
// (coalesced stores, the X gathers of one column together); with row-major
// they are consecutive tiles of one row.

#include "spmm_common.cuh"

#if TILE_K != 1 && TILE_K != 2 && TILE_K != 4 && TILE_K != 8 && TILE_K != 16
#error "TILE_K must be 1, 2, 4, 8 or 16"
#endif

#ifndef SPARSERL_SPMM_COL_TILE_BODY
#define SPARSERL_SPMM_COL_TILE_BODY

template <bool FULL>
__device__ __forceinline__ void spmm_ct_fma(T* blk, const T* __restrict__ x, int ldx, int c,
                                            T v, int c0, int n) {
#pragma unroll
    for (int q = 0; q < TILE_K; ++q) {
        if (FULL || c0 + q < n) {
            blk[q] += v * spmm_load_x(x + spmm_at(c, c0 + q, ldx));
        }
    }
}

// acc += blk, then blk = 0 (TILE_K each).
__device__ __forceinline__ void spmm_ct_blk_add(SPMM_ACC* acc, T* blk) {
#pragma unroll
    for (int q = 0; q < TILE_K; ++q) {
        acc[q] += (SPMM_ACC)blk[q];
        blk[q] = (T)0;
    }
}

// The lane's nonzeros k, k + GROUP, .. < end of a row into acc: their
// products summed in T, the block sum added into the double accumulators
// whenever it holds SPMM_BLOCK_TERMS products or the next batch would pass
// that (so a block never holds more), and at the end.
template <bool FULL>
__device__ __forceinline__ void spmm_ct_row(SPMM_ACC* acc, const int* __restrict__ indices,
                                            const T* __restrict__ values, const T* __restrict__ x,
                                            int ldx, int k, int end, int c0, int n) {
    constexpr int U = UNROLL;
    T blk[TILE_K];
#pragma unroll
    for (int q = 0; q < TILE_K; ++q) {
        blk[q] = (T)0;
    }
    int terms = 0;
    for (; k + (U - 1) * GROUP < end; k += U * GROUP) {
        int c[U];
        T v[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            c[u] = indices[k + u * GROUP];
            v[u] = values[k + u * GROUP];
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
            spmm_ct_fma<FULL>(blk, x, ldx, c[u], v[u], c0, n);
        }
        terms += U;
        if (terms > SPMM_BLOCK_TERMS - U) {
            spmm_ct_blk_add(acc, blk);
            terms = 0;
        }
    }
    for (; k < end; k += GROUP) {
        spmm_ct_fma<FULL>(blk, x, ldx, indices[k], values[k], c0, n);
        if (++terms == SPMM_BLOCK_TERMS) {
            spmm_ct_blk_add(acc, blk);
            terms = 0;
        }
    }
    spmm_ct_blk_add(acc, blk);
}

template <int N_CT, int EPI>
__device__ __forceinline__ void spmm_col_tile(const int rows, const int n_rt,
                                              const int* __restrict__ indptr,
                                              const int* __restrict__ indices,
                                              const T* __restrict__ values, const T* __restrict__ x,
                                              const int ldx, T* __restrict__ y, const int ldy,
                                              const T alpha, const T beta,
                                              const T* __restrict__ bias) {
    const int n = N_CT > 0 ? N_CT : n_rt;
    const long long tiles = ((long long)n + TILE_K - 1) / TILE_K;
    const long long work = (long long)rows * tiles;
    const long long tid = (long long)blockIdx.x * BLOCK + threadIdx.x;
    const int lane = (int)(tid & (GROUP - 1));
    const unsigned mask = spmm_group_mask<GROUP>();
    const long long stride = (long long)gridDim.x * (BLOCK / GROUP);
    for (long long w = tid / GROUP; w < work; w += stride) {
#if SPMM_LAYOUT == 1
        const int row = (int)(w % rows);
        const int c0 = (int)(w / rows) * TILE_K;
#else
        const int row = (int)(w / tiles);
        const int c0 = (int)(w % tiles) * TILE_K;
#endif
        const int end = indptr[row + 1];
        SPMM_ACC acc[TILE_K];
#pragma unroll
        for (int q = 0; q < TILE_K; ++q) {
            acc[q] = (SPMM_ACC)0;
        }
        if (c0 + TILE_K <= n) {
            spmm_ct_row<true>(acc, indices, values, x, ldx, indptr[row] + lane, end, c0, n);
        } else {
            spmm_ct_row<false>(acc, indices, values, x, ldx, indptr[row] + lane, end, c0, n);
        }
#pragma unroll
        for (int q = 0; q < TILE_K; ++q) {
#pragma unroll
            for (int off = GROUP / 2; off > 0; off >>= 1) {
                acc[q] += __shfl_xor_sync(mask, acc[q], off, GROUP);
            }
        }
#pragma unroll
        for (int q = 0; q < TILE_K; ++q) {
            if (q % GROUP == lane && c0 + q < n) {
                const long long at = spmm_at(row, c0 + q, ldy);
                y[at] = spmm_final<EPI>(acc[q], y, at, alpha, beta, bias, c0 + q);
            }
        }
    }
}

#endif  // SPARSERL_SPMM_COL_TILE_BODY

extern "C" __global__ void __launch_bounds__(BLOCK) ENTRY(
    const int rows, const int cols, const int nnz, const int n, const int* __restrict__ indptr,
    const int* __restrict__ indices, const T* __restrict__ values, const T* __restrict__ x,
    const int ldx, T* __restrict__ y, const int ldy, const T alpha, const T beta,
    const T* __restrict__ bias) {
    (void)cols;
    (void)nnz;
    if (n <= 0 || (SPMM_N > 0 && n != SPMM_N)) {
        return;
    }
    spmm_col_tile<SPMM_N, SPMM_EPILOGUE>(rows, n, indptr, indices, values, x, ldx, y, ldy, alpha,
                                         beta, bias);
}
