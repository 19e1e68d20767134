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
// allow them, else the same code with V = 1). The broadcast nonzeros are
// taken UNROLL at a time, their X rows all loaded before any is
// used (gathers in flight per lane). Columns past n are guarded only in a
// chunk that reaches past n (N not a multiple of the vector width, or of
// the chunk); whole chunks run without guards. Rows of a group share its
// trip counts, so shuffles never leave a partner behind.
//
// SPLIT > 1: SPLIT neighbouring groups of a block share each work item,
// dealt the row's steps round-robin (part p walks steps p, p + SPLIT, ...),
// so the serial walk of a row is SPLIT times shorter; parts 1.. leave their
// double partial sums in shared memory, part 0 adds them and stores. The
// block loops over its items together (a uniform trip count around the two
// barriers).

#include "spmm_common.cuh"

#if SPLIT != 1 && SPLIT != 2 && SPLIT != 4 && SPLIT != 8
#error "SPLIT must be 1, 2, 4 or 8"
#endif
#if (BLOCK / GROUP) % SPLIT != 0
#error "SPLIT must divide the groups of a block"
#endif

#ifndef SPARSERL_SPMM_ROW_WARP_BODY
#define SPARSERL_SPMM_ROW_WARP_BODY

// Nonzeros whose X rows a lane loads before using any: UNROLL (at most
// SPMM_STEP, which is at least UNROLL; powers of two, so it divides it).
#define SPMM_RW_PF (UNROLL < SPMM_STEP ? UNROLL : SPMM_STEP)

// The lane's columns of X row cc into xv. FULL: every column of the chunk
// is below n (no guards: one branch-free batch of loads); else columns
// past n load 0 and are never used.
template <int V, bool FULL>
__device__ __forceinline__ void spmm_rw_load(T (*xv)[V], const T* __restrict__ x, int ldx, int cc,
                                             int col0, int n) {
#pragma unroll
    for (int q = 0; q < COARSEN; ++q) {
        const int col = col0 + q * GROUP * V;
        if (FULL || col + V <= n) {
#if SPMM_LAYOUT == 0
            spmm_load_vec<V>(x + spmm_at(cc, col, ldx), xv[q]);
#else
#pragma unroll
            for (int e = 0; e < V; ++e) {
                xv[q][e] = spmm_load_x(x + spmm_at(cc, col + e, ldx));
            }
#endif
        } else {
#pragma unroll
            for (int e = 0; e < V; ++e) {
                xv[q][e] = col + e < n ? spmm_load_x(x + spmm_at(cc, col + e, ldx)) : (T)0;
            }
        }
    }
}

// The products of one broadcast nonzero (value vv, its X row in xv) into
// the block sums blk (in T); columns past n skipped unless FULL.
template <int V, bool FULL>
__device__ __forceinline__ void spmm_rw_acc(T (*blk)[V], const T (*xv)[V], T vv, int col0, int n) {
#pragma unroll
    for (int q = 0; q < COARSEN; ++q) {
#pragma unroll
        for (int e = 0; e < V; ++e) {
            if (FULL || col0 + q * GROUP * V + e < n) {
                blk[q][e] += vv * xv[q][e];
            }
        }
    }
}

// The sums of one work item's nonzeros [first, end) into acc (zeroed
// here): SPMM_STEP at a time (GROUP, or UNROLL when larger: coalesced
// (column, value) loads, SPMM_LPL per lane, the next step's issued before
// this step's gathers, then broadcasts), every SPLIT-th step from first
// (the part's share of the row), each step's nonzeros in batches of
// SPMM_RW_PF whose X rows are all loaded before any is used (that many
// gathers in flight per lane: the loads of a batch are not held behind the
// previous product). A block is SPMM_BLOCK_TERMS / SPMM_STEP steps (at most
// SPMM_STEP products per column and step). FULL is uniform across the
// group (a property of the chunk).
template <int V, bool FULL>
__device__ __forceinline__ void spmm_rw_sum(SPMM_ACC (*acc)[V], const int first, const int end,
                                            const int col0, const int n,
                                            const int* __restrict__ indices,
                                            const T* __restrict__ values, const T* __restrict__ x,
                                            const int ldx, const int lane, const unsigned mask) {
    constexpr int STRIDE = SPLIT * SPMM_STEP;
    T blk[COARSEN][V];
#pragma unroll
    for (int q = 0; q < COARSEN; ++q) {
#pragma unroll
        for (int e = 0; e < V; ++e) {
            acc[q][e] = (SPMM_ACC)0;
            blk[q][e] = (T)0;
        }
    }
    int steps = 0;
    int mc[SPMM_LPL];
    T mv[SPMM_LPL];
    spmm_step_pairs(indices, values, first, end, lane, mc, mv);
    for (int base = first; base < end; base += STRIDE) {
        // The next step's pairs, issued before this step's X rows.
        int nc[SPMM_LPL];
        T nv[SPMM_LPL];
        spmm_step_pairs(indices, values, base + STRIDE, end, lane, nc, nv);
        const int cnt = end - base < SPMM_STEP ? end - base : SPMM_STEP;
        for (int t0 = 0; t0 < cnt; t0 += SPMM_RW_PF) {
            T xv[SPMM_RW_PF][COARSEN][V];
            T vv[SPMM_RW_PF];
#pragma unroll
            for (int u = 0; u < SPMM_RW_PF; ++u) {
                // SPMM_LPL > 1: PF == SPMM_STEP, so t0 == 0 and pair u is
                // register u / GROUP of lane u % GROUP; else register 0 of
                // lane t0 + u < GROUP (PF divides GROUP, t0 < cnt <= GROUP).
                const int j = SPMM_LPL > 1 ? u / GROUP : 0;
                const int src = SPMM_LPL > 1 ? u % GROUP : t0 + u;
                vv[u] = spmm_bcast<GROUP>(mv[j], src, mask);
                spmm_rw_load<V, FULL>(xv[u], x, ldx, spmm_bcast<GROUP>(mc[j], src, mask), col0,
                                      n);
            }
#pragma unroll
            for (int u = 0; u < SPMM_RW_PF; ++u) {
                if (t0 + u < cnt) {
                    spmm_rw_acc<V, FULL>(blk, xv[u], vv[u], col0, n);
                }
            }
        }
        if (++steps == SPMM_BLOCK_TERMS / SPMM_STEP) {
            spmm_blk_add<COARSEN, V>(acc, blk);
            steps = 0;
        }
#pragma unroll
        for (int j = 0; j < SPMM_LPL; ++j) {
            mc[j] = nc[j];
            mv[j] = nv[j];
        }
    }
    spmm_blk_add<COARSEN, V>(acc, blk);
}

// The lane's columns of row's final values (alpha, beta, the epilogue).
template <int EPI, int V, bool FULL>
__device__ __forceinline__ void spmm_rw_store(const SPMM_ACC (*acc)[V], const int row,
                                              const int col0, const int n, T* __restrict__ y,
                                              const int ldy, const T alpha, const T beta,
                                              const T* __restrict__ bias) {
#pragma unroll
    for (int q = 0; q < COARSEN; ++q) {
        const int col = col0 + q * GROUP * V;
        if ((FULL || col + V <= n) && SPMM_LAYOUT == 0) {
            spmm_store_vec<EPI, V>(y, spmm_at(row, col, ldy), acc[q], alpha, beta, bias, col);
        } else {
#pragma unroll
            for (int e = 0; e < V; ++e) {
                if (FULL || col + e < n) {
                    const long long at = spmm_at(row, col + e, ldy);
                    y[at] = spmm_final<EPI>(acc[q][e], y, at, alpha, beta, bias, col + e);
                }
            }
        }
    }
}

// One whole work item (SPLIT 1): the row's sums, then its stores.
template <int EPI, int V, bool FULL>
__device__ __forceinline__ void spmm_rw_item(const int row, const int col0, const int n,
                                             const int* __restrict__ indptr,
                                             const int* __restrict__ indices,
                                             const T* __restrict__ values, const T* __restrict__ x,
                                             const int ldx, T* __restrict__ y, const int ldy,
                                             const T alpha, const T beta,
                                             const T* __restrict__ bias, const int lane,
                                             const unsigned mask) {
    SPMM_ACC acc[COARSEN][V];
    spmm_rw_sum<V, FULL>(acc, indptr[row], indptr[row + 1], col0, n, indices, values, x, ldx,
                         lane, mask);
    spmm_rw_store<EPI, V, FULL>(acc, row, col0, n, y, ldy, alpha, beta, bias);
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
        const int chunk = (int)(w % chunks);
        const int col0 = chunk * CHUNK + lane * V;
        if ((long long)(chunk + 1) * CHUNK <= n) {
            spmm_rw_item<EPI, V, true>(row, col0, n, indptr, indices, values, x, ldx, y, ldy,
                                       alpha, beta, bias, lane, mask);
        } else {
            spmm_rw_item<EPI, V, false>(row, col0, n, indptr, indices, values, x, ldx, y, ldy,
                                        alpha, beta, bias, lane, mask);
        }
    }
}

#if SPLIT > 1
// Partial sums of parts 1.. of a block's items: BLOCK (SPLIT - 1) / SPLIT
// lanes x COARSEN VEC values (at most 4096 doubles: the variant's bound).
#define SPMM_RS_SLOTS (BLOCK / SPLIT * (SPLIT - 1) * COARSEN * VEC)

// Part `part` (> 0) of item `slot`: its lane's value (q, e) in the shared
// array, lanes consecutive (conflict-free).
template <int V>
__device__ __forceinline__ int spmm_rs_at(int slot, int part, int q, int e, int lane) {
    return (((slot * (SPLIT - 1) + part - 1) * COARSEN + q) * V + e) * GROUP + lane;
}

template <int N_CT, int EPI, int V>
__device__ __forceinline__ void spmm_row_split(const int rows, const int n_rt,
                                               const int* __restrict__ indptr,
                                               const int* __restrict__ indices,
                                               const T* __restrict__ values,
                                               const T* __restrict__ x, const int ldx,
                                               T* __restrict__ y, const int ldy, const T alpha,
                                               const T beta, const T* __restrict__ bias) {
    __shared__ SPMM_ACC parts[SPMM_RS_SLOTS];
    const int n = N_CT > 0 ? N_CT : n_rt;
    constexpr int CHUNK = GROUP * V * COARSEN;
    constexpr int ITEMS_PER_BLOCK = BLOCK / GROUP / SPLIT;
    const long long chunks = ((long long)n + CHUNK - 1) / CHUNK;
    const long long work = (long long)rows * chunks;
    const int g = (int)threadIdx.x / GROUP;
    const int lane = (int)threadIdx.x & (GROUP - 1);
    const int slot = g / SPLIT;
    const int part = g % SPLIT;
    const unsigned mask = spmm_group_mask<GROUP>();
    // w0 is uniform across the block, so are the loop and its barriers.
    for (long long w0 = (long long)blockIdx.x * ITEMS_PER_BLOCK; w0 < work;
         w0 += (long long)gridDim.x * ITEMS_PER_BLOCK) {
        const long long w = w0 + slot;
        const bool live = w < work;
        const int row = live ? (int)(w / chunks) : 0;
        const int chunk = live ? (int)(w % chunks) : 0;
        const int col0 = chunk * CHUNK + lane * V;
        const bool full = (long long)(chunk + 1) * CHUNK <= n;
        SPMM_ACC acc[COARSEN][V];
        if (live) {
            // Uniform across the group (same w): its shuffles stay together.
            const int first = indptr[row] + part * SPMM_STEP;
            const int end = indptr[row + 1];
            if (full) {
                spmm_rw_sum<V, true>(acc, first, end, col0, n, indices, values, x, ldx, lane,
                                     mask);
            } else {
                spmm_rw_sum<V, false>(acc, first, end, col0, n, indices, values, x, ldx, lane,
                                      mask);
            }
            if (part > 0) {
#pragma unroll
                for (int q = 0; q < COARSEN; ++q) {
#pragma unroll
                    for (int e = 0; e < V; ++e) {
                        parts[spmm_rs_at<V>(slot, part, q, e, lane)] = acc[q][e];
                    }
                }
            }
        }
        __syncthreads();
        if (live && part == 0) {
            for (int p = 1; p < SPLIT; ++p) {
#pragma unroll
                for (int q = 0; q < COARSEN; ++q) {
#pragma unroll
                    for (int e = 0; e < V; ++e) {
                        acc[q][e] += parts[spmm_rs_at<V>(slot, p, q, e, lane)];
                    }
                }
            }
            if (full) {
                spmm_rw_store<EPI, V, true>(acc, row, col0, n, y, ldy, alpha, beta, bias);
            } else {
                spmm_rw_store<EPI, V, false>(acc, row, col0, n, y, ldy, alpha, beta, bias);
            }
        }
        // The next round's parts overwrite the shared sums.
        __syncthreads();
    }
}
#endif  // SPLIT > 1

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
#if SPLIT > 1
    if (spmm_vec_ok<VEC>(x, ldx, y, ldy)) {
        spmm_row_split<SPMM_N, SPMM_EPILOGUE, VEC>(rows, n, indptr, indices, values, x, ldx, y,
                                                   ldy, alpha, beta, bias);
    } else {
        spmm_row_split<SPMM_N, SPMM_EPILOGUE, 1>(rows, n, indptr, indices, values, x, ldx, y, ldy,
                                                 alpha, beta, bias);
    }
#else
    if (spmm_vec_ok<VEC>(x, ldx, y, ldy)) {
        spmm_row_warp<SPMM_N, SPMM_EPILOGUE, VEC>(rows, n, indptr, indices, values, x, ldx, y, ldy,
                                                  alpha, beta, bias);
    } else {
        spmm_row_warp<SPMM_N, SPMM_EPILOGUE, 1>(rows, n, indptr, indices, values, x, ldx, y, ldy,
                                                alpha, beta, bias);
    }
#endif
}
