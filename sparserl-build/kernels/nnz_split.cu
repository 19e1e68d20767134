// ---- nnz_split.cu: CSR SpMV, nnz-balanced: ITEMS consecutive nonzeros per thread ----
//
// Thread t owns the nonzeros [t*ITEMS, min(nnz, (t+1)*ITEMS)). Each warp finds
// the rows of its first and last nonzero (two binary searches over all rows,
// run by lanes 0 and 31 side by side); every lane then searches only that
// window for the row of its own first nonzero. A lane accumulates in double,
// adds the partial sum of every row that ends inside its chunk to y with
// atomicAdd, and keeps the partial of the row its chunk ends in. Those
// chunk-final partials are combined across the warp by a segmented shuffle
// reduction (rows are non-decreasing with the lane index) and the last lane
// of each segment adds it to y: one atomic per row and warp instead of one per
// thread, which also keeps long rows accurate. y must be zeroed before the launch.

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
        int bound = 0;
        if (lane == 0) {
            bound = sparserl_row_in(indptr, 0, rows - 1, wfirst);
        } else if (lane == 31) {
            bound = sparserl_row_in(indptr, 0, rows - 1, wlast);
        }
        const int rlo = __shfl_sync(SPARSERL_FULL_MASK, bound, 0);
        const int rhi = __shfl_sync(SPARSERL_FULL_MASK, bound, 31);

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
                for (int k = begin; k < end; ++k) {
                    if (k >= row_end) {
                        atomicAdd(&y[row], (T)sum);
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
