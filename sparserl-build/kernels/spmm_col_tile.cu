// ---- spmm_col_tile.cu: CSR SpMM, a register tile of TILE_K columns per row ----
//
// A work item is one row and one tile of TILE_K consecutive columns; GROUP
// lanes share it (GROUP = 1: a thread per item, as thread-per-row SpMV).
// The lanes split the row's nonzeros (stride GROUP), each keeping TILE_K
// accumulators, so the row's (column, value) pairs are read once per tile
// instead of once per column (row-major X: loads of up to 4 columns when X
// is aligned); the partial tiles are summed with a reduce-scatter of
// shuffles (each lane ends with TILE_K / GROUP columns, or shares one). With
// column-major X and Y consecutive items are consecutive rows of one tile
// (coalesced stores, the X gathers of one column together); with row-major
// they are consecutive tiles of one row.

#include "spmm_common.cuh"

#if TILE_K != 1 && TILE_K != 2 && TILE_K != 4 && TILE_K != 8 && TILE_K != 16
#error "TILE_K must be 1, 2, 4, 8 or 16"
#endif

#ifndef SPARSERL_SPMM_COL_TILE_BODY
#define SPARSERL_SPMM_COL_TILE_BODY

// Columns one X load covers in a full tile: TILE_K up to 4 (float2 /
// float4 / pairs of double2), when X is row-major and VX (aligned).
#define SPMM_CT_VEC (TILE_K < 4 ? TILE_K : 4)

template <bool FULL, bool VX>
__device__ __forceinline__ void spmm_ct_fma(T* blk, const T* __restrict__ x, int ldx, int c,
                                            T v, int c0, int n) {
    if constexpr (FULL && VX && SPMM_LAYOUT == 0 && SPMM_CT_VEC > 1) {
        // c0 is a multiple of TILE_K, so every SPMM_CT_VEC-wide load is aligned.
#pragma unroll
        for (int q = 0; q < TILE_K; q += SPMM_CT_VEC) {
            T xv[SPMM_CT_VEC];
            spmm_load_vec<SPMM_CT_VEC>(x + spmm_at(c, c0 + q, ldx), xv);
#pragma unroll
            for (int e = 0; e < SPMM_CT_VEC; ++e) {
                blk[q + e] += v * xv[e];
            }
        }
    } else {
#pragma unroll
        for (int q = 0; q < TILE_K; ++q) {
            if (FULL || c0 + q < n) {
                blk[q] += v * spmm_load_x(x + spmm_at(c, c0 + q, ldx));
            }
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

// The lane's nonzeros k, k + GROUP, .. < end of a row into acc, UNROLL at a
// time (their loads issued before any product), the last batch guarded:
// their products summed in T, the block sum added into the double
// accumulators whenever the next batch could pass SPMM_BLOCK_TERMS products
// (so a block never holds more), and at the end.
template <bool FULL, bool VX>
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
            spmm_ct_fma<FULL, VX>(blk, x, ldx, c[u], v[u], c0, n);
        }
        terms += U;
        if (terms > SPMM_BLOCK_TERMS - U) {
            spmm_ct_blk_add(acc, blk);
            terms = 0;
        }
    }
    // The last (partial) batch: guarded loads, still all in flight at once
    // (a long row's tail is not walked one dependent load at a time).
    if (k < end) {
        int c[U];
        T v[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const bool in = k + u * GROUP < end;
            c[u] = in ? indices[k + u * GROUP] : 0;
            v[u] = in ? values[k + u * GROUP] : (T)0;
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
            if (k + u * GROUP < end) {
                spmm_ct_fma<FULL, VX>(blk, x, ldx, c[u], v[u], c0, n);
            }
        }
    }
    spmm_ct_blk_add(acc, blk);
}

// Reduce-scatter of the tile over the GROUP lanes, offsets GROUP / 2 down
// to 1: while a lane holds M > 1 columns it keeps one half (the upper one
// when its offset bit is set) and adds the partner's sums of that half (M / 2
// shuffles instead of M); once M == 1 the remaining offsets are a butterfly.
// The lane ends with the group's sums of tile columns [cb, cb + M_END).
template <int M, int O>
__device__ __forceinline__ void spmm_ct_reduce(SPMM_ACC* acc, int lane, unsigned mask, int& cb) {
    if constexpr (O >= 1) {
        if constexpr (M > 1) {
            const bool up = (lane & O) != 0;
#pragma unroll
            for (int i = 0; i < M / 2; ++i) {
                const SPMM_ACC send = up ? acc[i] : acc[i + M / 2];
                const SPMM_ACC keep = up ? acc[i + M / 2] : acc[i];
                acc[i] = keep + __shfl_xor_sync(mask, send, O, GROUP);
            }
            cb += up ? M / 2 : 0;
            spmm_ct_reduce<M / 2, O / 2>(acc, lane, mask, cb);
        } else {
            acc[0] += __shfl_xor_sync(mask, acc[0], O, GROUP);
            spmm_ct_reduce<1, O / 2>(acc, lane, mask, cb);
        }
    }
}

// Tile columns a lane holds after the reduce-scatter, and the lanes sharing
// them (only the first of each SPMM_CT_SHARE stores).
#define SPMM_CT_HOLD (TILE_K > GROUP ? TILE_K / GROUP : 1)
#define SPMM_CT_SHARE (GROUP > TILE_K ? GROUP / TILE_K : 1)

template <int N_CT, int EPI, bool VX>
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
            spmm_ct_row<true, VX>(acc, indices, values, x, ldx, indptr[row] + lane, end, c0, n);
        } else {
            spmm_ct_row<false, VX>(acc, indices, values, x, ldx, indptr[row] + lane, end, c0, n);
        }
        int cb = 0;
        spmm_ct_reduce<TILE_K, GROUP / 2>(acc, lane, mask, cb);
        if (lane % SPMM_CT_SHARE == 0) {
#pragma unroll
            for (int i = 0; i < SPMM_CT_HOLD; ++i) {
                const int col = c0 + cb + i;
                if (col < n) {
                    const long long at = spmm_at(row, col, ldy);
                    y[at] = spmm_final<EPI>(acc[i], y, at, alpha, beta, bias, col);
                }
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
    // X rows through SPMM_CT_VEC-wide loads when X allows them (uniform).
    if (spmm_vec_ok<SPMM_CT_VEC>(x, ldx, x, ldx)) {
        spmm_col_tile<SPMM_N, SPMM_EPILOGUE, true>(rows, n, indptr, indices, values, x, ldx, y,
                                                   ldy, alpha, beta, bias);
    } else {
        spmm_col_tile<SPMM_N, SPMM_EPILOGUE, false>(rows, n, indptr, indices, values, x, ldx, y,
                                                    ldy, alpha, beta, bias);
    }
}
