// ---- nnz_split.cu: CSR SpMV, nnz-balanced: ITEMS consecutive nonzeros per thread ----
//
// Thread t owns the nonzeros [t*ITEMS, min(nnz, (t+1)*ITEMS)). Each warp finds
// the rows of its first and last nonzero (two binary searches over all rows,
// run by lanes 0 and 31 side by side); every lane then searches only that
// window for the row of its own first nonzero.
//
// When the block's tile fits in shared memory (BLOCK * ITEMS <= 4096), the
// warp first computes the products of its 32 * ITEMS nonzeros with coalesced
// loads (item i of lane l is nonzero warp_first + 32 i + l, so one load
// instruction reads 32 consecutive indices and values, and every lane has
// ITEMS independent x gathers in flight) and stages them in shared memory;
// each lane then reduces its own consecutive chunk from there. Otherwise the
// lanes read their chunks directly.
//
// A lane accumulates in double. A row that starts and ends inside the lane's
// chunk is stored to y; a row the lane shares with a neighbour is added to y
// with atomicAdd, and the partial of the row its chunk ends in is kept. Those
// chunk-final partials are combined across the warp by a segmented shuffle
// reduction (rows are non-decreasing with the lane index) and the last lane
// of each segment adds it to y: one atomic per row and warp instead of one per
// thread, which also keeps long rows accurate. y must be zeroed before the
// launch (rows without nonzeros are never written).

#if ITEMS < 1 || ITEMS > 16
#error "ITEMS must be in 1..=16"
#endif

#define SPARSERL_SPLIT_STAGE (BLOCK * ITEMS <= 4096)
#if SPARSERL_SPLIT_STAGE
// Index of the warp's q-th staged product, padded by one slot per 16 so that
// both the writes (q = 32 i + lane) and the reads (q = lane * ITEMS + j) of a
// half-warp fall in different banks for ITEMS in {4, 8, 16}.
#define SPARSERL_STAGE_SLOT(q) ((q) + ((q) >> 4))
#define SPARSERL_STAGE_LEN (32 * ITEMS + 2 * ITEMS)
#define SPARSERL_PRODUCT(k) stage[SPARSERL_STAGE_SLOT((k) - wfirst)]
#else
#define SPARSERL_PRODUCT(k) ((ACC)values[k] * (ACC)load_x(x, indices[k]))
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
#if SPARSERL_SPLIT_STAGE
    __shared__ ACC stage_all[BLOCK / 32][SPARSERL_STAGE_LEN];
    ACC* const stage = stage_all[threadIdx.x >> 5];
#endif
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
#if SPARSERL_SPLIT_STAGE
#pragma unroll
        for (int i = 0; i < ITEMS; ++i) {
            const int q = 32 * i + (int)lane;
            const long long k = (long long)wfirst + q;
            ACC p = ACC(0);
            if (k < nnz) {
                p = (ACC)values[k] * (ACC)load_x(x, indices[k]);
            }
            stage[SPARSERL_STAGE_SLOT(q)] = p;
        }
        __syncwarp();
#endif

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
                        sum += SPARSERL_PRODUCT(k);
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
                    sum += SPARSERL_PRODUCT(k);
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
#if SPARSERL_SPLIT_STAGE
        __syncwarp();  // every lane has read the stage before it is refilled
#endif
    }
}

#undef SPARSERL_PRODUCT
#undef SPARSERL_SPLIT_STAGE
#if defined(SPARSERL_STAGE_SLOT)
#undef SPARSERL_STAGE_SLOT
#undef SPARSERL_STAGE_LEN
#endif
