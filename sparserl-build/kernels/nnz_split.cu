// ---- nnz_split.cu: CSR SpMV, nnz-balanced: ITEMS consecutive nonzeros per thread ----
//
// Thread t owns the nonzeros [t*ITEMS, min(nnz, (t+1)*ITEMS)). It finds the row
// holding its first nonzero by binary search over indptr, accumulates, and adds
// each partial row sum to y with atomicAdd when it leaves a row and at the end
// of its chunk. y must be zeroed before the launch.

#if ITEMS < 1 || ITEMS > 16
#error "ITEMS must be in 1..=16"
#endif

// The last row r in [0, rows) with indptr[r] <= k. For 0 <= k < nnz this is the
// (non-empty) row holding nonzero k: empty rows before it are skipped.
__device__ __forceinline__ int sparserl_row_of(const int* __restrict__ indptr, int rows, int k) {
    int lo = 0;
    int hi = rows - 1;
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
    const long long stride = sparserl_grid_threads();
    for (long long t = sparserl_global_thread(); t * ITEMS < nnz; t += stride) {
        const int begin = (int)(t * ITEMS);
        const long long end64 = t * ITEMS + ITEMS;
        const int end = end64 < nnz ? (int)end64 : nnz;
        int row = sparserl_row_of(indptr, rows, begin);
        int row_end = indptr[row + 1];
        ACC sum = ACC(0);
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
        atomicAdd(&y[row], (T)sum);
    }
}
