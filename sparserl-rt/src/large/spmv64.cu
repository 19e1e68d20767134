// ---- spmv64.cu: SpMV y = A x for matrices past the 32-bit path ----
//
// Row pointers are O (unsigned 32- or 64-bit), column indices unsigned
// 32-bit, values / x / y of T (float or double). Every offset, row id and
// loop counter is 64-bit: nonzero positions go past 2^32 and rows + nnz past
// 2^33. Products are accumulated in double for both value types (the house
// rule of sparserl-build/kernels/common.cuh: a memory-bound kernel pays
// nothing for the wider arithmetic).
//
// Entries (extern "C", one per strategy x offset width x value type):
//   sparserl_large_group<G>_<o>_<t>(rows, nnz, indptr, indices, values, x, y)
//       G lanes per row (G = 1: one thread per row), grid-stride over rows.
//   sparserl_large_merge<ITEMS>_<o>_<t>(rows, nnz, indptr, indices, values, x, y)
//       merge path: the rows + nnz items (row ends and nonzeros) cut into
//       equal runs of ITEMS per thread; a warp finds its start and end on the
//       merge path by binary search over the whole matrix, each lane its own
//       start within the warp's range. A row completed inside one thread is
//       stored; a row cut by a thread boundary is added with atomicAdd, so y
//       must be zero before the launch (the host clears it in the same
//       stream).
//   sparserl_large_widen_<o>(n, src, dst): dst[i] = (long long)src[i], for
//       a vendor library's 64-bit index arrays.
//   sparserl_large_scale_<t>(n, x, w, out): out[i] = x[i] * w[i].
//   sparserl_large_axpb_<t>(n, alpha, y, beta, out): out[i] = alpha y[i] + beta.
//   sparserl_large_fill_<t>(n, v, out): out[i] = v (a NaN poison before a check).

typedef unsigned long long u64;
typedef unsigned int u32;

#define LARGE_BLOCK 256

template <int G>
__device__ __forceinline__ unsigned large_group_mask() {
    if (G >= 32) {
        return 0xffffffffu;
    }
    const unsigned lane = threadIdx.x & 31u;
    const unsigned base = lane & ~(unsigned)(G - 1);
    return ((1u << (G & 31)) - 1u) << base;
}

// G lanes per row; all lanes of a group see the same rows, so the group's
// shuffle mask is exact even when other groups of the warp have finished.
template <typename O, typename T, int G>
__device__ __forceinline__ void large_group(u64 rows, const O* __restrict__ indptr,
                                            const u32* __restrict__ indices,
                                            const T* __restrict__ values,
                                            const T* __restrict__ x, T* __restrict__ y) {
    const u64 tid = (u64)blockIdx.x * LARGE_BLOCK + threadIdx.x;
    const u64 groups = ((u64)gridDim.x * LARGE_BLOCK) / G;
    const u32 lane = (u32)(threadIdx.x % G);
    const unsigned mask = large_group_mask<G>();
    for (u64 r = tid / G; r < rows; r += groups) {
        const u64 s = (u64)indptr[r];
        const u64 e = (u64)indptr[r + 1];
        double acc0 = 0.0, acc1 = 0.0;
        u64 k = s + lane;
        for (; k + G < e; k += 2 * G) {
            acc0 += (double)values[k] * (double)__ldg(x + indices[k]);
            acc1 += (double)values[k + G] * (double)__ldg(x + indices[k + G]);
        }
        if (k < e) {
            acc0 += (double)values[k] * (double)__ldg(x + indices[k]);
        }
        double acc = acc0 + acc1;
#pragma unroll
        for (int off = G / 2; off > 0; off >>= 1) {
            acc += __shfl_down_sync(mask, acc, off, G);
        }
        if (lane == 0) {
            y[r] = (T)acc;
        }
    }
}

// The merge-path split of diagonal d: the number of row ends among the first
// d items, searched in [lo, hi] (row ends A[i] = indptr[i + 1], nonzeros
// B[j] = j; a row end i comes before nonzero j when A[i] <= j).
template <typename O>
__device__ __forceinline__ u64 large_merge_split(u64 d, u64 lo, u64 hi,
                                                 const O* __restrict__ indptr) {
    while (lo < hi) {
        const u64 pivot = (lo + hi) >> 1;
        if ((u64)indptr[pivot + 1] <= d - pivot - 1) {
            lo = pivot + 1;
        } else {
            hi = pivot;
        }
    }
    return lo;
}

template <typename O, typename T, int ITEMS>
__device__ __forceinline__ void large_merge(u64 rows, u64 nnz, const O* __restrict__ indptr,
                                            const u32* __restrict__ indices,
                                            const T* __restrict__ values,
                                            const T* __restrict__ x, T* __restrict__ y) {
    const u64 total = rows + nnz;
    const u64 tid = (u64)blockIdx.x * LARGE_BLOCK + threadIdx.x;
    const u32 lane = threadIdx.x & 31u;
    const u64 warp_d0 = (tid - lane) * ITEMS;
    if (warp_d0 >= total) {
        return;  // whole warp: no shuffle below is left waiting
    }
    const u64 warp_d1 = min(warp_d0 + 32ull * ITEMS, total);
    // Lanes 0 and 1 search the warp's two ends over the whole matrix.
    u64 mine = 0;
    if (lane < 2) {
        const u64 d = lane == 0 ? warp_d0 : warp_d1;
        mine = large_merge_split(d, d > nnz ? d - nnz : 0, min(d, rows), indptr);
    }
    const u64 row_lo = __shfl_sync(0xffffffffu, mine, 0);
    const u64 row_hi = __shfl_sync(0xffffffffu, mine, 1);
    const u64 d0 = tid * ITEMS;
    if (d0 >= total) {
        return;
    }
    const u64 d1 = min(d0 + ITEMS, total);
    const u64 lo = max(row_lo, d0 > nnz ? d0 - nnz : 0ull);
    const u64 hi = min(row_hi, min(d0, rows));
    u64 row = large_merge_split(d0, lo, hi, indptr);
    u64 k = d0 - row;
    if (row >= rows) {
        return;  // only row ends past the last row: nothing left
    }
    bool owned = k == (u64)indptr[row];  // no earlier thread touched the row
    bool touched = false;
    u64 row_end = (u64)indptr[row + 1];
    double acc = 0.0;
    for (u64 d = d0; d < d1; ++d) {
        if (k < row_end) {
            acc += (double)values[k] * (double)__ldg(x + indices[k]);
            ++k;
            touched = true;
        } else {
            if (owned) {
                y[row] = (T)acc;
            } else if (touched) {
                atomicAdd(y + row, (T)acc);
            }
            acc = 0.0;
            touched = false;
            owned = true;
            ++row;
            if (row >= rows) {
                return;
            }
            row_end = (u64)indptr[row + 1];
        }
    }
    if (touched) {
        atomicAdd(y + row, (T)acc);
    }
}

#define LARGE_GROUP_ENTRY(G, O, ON, T, TN)                                                 \
    extern "C" __global__ void __launch_bounds__(LARGE_BLOCK)                              \
        sparserl_large_group##G##_##ON##_##TN(u64 rows, u64 nnz, const O* indptr,          \
                                              const u32* indices, const T* values,         \
                                              const T* x, T* y) {                          \
        (void)nnz;                                                                         \
        large_group<O, T, G>(rows, indptr, indices, values, x, y);                         \
    }

#define LARGE_MERGE_ENTRY(ITEMS, O, ON, T, TN)                                             \
    extern "C" __global__ void __launch_bounds__(LARGE_BLOCK)                              \
        sparserl_large_merge##ITEMS##_##ON##_##TN(u64 rows, u64 nnz, const O* indptr,      \
                                                  const u32* indices, const T* values,     \
                                                  const T* x, T* y) {                      \
        large_merge<O, T, ITEMS>(rows, nnz, indptr, indices, values, x, y);                \
    }

#define LARGE_ENTRIES(O, ON, T, TN)        \
    LARGE_GROUP_ENTRY(1, O, ON, T, TN)     \
    LARGE_GROUP_ENTRY(4, O, ON, T, TN)     \
    LARGE_GROUP_ENTRY(8, O, ON, T, TN)     \
    LARGE_GROUP_ENTRY(32, O, ON, T, TN)    \
    LARGE_MERGE_ENTRY(8, O, ON, T, TN)     \
    LARGE_MERGE_ENTRY(16, O, ON, T, TN)

LARGE_ENTRIES(u32, u32, float, f32)
LARGE_ENTRIES(u64, u64, float, f32)
LARGE_ENTRIES(u32, u32, double, f64)
LARGE_ENTRIES(u64, u64, double, f64)

#define LARGE_WIDEN_ENTRY(O, ON)                                                           \
    extern "C" __global__ void __launch_bounds__(LARGE_BLOCK)                              \
        sparserl_large_widen_##ON(u64 n, const O* __restrict__ src,                        \
                                  long long* __restrict__ dst) {                           \
        const u64 stride = (u64)gridDim.x * LARGE_BLOCK;                                   \
        for (u64 i = (u64)blockIdx.x * LARGE_BLOCK + threadIdx.x; i < n; i += stride) {    \
            dst[i] = (long long)src[i];                                                    \
        }                                                                                  \
    }

LARGE_WIDEN_ENTRY(u32, u32)
LARGE_WIDEN_ENTRY(u64, u64)

#define LARGE_VECTOR_ENTRIES(T, TN)                                                        \
    extern "C" __global__ void __launch_bounds__(LARGE_BLOCK)                              \
        sparserl_large_scale_##TN(u64 n, const T* __restrict__ x, const T* __restrict__ w, \
                                  T* __restrict__ out) {                                   \
        const u64 stride = (u64)gridDim.x * LARGE_BLOCK;                                   \
        for (u64 i = (u64)blockIdx.x * LARGE_BLOCK + threadIdx.x; i < n; i += stride) {    \
            out[i] = x[i] * w[i];                                                          \
        }                                                                                  \
    }                                                                                      \
    extern "C" __global__ void __launch_bounds__(LARGE_BLOCK)                              \
        sparserl_large_axpb_##TN(u64 n, T alpha, const T* __restrict__ y, T beta,          \
                                 T* __restrict__ out) {                                    \
        const u64 stride = (u64)gridDim.x * LARGE_BLOCK;                                   \
        for (u64 i = (u64)blockIdx.x * LARGE_BLOCK + threadIdx.x; i < n; i += stride) {    \
            out[i] = alpha * y[i] + beta;                                                  \
        }                                                                                  \
    }                                                                                      \
    extern "C" __global__ void __launch_bounds__(LARGE_BLOCK)                              \
        sparserl_large_fill_##TN(u64 n, T v, T* __restrict__ out) {                        \
        const u64 stride = (u64)gridDim.x * LARGE_BLOCK;                                   \
        for (u64 i = (u64)blockIdx.x * LARGE_BLOCK + threadIdx.x; i < n; i += stride) {    \
            out[i] = v;                                                                    \
        }                                                                                  \
    }

LARGE_VECTOR_ENTRIES(float, f32)
LARGE_VECTOR_ENTRIES(double, f64)
