// ---- spmm_nnz_split.cu: CSR SpMM, nonzero-balanced streams over column chunks ----
//
// A work item is one range of W = 32 * ITEMS / SUB consecutive nonzeros and one
// chunk of GROUP * V * COARSEN columns; items are spread over streams of
// GROUP lanes (32 / GROUP streams per warp: narrow widths keep every lane
// busy) with a grid-stride loop, so a hub row of a power-law graph is
// shared by many streams instead of serialising one. The stream finds the
// row of its first nonzero with a GROUP-way cooperative search (each lane
// probes one point per round, a ballot narrows the window), then
// walks the range GROUP nonzeros at a time: one coalesced (column, value)
// load per lane, broadcast by shuffles within the stream, each lane
// accumulating its V x COARSEN columns (slice q at q * GROUP * V + lane * V);
// min(UNROLL, GROUP) broadcast nonzeros have their X rows loaded before any
// is accumulated (that many gathers in flight per lane). Row changes are
// uniform across the stream; a run of empty rows is crossed by galloping,
// so no stream walks a long run row by row. The range W does not depend
// on GROUP, so which rows are split (and the passes) does not either. A
// row that lies wholly inside
// the range is written with its final value; a row cut at a range edge
// ("split": indptr[r] / W != (indptr[r+1] - 1) / W) gets alpha times the
// range's partial added with atomics (a vector atomic per lane and column
// slice for f32 on sm_90 and later).
//
// Two passes make that exact, a warp per row or per up to 32 rows (see
// spmm_ns_pass), launched on the same stream:
// ENTRY_prep before the main entry sets split rows to beta Y (0 when beta ==
// 0: Y is never read), plus the bias under the epilogue, and writes empty
// rows' final values (no range visits them); ENTRY_post after it applies the
// epilogue's ReLU to split rows.
//
// Compiled for sm_90 and later, the three may overlap as programmatic
// dependent launches (the host launches main and post so when the image
// allows it): prep and main trigger their dependents at once; every thread
// of main waits (griddepcontrol.wait) for prep to complete before its first
// write to Y and before it exits, so main completing implies prep completed;
// post waits for main before it reads Y.

#include "spmm_common.cuh"

#if ITEMS < 1 || ITEMS > 64
#error "ITEMS must be in 1..=64"
#endif

#ifndef SPARSERL_SPMM_NNZ_SPLIT_BODY
#define SPARSERL_SPMM_NNZ_SPLIT_BODY

#if SUB != 1 && (SUB != 2 && SUB != 4 || ITEMS != 1)
#error "SUB must be 1, or 2 or 4 with ITEMS 1"
#endif

// Nonzeros per range: 32 ITEMS, or 16 / 8 (SUB 2 / 4 with ITEMS 1).
#define SPMM_RANGE (32 * ITEMS / SUB)

// Nonzeros whose X rows a stream loads before using any: UNROLL, at most GROUP.
#define SPMM_NS_PF (UNROLL < GROUP ? UNROLL : GROUP)

// Whether row [s, e) (non-empty) is cut between ranges.
__device__ __forceinline__ bool spmm_split_row(int s, int e) {
    return s / SPMM_RANGE != (e - 1) / SPMM_RANGE;
}

// The lane's columns of X row cc into xv (columns past n: 0, never used).
template <int V>
__device__ __forceinline__ void spmm_ns_load(T (*xv)[V], const T* __restrict__ x, int ldx, int cc,
                                             int col0, int n) {
#pragma unroll
    for (int q = 0; q < COARSEN; ++q) {
        const int col = col0 + q * GROUP * V;
        if (col + V <= n) {
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

// The products of one broadcast nonzero (value vv, its X row loaded into
// xv) into the block sums blk (in T); columns past n are skipped.
template <int V>
__device__ __forceinline__ void spmm_ns_acc(T (*blk)[V], const T (*xv)[V], T vv, int col0, int n) {
#pragma unroll
    for (int q = 0; q < COARSEN; ++q) {
#pragma unroll
        for (int e = 0; e < V; ++e) {
            if (col0 + q * GROUP * V + e < n) {
                blk[q][e] += vv * xv[q][e];
            }
        }
    }
}

// Adds alpha times V accumulated columns to Y(row, col..) atomically: one
// vector atomic for f32 pairs and quads on sm_90 and later (one L2 atomic
// operation instead of V; the split rows of a short-row matrix send most of
// the kernel's stores this way), else V scalar atomics. The caller checked
// col + V <= n, row-major Y and V-element alignment.
template <int V>
__device__ __forceinline__ void spmm_ns_atomic_vec(T* __restrict__ y, long long at,
                                                   const SPMM_ACC* acc, T alpha) {
#if __CUDA_ARCH__ >= 900
    if constexpr (V == 2 && sizeof(T) == 4) {
        atomicAdd((float2*)(y + at), make_float2((float)((SPMM_ACC)alpha * acc[0]),
                                                 (float)((SPMM_ACC)alpha * acc[1])));
        return;
    } else if constexpr (V == 4 && sizeof(T) == 4) {
        atomicAdd((float4*)(y + at), make_float4((float)((SPMM_ACC)alpha * acc[0]),
                                                 (float)((SPMM_ACC)alpha * acc[1]),
                                                 (float)((SPMM_ACC)alpha * acc[2]),
                                                 (float)((SPMM_ACC)alpha * acc[3])));
        return;
    }
#endif
#pragma unroll
    for (int e = 0; e < V; ++e) {
        atomicAdd(y + at + e, (T)((SPMM_ACC)alpha * acc[e]));
    }
}

// Writes (whole row) or atomically adds (split row) the lane's columns of row.
template <int EPI, int V>
__device__ __forceinline__ void spmm_ns_flush(SPMM_ACC (*acc)[V], T* __restrict__ y, int ldy, int row,
                                              bool whole, int col0, int n, T alpha, T beta,
                                              const T* __restrict__ bias) {
#pragma unroll
    for (int q = 0; q < COARSEN; ++q) {
        const int col = col0 + q * GROUP * V;
        if (col + V <= n && SPMM_LAYOUT == 0) {
            if (whole) {
                spmm_store_vec<EPI, V>(y, spmm_at(row, col, ldy), acc[q], alpha, beta, bias, col);
            } else {
                spmm_ns_atomic_vec<V>(y, spmm_at(row, col, ldy), acc[q], alpha);
            }
        } else {
#pragma unroll
            for (int e = 0; e < V; ++e) {
                if (col + e < n) {
                    const long long at = spmm_at(row, col + e, ldy);
                    if (whole) {
                        y[at] = spmm_final<EPI>(acc[q][e], y, at, alpha, beta, bias, col + e);
                    } else {
                        atomicAdd(y + at, (T)((SPMM_ACC)alpha * acc[q][e]));
                    }
                }
            }
        }
#pragma unroll
        for (int e = 0; e < V; ++e) {
            acc[q][e] = (SPMM_ACC)0;
        }
    }
}

// The last row r in [lo, hi] with indptr[r] <= k, for a stream of G lanes
// (every lane calls it with the same arguments; `lane` is its index in the
// stream, `mask` the stream's lanes): G probes per round narrowed by a
// ballot, log_G(rows) dependent loads instead of log_2(rows), then one
// ballot over the final window. Requires indptr[lo] <= k.
template <int G>
__device__ __forceinline__ int spmm_group_row_in(const int* __restrict__ indptr, int lo, int hi,
                                                 int k, unsigned lane, unsigned mask) {
    while (hi - lo >= G) {
        const long long span = (long long)(hi - lo);
        const int probe = lo + (int)(((long long)lane + 1) * span / G);
        const int c = __popc(__ballot_sync(mask, indptr[probe] <= k) & mask);
        const int new_lo = c > 0 ? lo + (int)((long long)c * span / G) : lo;
        hi = c < G ? lo + (int)(((long long)c + 1) * span / G) - 1 : hi;
        lo = new_lo;
    }
    const int r = lo + (int)lane;
    return lo - 1 + __popc(__ballot_sync(mask, r <= hi && indptr[r] <= k) & mask);
}

// The last row r in [lo, hi] with indptr[r] <= k, for a stream (every
// lane of it calls with the same arguments). Requires indptr[lo] <= k.
__device__ __forceinline__ int spmm_stream_row_in(const int* __restrict__ indptr, int lo, int hi,
                                                  int k, unsigned lane, unsigned mask) {
    if constexpr (GROUP == 32) {
        return spmm_warp_row_in(indptr, lo, hi, k, lane);
    } else if constexpr (GROUP > 1) {
        return spmm_group_row_in<GROUP>(indptr, lo, hi, k, lane, mask);
    }
    while (lo < hi) {
        const int mid = lo + (hi - lo + 1) / 2;
        if (indptr[mid] <= k) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    return lo;
}

// The row of nonzero k (< nnz) past an empty row lo (indptr[lo] <= k):
// the last row r >= lo with indptr[r] <= k, by galloping then bisecting,
// 2 log2(run) dependent loads instead of one per row (a web graph has runs
// of thousands of empty rows, which one stream would otherwise walk row by
// row). Every lane of the stream makes the same loads. Few registers: it
// runs with the X rows of several nonzeros live (a probe of GROUP rows at
// once with ballots and shuffles raised 64-register variants to 72 and cost
// up to 1.35x on matrices without empty rows).
__device__ __forceinline__ int spmm_ns_skip_empty(const int* __restrict__ indptr, int rows, int lo,
                                                  int k) {
    int step = 1;
    int hi;
    // indptr[rows] = nnz > k ends every run.
    for (;;) {
        const int probe = rows - lo > step ? lo + step : rows;
        if (indptr[probe] > k) {
            hi = probe;
            break;
        }
        lo = probe;
        step = step < (1 << 29) ? 2 * step : step;
    }
    while (hi - lo > 1) {
        const int mid = lo + (hi - lo) / 2;
        if (indptr[mid] <= k) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return lo;
}

template <int N_CT, int EPI, int V>
__device__ __forceinline__ void spmm_nnz_split(const int rows, const int nnz, const int n_rt,
                                               const int* __restrict__ indptr,
                                               const int* __restrict__ indices,
                                               const T* __restrict__ values,
                                               const T* __restrict__ x, const int ldx,
                                               T* __restrict__ y, const int ldy, const T alpha,
                                               const T beta, const T* __restrict__ bias) {
    const int n = N_CT > 0 ? N_CT : n_rt;
    constexpr int CHUNK = GROUP * V * COARSEN;
    const long long chunks = ((long long)n + CHUNK - 1) / CHUNK;
    const long long ranges = ((long long)nnz + SPMM_RANGE - 1) / SPMM_RANGE;
    const long long work = ranges * chunks;
    const long long tid = (long long)blockIdx.x * BLOCK + threadIdx.x;
    const unsigned lane = (unsigned)(tid & (GROUP - 1));
    const unsigned mask = spmm_group_mask<GROUP>();
    const long long stride = (long long)gridDim.x * (BLOCK / GROUP);
    // Every thread waits for the pre-pass before its first write to Y (each
    // item after its row search, a thread without items here), so main
    // completes only after prep. Later items' waits find prep done; a
    // per-thread "waited" flag instead changed the registers or spills of
    // 71 of 96 sampled entries at sm_90 (this form: 34, no net growth).
    if (tid / GROUP >= work) {
        spmm_pdl_wait();
    }
    // The loop condition and the walk are uniform across a stream (same w).
    for (long long w = tid / GROUP; w < work; w += stride) {
        const int kb = (int)(w / chunks) * SPMM_RANGE;
        const int ke = nnz - kb < SPMM_RANGE ? nnz : kb + SPMM_RANGE;
        const int col0 = (int)(w % chunks) * CHUNK + (int)lane * V;
        int row = spmm_stream_row_in(indptr, 0, rows - 1, kb, lane, mask);
        int rs = indptr[row];
        int re = indptr[row + 1];
        // The row search (pointer reads only) overlaps the pre-pass.
        spmm_pdl_wait();
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
        // A block is SPMM_BLOCK_TERMS / GROUP steps (fewer at a row change).
        int steps = 0;
        for (int base = kb; base < ke; base += GROUP) {
            const int k = base + (int)lane;
            const int mc = k < ke ? indices[k] : 0;
            const T mv = k < ke ? values[k] : (T)0;
            const int cnt = ke - base < GROUP ? ke - base : GROUP;
            // PF nonzeros at a time: their X rows are all loaded before any
            // is used (PF gathers in flight per lane), then accumulated in
            // order, with the row changes between them.
            for (int t0 = 0; t0 < cnt; t0 += SPMM_NS_PF) {
                T xv[SPMM_NS_PF][COARSEN][V];
                T vv[SPMM_NS_PF];
#pragma unroll
                for (int u = 0; u < SPMM_NS_PF; ++u) {
                    // t0 + u < GROUP: PF divides GROUP and t0 < cnt <= GROUP.
                    const int cc = spmm_bcast<GROUP>(mc, t0 + u, mask);
                    vv[u] = spmm_bcast<GROUP>(mv, t0 + u, mask);
                    if (t0 + u < cnt) {
                        spmm_ns_load<V>(xv[u], x, ldx, cc, col0, n);
                    }
                }
#pragma unroll
                for (int u = 0; u < SPMM_NS_PF; ++u) {
                    const int t = t0 + u;
                    if (t >= cnt) {
                        break;
                    }
                    if (base + t >= re) {
                        spmm_blk_add<COARSEN, V>(acc, blk);
                        spmm_ns_flush<EPI, V>(acc, y, ldy, row, rs >= kb && re <= ke, col0, n,
                                              alpha, beta, bias);
                        ++row;
                        rs = re;
                        re = indptr[row + 1];
                        if (base + t >= re) {
                            // Row is empty (the pre-pass wrote it); base + t < nnz.
                            row = spmm_ns_skip_empty(indptr, rows, row, base + t);
                            rs = indptr[row];
                            re = indptr[row + 1];
                        }
                    }
                    spmm_ns_acc<V>(blk, xv[u], vv[u], col0, n);
                }
            }
            if (++steps == SPMM_BLOCK_TERMS / GROUP) {
                spmm_blk_add<COARSEN, V>(acc, blk);
                steps = 0;
            }
        }
        spmm_blk_add<COARSEN, V>(acc, blk);
        spmm_ns_flush<EPI, V>(acc, y, ldy, row, rs >= kb && re <= ke, col0, n, alpha, beta, bias);
    }
}

// The pre-pass (POST 0) or post-pass (POST 1): a warp per G rows, each of
// its first G lanes reading one row's pointers (coalesced), a ballot of the
// rows the pass touches (pre: split and empty rows; post: split rows), then
// those rows one at a time with lanes over columns. G = ceil(rows / warps),
// at most 32: the host launches a warp per row up to a cap, so a small
// matrix keeps a warp per row (its touched rows run in parallel) and a
// matrix of a few 100k rows no longer runs tens of waves of nearly empty
// blocks that read two pointers and exit.
template <int N_CT, int EPI, int POST>
__device__ __forceinline__ void spmm_ns_pass(const int rows, const int n_rt,
                                             const int* __restrict__ indptr, T* __restrict__ y,
                                             const int ldy, const T beta,
                                             const T* __restrict__ bias) {
    const int n = N_CT > 0 ? N_CT : n_rt;
    const unsigned lane = threadIdx.x & 31u;
    const long long warps = (long long)gridDim.x * (BLOCK / 32);
    const long long per = (rows + warps - 1) / warps;
    const long long g = per < 1 ? 1 : (per > 32 ? 32 : per);
    // w is uniform across the warp, so is the loop: full-mask ballots.
    for (long long w = ((long long)blockIdx.x * BLOCK + threadIdx.x) / 32; w * g < rows;
         w += warps) {
        const long long r = w * g + lane;
        bool touch = false;
        bool empty = false;
        if ((long long)lane < g && r < rows) {
            const int s = indptr[r];
            const int e = indptr[r + 1];
            empty = s == e;
            touch = POST ? (!empty && spmm_split_row(s, e)) : (empty || spmm_split_row(s, e));
        }
        unsigned todo = __ballot_sync(0xffffffffu, touch);
        const unsigned empties = __ballot_sync(0xffffffffu, empty);
        while (todo != 0u) {
            const int b = __ffs(todo) - 1;
            todo &= todo - 1u;
            const int row = (int)(w * g + b);
            const bool row_empty = ((empties >> b) & 1u) != 0u;
            for (int col = (int)lane; col < n; col += 32) {
                const long long at = spmm_at(row, col, ldy);
                if (POST) {
                    y[at] = y[at] > (T)0 ? y[at] : (T)0;
                } else if (row_empty) {
                    y[at] = spmm_final<EPI>((SPMM_ACC)0, y, at, (T)1, beta, bias, col);
                } else {
                    SPMM_ACC v = beta != (T)0 ? (SPMM_ACC)beta * (SPMM_ACC)y[at] : (SPMM_ACC)0;
                    if (EPI == 1) {
                        v += (SPMM_ACC)bias[col];
                    }
                    y[at] = (T)v;
                }
            }
        }
    }
}

#endif  // SPARSERL_SPMM_NNZ_SPLIT_BODY

#define SPMM_ARGS                                                                             \
    const int rows, const int cols, const int nnz, const int n, const int* __restrict__ indptr, \
        const int* __restrict__ indices, const T* __restrict__ values, const T* __restrict__ x, \
        const int ldx, T* __restrict__ y, const int ldy, const T alpha, const T beta,           \
        const T* __restrict__ bias

extern "C" __global__ void __launch_bounds__(BLOCK) SPMM_CAT(ENTRY, _prep)(SPMM_ARGS) {
    (void)cols;
    (void)nnz;
    (void)indices;
    (void)values;
    (void)x;
    (void)ldx;
    (void)alpha;
    spmm_pdl_trigger();
    if (n <= 0 || (SPMM_N > 0 && n != SPMM_N)) {
        return;
    }
    spmm_ns_pass<SPMM_N, SPMM_EPILOGUE, 0>(rows, n, indptr, y, ldy, beta, bias);
}

#if SPMM_EPILOGUE != 0
extern "C" __global__ void __launch_bounds__(BLOCK) SPMM_CAT(ENTRY, _post)(SPMM_ARGS) {
    (void)cols;
    (void)nnz;
    (void)indices;
    (void)values;
    (void)x;
    (void)ldx;
    (void)alpha;
    // Main may still run (both launched as programmatic dependents): wait
    // for it before reading y.
    spmm_pdl_wait();
    if (n <= 0 || (SPMM_N > 0 && n != SPMM_N)) {
        return;
    }
    spmm_ns_pass<SPMM_N, SPMM_EPILOGUE, 1>(rows, n, indptr, y, ldy, beta, bias);
}
#endif

extern "C" __global__ void __launch_bounds__(BLOCK) ENTRY(SPMM_ARGS) {
    (void)cols;
    spmm_pdl_trigger();
    if (n <= 0 || (SPMM_N > 0 && n != SPMM_N)) {
        // Nothing written; still complete only after the pre-pass.
        spmm_pdl_wait();
        return;
    }
    if (spmm_vec_ok<VEC>(x, ldx, y, ldy)) {
        spmm_nnz_split<SPMM_N, SPMM_EPILOGUE, VEC>(rows, nnz, n, indptr, indices, values, x, ldx, y,
                                                   ldy, alpha, beta, bias);
    } else {
        spmm_nnz_split<SPMM_N, SPMM_EPILOGUE, 1>(rows, nnz, n, indptr, indices, values, x, ldx, y,
                                                 ldy, alpha, beta, bias);
    }
}

#undef SPMM_ARGS
