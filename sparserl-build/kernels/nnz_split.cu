// ---- nnz_split.cu: CSR SpMV, nnz-balanced: ITEMS consecutive nonzeros per thread ----
//
// Thread t owns the nonzeros [t*ITEMS, min(nnz, (t+1)*ITEMS)). Each warp finds
// the rows of its first and last nonzero with two warp-cooperative 32-way
// searches (every lane probes one row pointer per round: about log32(rows)
// dependent loads instead of log2(rows)); every lane then binary-searches only
// that window for the row of its own first nonzero. A lane accumulates in
// double, stores a row that starts and ends inside its chunk, adds the partial
// sum of a row it shares with the previous lane to y with atomicAdd, and keeps
// the partial of the row its chunk ends in. Those
// chunk-final partials are combined across the warp by a segmented shuffle
// reduction (rows are non-decreasing with the lane index) and the last lane
// of each segment adds it to y: one atomic per row and warp instead of one per
// thread, which also keeps long rows accurate. y must be zeroed before the
// launch (rows without nonzeros are never written).

#include "common.cuh"

#if ITEMS < 1 || ITEMS > 16
#error "ITEMS must be in 1..=16"
#endif

// The last row r in [lo, hi] with indptr[r] <= k (requires indptr[lo] <= k).
// For 0 <= k < nnz this is the non-empty row holding nonzero k.
__device__ __forceinline__ int sparserl_row_in(const int* __restrict__ indptr, int lo, int hi,
                                               int k) {
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

// The same for a whole warp: every lane calls it with the same arguments and
// gets the same row. Each round the 32 lanes probe 32 row pointers spread
// over (lo, hi] and a ballot narrows the range to one gap between probes.
__device__ __forceinline__ int sparserl_warp_row_in(const int* __restrict__ indptr, int lo,
                                                    int hi, int k, unsigned lane) {
    while (hi - lo >= 32) {
        const long long span = (long long)(hi - lo);
        // Probe j sits at lo + (j + 1) span / 32: strictly increasing, the last at hi.
        const int probe = lo + (int)(((long long)lane + 1) * span / 32);
        // indptr is non-decreasing, so the probes <= k are lanes 0 .. n-1.
        const int n = __popc(__ballot_sync(SPARSERL_FULL_MASK, indptr[probe] <= k));
        const int new_lo = n > 0 ? lo + (int)((long long)n * span / 32) : lo;
        hi = n < 32 ? lo + (int)(((long long)n + 1) * span / 32) - 1 : hi;
        lo = new_lo;
    }
    const int r = lo + (int)lane;
    // indptr[lo] <= k, so at least lane 0 votes.
    return lo - 1 + __popc(__ballot_sync(SPARSERL_FULL_MASK, r <= hi && indptr[r] <= k));
}

extern "C" __global__ void SPARSERL_LAUNCH_BOUNDS ENTRY(
    const int rows, const int cols, const int nnz, const int* __restrict__ indptr,
    const int* __restrict__ indices, const T* __restrict__ values, const T* __restrict__ x,
    T* __restrict__ y) {
    (void)cols;
    const unsigned lane = threadIdx.x & 31u;
    const long long stride = sparserl_grid_threads();
    // t0 is the warp's first thread: the loop condition is uniform across the
    // warp, so every lane takes part in the shuffles below.
    for (long long t0 = sparserl_global_thread() - lane; t0 * ITEMS < nnz; t0 += stride) {
        const long long t = t0 + lane;
        const bool active = t * ITEMS < nnz;
        // Window of rows touched by this warp.
        const long long last64 = (t0 + 32) * ITEMS - 1;
        const int wfirst = (int)(t0 * ITEMS);
        const int wlast = last64 < nnz ? (int)last64 : nnz - 1;
        const int rlo = sparserl_warp_row_in(indptr, 0, rows - 1, wfirst, lane);
        const int rhi = sparserl_warp_row_in(indptr, rlo, rows - 1, wlast, lane);

        int row = -1;
        ACC sum = ACC(0);
        if (active) {
            const int begin = (int)(t * ITEMS);
            const long long end64 = t * ITEMS + ITEMS;
            const int end = end64 < nnz ? (int)end64 : nnz;
            row = sparserl_row_in(indptr, rlo, rhi, begin);
            int row_end = indptr[row + 1];
            if (end <= row_end) {
                // Fast path: the whole chunk lies in one row.
#pragma unroll 4
                for (int i = 0; i < ITEMS; ++i) {
                    const int k = begin + i;
                    if (k < end) {
                        sum += (ACC)values[k] * (ACC)load_x(x, indices[k]);
                    }
                }
            } else {
                // The chunk's first row is the lane's alone when it starts here.
                bool own = indptr[row] == begin;
                for (int k = begin; k < end; ++k) {
                    if (k >= row_end) {
                        if (own) {
                            sparserl_store_raw(y, row, (T)sum);
                        } else {
                            atomicAdd(&y[row], (T)sum);
                        }
                        own = true;  // every later row starts inside the chunk
                        sum = ACC(0);
                        // Skip empty rows; k < nnz = indptr[rows] bounds the walk.
                        do {
                            ++row;
                            row_end = indptr[row + 1];
                        } while (k >= row_end);
                    }
                    sum += (ACC)values[k] * (ACC)load_x(x, indices[k]);
                }
            }
        }
        // Segmented inclusive scan of the chunk-final partials by row. Inactive
        // lanes (row -1) sit at the end of the warp and form their own segment.
#pragma unroll
        for (int off = 1; off < 32; off <<= 1) {
            const ACC up = __shfl_up_sync(SPARSERL_FULL_MASK, sum, off);
            const int up_row = __shfl_up_sync(SPARSERL_FULL_MASK, row, off);
            if (lane >= (unsigned)off && up_row == row) {
                sum += up;
            }
        }
        const int next_row = __shfl_down_sync(SPARSERL_FULL_MASK, row, 1);
        if (active && (lane == 31 || next_row != row)) {
            atomicAdd(&y[row], (T)sum);
        }
    }
}
