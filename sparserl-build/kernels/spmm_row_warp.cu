// ---- spmm_row_warp.cu: CSR SpMM, GROUP lanes per (row, column chunk) ----
//
// A work item is one row and one chunk of GROUP * V * COARSEN columns; the
// items are spread over groups of GROUP lanes (several rows per warp when
// GROUP < 32) with a grid-stride loop. The group walks its row GROUP
// nonzeros at a time: each lane loads one (column, value) pair coalesced,
// then the group broadcasts them with shuffles ("coalesced row caching"),
// and every lane multiplies each into the V x COARSEN columns it owns:
// COARSEN slices of V consecutive columns, slice q at q * GROUP * V + lane * V
// ("coarse-grained warp merging"; V-wide vector loads of X rows when X and Y
// allow them, else the same code with V = 1). Columns past n are guarded
// (N not a multiple of the vector width, or of the chunk). Rows of a group
// share its trip counts, so shuffles never leave a partner behind.

#include "spmm_common.cuh"

#ifndef SPARSERL_SPMM_ROW_WARP_BODY
#define SPARSERL_SPMM_ROW_WARP_BODY

// The products of one broadcast nonzero (column cc, value vv) into the
// block sums blk (in T; added into the double accumulators once per step).
template <int V>
__device__ __forceinline__ void spmm_rw_fma(T (*blk)[V], const T* __restrict__ x, int ldx,
                                            int cc, T vv, int col0, int n) {
#pragma unroll
    for (int q = 0; q < COARSEN; ++q) {
        const int col = col0 + q * GROUP * V;
        if (col + V <= n) {
            T xv[V];
#if SPMM_LAYOUT == 0
            spmm_load_vec<V>(x + spmm_at(cc, col, ldx), xv);
#else
#pragma unroll
            for (int e = 0; e < V; ++e) {
                xv[e] = spmm_load_x(x + spmm_at(cc, col + e, ldx));
            }
#endif
#pragma unroll
            for (int e = 0; e < V; ++e) {
                blk[q][e] += vv * xv[e];
            }
        } else {
#pragma unroll
            for (int e = 0; e < V; ++e) {
                if (col + e < n) {
                    blk[q][e] += vv * spmm_load_x(x + spmm_at(cc, col + e, ldx));
                }
            }
        }
    }
}

template <int N_CT, int EPI, int V>
__device__ __forceinline__ void spmm_row_warp(const int rows, const int n_rt,
                                              const int* __restrict__ indptr,
                                              const int* __restrict__ indices,
                                              const T* __restrict__ values, const T* __restrict__ x,
                                              const int ldx, T* __restrict__ y, const int ldy,
                                              const T alpha, const T beta,
                                              const T* __restrict__ bias) {
    const int n = N_CT > 0 ? N_CT : n_rt;
    constexpr int CHUNK = GROUP * V * COARSEN;
    const long long chunks = ((long long)n + CHUNK - 1) / CHUNK;
    const long long work = (long long)rows * chunks;
    const long long tid = (long long)blockIdx.x * BLOCK + threadIdx.x;
    const int lane = (int)(tid & (GROUP - 1));
    const unsigned mask = spmm_group_mask<GROUP>();
    const long long stride = (long long)gridDim.x * (BLOCK / GROUP);
    // The loop condition is uniform across a group (same w).
    for (long long w = tid / GROUP; w < work; w += stride) {
        const int row = (int)(w / chunks);
        const int col0 = (int)(w % chunks) * CHUNK + lane * V;
        const int start = indptr[row];
        const int end = indptr[row + 1];
        SPMM_ACC acc[COARSEN][V];
        T blk[COARSEN][V];
#pragma unroll
        for (int q = 0; q < COARSEN; ++q) {
#pragma unroll
            for (int e = 0; e < V; ++e) {
                acc[q][e] = (SPMM_ACC)0;
                blk[q][e] = (T)0;
            }
        }
        int base = start;
        // Whole steps of GROUP nonzeros: a fixed trip count, unrolled UNROLL.
        // A block is SPMM_BLOCK_TERMS / GROUP steps (GROUP <= 32 products per
        // column and step); the tail joins the last, unfinished block, which
        // then still holds fewer than SPMM_BLOCK_TERMS products.
        int steps = 0;
        for (; base + GROUP <= end; base += GROUP) {
            const int mc = indices[base + lane];
            const T mv = values[base + lane];
#pragma unroll UNROLL
            for (int t = 0; t < GROUP; ++t) {
                spmm_rw_fma<V>(blk, x, ldx, spmm_bcast<GROUP>(mc, t, mask),
                               spmm_bcast<GROUP>(mv, t, mask), col0, n);
            }
            if (++steps == SPMM_BLOCK_TERMS / GROUP) {
                spmm_blk_add<COARSEN, V>(acc, blk);
                steps = 0;
            }
        }
        if (base < end) {
            const int k = base + lane;
            const int mc = k < end ? indices[k] : 0;
            const T mv = k < end ? values[k] : (T)0;
            const int cnt = end - base;
#pragma unroll 1
            for (int t = 0; t < cnt; ++t) {
                spmm_rw_fma<V>(blk, x, ldx, spmm_bcast<GROUP>(mc, t, mask),
                               spmm_bcast<GROUP>(mv, t, mask), col0, n);
            }
        }
        spmm_blk_add<COARSEN, V>(acc, blk);
#pragma unroll
        for (int q = 0; q < COARSEN; ++q) {
            const int col = col0 + q * GROUP * V;
            if (col + V <= n && SPMM_LAYOUT == 0) {
                spmm_store_vec<EPI, V>(y, spmm_at(row, col, ldy), acc[q], alpha, beta, bias, col);
            } else {
#pragma unroll
                for (int e = 0; e < V; ++e) {
                    if (col + e < n) {
                        const long long at = spmm_at(row, col + e, ldy);
                        y[at] = spmm_final<EPI>(acc[q][e], y, at, alpha, beta, bias, col + e);
                    }
                }
            }
        }
    }
}

#endif  // SPARSERL_SPMM_ROW_WARP_BODY

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
    if (spmm_vec_ok<VEC>(x, ldx, y, ldy)) {
        spmm_row_warp<SPMM_N, SPMM_EPILOGUE, VEC>(rows, n, indptr, indices, values, x, ldx, y, ldy,
                                                  alpha, beta, bias);
    } else {
        spmm_row_warp<SPMM_N, SPMM_EPILOGUE, 1>(rows, n, indptr, indices, values, x, ldx, y, ldy,
                                                alpha, beta, bias);
    }
}
