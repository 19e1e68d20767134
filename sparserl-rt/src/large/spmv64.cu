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
//       stream). Each thread loads its nonzeros' products before the merge
//       walk, so that all its x gathers are in flight at once.
//   sparserl_large_nnz<ITEMS>_<o>_<t>(rows, nnz, indptr, indices, values, x, y)
//       nnz-split: ITEMS consecutive nonzeros per lane, products loaded
//       first, a 32-way warp search of the warp's rows, a segmented shuffle
//       reduction and one atomicAdd per row and warp (y cleared first).
//   sparserl_large_stream<TILE>_<o>_<t>(rows, nnz, indptr, indices, values, x, y)
//       nonzero tiles (CSR-stream after sparserl-build/kernels/tiled.cu, the
//       tiles found on the fly): one block per TILE consecutive nonzeros,
//       loaded coalesced with every gather in flight, the products summed
//       per row from shared memory; rows cut at a tile edge added
//       atomically (y cleared first).
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
__device__ __forceinline__ void large_group(u64 rows, u64 nnz, const O* __restrict__ indptr,
                                            const u32* __restrict__ indices,
                                            const T* __restrict__ values,
                                            const T* __restrict__ x, T* __restrict__ y) {
    (void)nnz;  // every entry has the same parameters
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
    // Every lane (also one past the end) finds its start inside the warp's
    // range; the next lane's start is this lane's end.
    const u64 d0 = min(tid * ITEMS, total);
    const u64 lo = max(row_lo, d0 > nnz ? d0 - nnz : 0ull);
    const u64 hi = min(row_hi, min(d0, rows));
    u64 row = large_merge_split(d0, lo, hi, indptr);
    const u64 k0 = d0 - row;
    u64 row1 = __shfl_down_sync(0xffffffffu, row, 1);
    if (lane == 31) {
        row1 = row_hi;
    }
    const u64 k1 = min(tid * ITEMS + ITEMS, total) - row1;  // = next lane's k0
    if (tid * ITEMS >= total || row >= rows) {
        return;  // past the end, or only row ends past the last row
    }
    // The thread's nonzeros [k0, k1) (at most ITEMS): every gather issued
    // before the merge logic that consumes them.
    double prod[ITEMS];
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
        const u64 k = k0 + i;
        prod[i] = k < k1 ? (double)values[k] * (double)__ldg(x + indices[k]) : 0.0;
    }
    bool owned = k0 == (u64)indptr[row];  // no earlier thread touched the row
    bool touched = false;
    u64 row_end = (u64)indptr[row + 1];
    double acc = 0.0;
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
        const u64 k = k0 + i;
        if (k < k1) {
            // Rows that end before nonzero k (empty ones included).
            while (k >= row_end) {
                if (owned) {
                    y[row] = (T)acc;
                } else if (touched) {
                    atomicAdd(y + row, (T)acc);
                }
                acc = 0.0;
                touched = false;
                owned = true;
                ++row;
                row_end = (u64)indptr[row + 1];
            }
            acc += prod[i];
            touched = true;
        }
    }
    // Row ends after the last nonzero, up to this thread's end.
    while (row < row1) {
        if (owned) {
            y[row] = (T)acc;
        } else if (touched) {
            atomicAdd(y + row, (T)acc);
        }
        acc = 0.0;
        touched = false;
        owned = true;
        ++row;
    }
    if (touched) {
        atomicAdd(y + row, (T)acc);  // cut at the thread's end
    }
}

// ---- nnz-split: ITEMS consecutive nonzeros per lane (after
// sparserl-build/kernels/nnz_split.cu, with 64-bit offsets) ----

// The last row r in [lo, hi] with indptr[r] <= k (requires indptr[lo] <= k):
// for k < nnz the non-empty row holding nonzero k.
template <typename O>
__device__ __forceinline__ u64 large_row_in(const O* __restrict__ indptr, u64 lo, u64 hi, u64 k) {
    while (lo < hi) {
        const u64 mid = lo + (hi - lo + 1) / 2;
        if ((u64)indptr[mid] <= k) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    return lo;
}

// The same for a whole warp (every lane the same arguments, the same
// answer): each round the 32 lanes probe 32 row pointers spread over
// (lo, hi] and a ballot narrows the range to one gap between probes.
template <typename O>
__device__ __forceinline__ u64 large_warp_row_in(const O* __restrict__ indptr, u64 lo, u64 hi,
                                                 u64 k, u32 lane) {
    while (hi - lo >= 32) {
        const u64 span = hi - lo;
        // Probe j at lo + (j + 1) span / 32: increasing, the last at hi
        // (span < 2^32 rows: the products fit 64 bits).
        const u64 probe = lo + ((u64)lane + 1) * span / 32;
        const u32 n = __popc(__ballot_sync(0xffffffffu, (u64)indptr[probe] <= k));
        const u64 new_lo = n > 0 ? lo + (u64)n * span / 32 : lo;
        hi = n < 32 ? lo + ((u64)n + 1) * span / 32 - 1 : hi;
        lo = new_lo;
    }
    const u64 r = lo + lane;
    // indptr[lo] <= k, so at least lane 0 votes.
    return lo - 1 + __popc(__ballot_sync(0xffffffffu, r <= hi && (u64)indptr[r] <= k));
}

// One lane per ITEMS nonzeros, no grid stride (one launch covers nnz /
// ITEMS lanes). The lane's products are loaded first (its nonzeros are
// known before any search), then the warp finds the rows of its first and
// last nonzero, each lane its first row inside that window. A row that
// starts and ends inside the lane's chunk is stored; one it shares with
// the previous lane is added atomically; the chunk-final partials are
// combined across the warp by a segmented shuffle scan and the last lane
// of each segment adds it: one atomic per row and warp. y must be zero
// before the launch (empty rows are never written).
template <typename O, typename T, int ITEMS>
__device__ __forceinline__ void large_nnz(u64 rows, u64 nnz, const O* __restrict__ indptr,
                                          const u32* __restrict__ indices,
                                          const T* __restrict__ values,
                                          const T* __restrict__ x, T* __restrict__ y) {
    const u32 lane = threadIdx.x & 31u;
    const u64 t = (u64)blockIdx.x * LARGE_BLOCK + threadIdx.x;
    const u64 t0 = t - lane;
    if (t0 * ITEMS >= nnz) {
        return;  // whole warp
    }
    const bool active = t * ITEMS < nnz;
    const u64 begin = min(t * ITEMS, nnz);
    const u64 end = min(begin + ITEMS, nnz);
    double prod[ITEMS];
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
        const u64 k = begin + i;
        prod[i] = k < end ? (double)values[k] * (double)__ldg(x + indices[k]) : 0.0;
    }
    const u64 wlast = min((t0 + 32) * ITEMS, nnz) - 1;
    const u64 rlo = large_warp_row_in(indptr, 0, rows - 1, t0 * ITEMS, lane);
    const u64 rhi = large_warp_row_in(indptr, rlo, rows - 1, wlast, lane);
    u64 row = ~0ull;
    double sum = 0.0;
    if (active) {
        row = large_row_in(indptr, rlo, rhi, begin);
        u64 row_end = (u64)indptr[row + 1];
        bool own = (u64)indptr[row] == begin;  // the chunk starts the row
#pragma unroll
        for (int i = 0; i < ITEMS; ++i) {
            const u64 k = begin + i;
            if (k < end) {
                if (k >= row_end) {
                    if (own) {
                        y[row] = (T)sum;
                    } else {
                        atomicAdd(y + row, (T)sum);
                    }
                    own = true;  // every later row starts inside the chunk
                    sum = 0.0;
                    // Skip empty rows; k < nnz = indptr[rows] bounds the walk.
                    do {
                        ++row;
                        row_end = (u64)indptr[row + 1];
                    } while (k >= row_end);
                }
                sum += prod[i];
            }
        }
    }
    // Segmented inclusive scan of the chunk-final partials by row (rows
    // nondecreasing with the lane; inactive lanes, row ~0, at the end).
#pragma unroll
    for (int off = 1; off < 32; off <<= 1) {
        const double up = __shfl_up_sync(0xffffffffu, sum, off);
        const u64 up_row = __shfl_up_sync(0xffffffffu, row, off);
        if (lane >= (u32)off && up_row == row) {
            sum += up;
        }
    }
    const u64 next_row = __shfl_down_sync(0xffffffffu, row, 1);
    if (active && (lane == 31 || next_row != row)) {
        atomicAdd(y + row, (T)sum);
    }
}

// ---- stream: one block per tile of TILE consecutive nonzeros ----

// The largest power of two <= LARGE_BLOCK / rows, clamped to 1..=32: the
// lanes per row of a tile with `rows` rows (uniform across the block).
__device__ __forceinline__ u32 large_stream_lanes(u64 rows) {
    const u64 q = LARGE_BLOCK / rows;
    if (q >= 32) {
        return 32;
    }
    u32 g = 1;
    while ((u64)g * 2 <= q) {
        g *= 2;
    }
    return g;
}

// Stores (row wholly inside the tile) or atomically adds (row cut at a tile
// edge) a row's sum; y is cleared before the launch.
template <typename T>
__device__ __forceinline__ void large_stream_out(T* __restrict__ y, u64 r, bool whole, double acc) {
    if (whole) {
        y[r] = (T)acc;
    } else {
        atomicAdd(y + r, (T)acc);
    }
}

// Phase 2 with G lanes per row: each group sums the tile part [a, b) of
// its rows from the products in shared memory; a part longer than 8 G is
// listed in `longs` for whole warps (G < 32), so one long row does not
// hold the block. Rows with no nonzero in the tile are skipped (y is 0).
template <typename O, typename T, int G>
__device__ __forceinline__ void large_stream_rows(u64 r0, u64 r1, u64 kb, u64 ke,
                                                  const O* __restrict__ indptr, const T* prod,
                                                  u32* longs, u32* n_long, T* __restrict__ y) {
    const u32 gl = threadIdx.x % G;
    const unsigned mask = large_group_mask<G>();
    for (u64 r = r0 + threadIdx.x / G; r <= r1; r += LARGE_BLOCK / G) {
        const u64 s = (u64)indptr[r];
        const u64 e = (u64)indptr[r + 1];
        const u64 a = max(s, kb);
        const u64 b = min(e, ke);
        if (b <= a) {
            continue;
        }
        if (G < 32 && b - a > 8 * G) {
            if (gl == 0) {
                longs[atomicAdd(n_long, 1u)] = (u32)(r - r0);
            }
            continue;
        }
        double acc = 0.0;
        for (u64 k = a + gl; k < b; k += G) {
            acc += (double)prod[k - kb];
        }
#pragma unroll
        for (int off = G / 2; off > 0; off >>= 1) {
            acc += __shfl_down_sync(mask, acc, off, G);
        }
        if (gl == 0) {
            large_stream_out(y, r, s >= kb && e <= ke, acc);
        }
    }
}

// Phase 1: the tile's PER = TILE / LARGE_BLOCK nonzeros per thread, loaded
// coalesced, every gather of x issued before any
// product is stored (in T, rounded once) to shared memory; warps 0 and 1
// first find the rows of the tile's first and last nonzero. Phase 2:
// the rows of [r0, r1], G = large_stream_lanes(rows) lanes per row, then
// the listed long rows a warp each. A tile never holds more than TILE rows
// with nonzeros in it, and at most TILE / 9 long ones.
template <typename O, typename T, int TILE>
__device__ __forceinline__ void large_stream(u64 rows, u64 nnz, const O* __restrict__ indptr,
                                             const u32* __restrict__ indices,
                                             const T* __restrict__ values,
                                             const T* __restrict__ x, T* __restrict__ y) {
    constexpr int PER = TILE / LARGE_BLOCK;
    __shared__ T prod[TILE];
    __shared__ u32 longs[TILE / 8];
    __shared__ u64 ends[2];
    __shared__ u32 n_long;
    const u64 kb = (u64)blockIdx.x * TILE;
    if (kb >= nnz) {
        return;  // whole block
    }
    const u64 ke = min(kb + (u64)TILE, nnz);
    const u32 lane = threadIdx.x & 31u;
    const u32 warp = threadIdx.x >> 5;
    // Warps 0 and 1 search first (dependent loads), while the others start
    // their gathers.
    if (warp < 2) {
        const u64 r = large_warp_row_in(indptr, 0, rows - 1, warp == 0 ? kb : ke - 1, lane);
        if (lane == 0) {
            ends[warp] = r;
        }
    }
    if (threadIdx.x == 0) {
        n_long = 0;
    }
    // Columns, then their gathers, then the values (issued behind the
    // gathers, still all in flight together: fewer registers live); doubles
    // in passes of at most 4 per thread, which keeps them in registers.
    constexpr int PASS = sizeof(T) == 8 && PER > 4 ? 4 : PER;
#pragma unroll
    for (int p0 = 0; p0 < PER; p0 += PASS) {
        u32 c[PASS];
#pragma unroll
        for (int i = 0; i < PASS; ++i) {
            const u64 k = kb + (u64)((p0 + i) * LARGE_BLOCK) + threadIdx.x;
            c[i] = k < ke ? indices[k] : 0u;
        }
        T xv[PASS];
#pragma unroll
        for (int i = 0; i < PASS; ++i) {
            xv[i] = __ldg(x + c[i]);  // column 0 past the tile: read, never summed
        }
#pragma unroll
        for (int i = 0; i < PASS; ++i) {
            const u64 k = kb + (u64)((p0 + i) * LARGE_BLOCK) + threadIdx.x;
            const T v = k < ke ? values[k] : (T)0;
            prod[(p0 + i) * LARGE_BLOCK + threadIdx.x] = v * xv[i];
        }
    }
    __syncthreads();
    const u64 r0 = ends[0];
    const u64 r1 = ends[1];
    switch (large_stream_lanes(r1 - r0 + 1)) {
        case 1: large_stream_rows<O, T, 1>(r0, r1, kb, ke, indptr, prod, longs, &n_long, y); break;
        case 2: large_stream_rows<O, T, 2>(r0, r1, kb, ke, indptr, prod, longs, &n_long, y); break;
        case 4: large_stream_rows<O, T, 4>(r0, r1, kb, ke, indptr, prod, longs, &n_long, y); break;
        case 8: large_stream_rows<O, T, 8>(r0, r1, kb, ke, indptr, prod, longs, &n_long, y); break;
        case 16: large_stream_rows<O, T, 16>(r0, r1, kb, ke, indptr, prod, longs, &n_long, y); break;
        default: large_stream_rows<O, T, 32>(r0, r1, kb, ke, indptr, prod, longs, &n_long, y); break;
    }
    __syncthreads();
    for (u32 i = warp; i < n_long; i += LARGE_BLOCK / 32) {
        const u64 r = r0 + longs[i];
        const u64 s = (u64)indptr[r];
        const u64 e = (u64)indptr[r + 1];
        const u64 a = max(s, kb);
        const u64 b = min(e, ke);
        double acc = 0.0;
        for (u64 k = a + lane; k < b; k += 32) {
            acc += (double)prod[k - kb];
        }
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) {
            acc += __shfl_down_sync(0xffffffffu, acc, off);
        }
        if (lane == 0) {
            large_stream_out(y, r, s >= kb && e <= ke, acc);
        }
    }
}

// One entry: sparserl_large_<KIND><P>_<o>_<t>, calling large_<KIND><O, T, P>.
#define LARGE_ENTRY(KIND, P, O, ON, T, TN)                                                 \
    extern "C" __global__ void __launch_bounds__(LARGE_BLOCK)                              \
        sparserl_large_##KIND##P##_##ON##_##TN(u64 rows, u64 nnz, const O* indptr,         \
                                               const u32* indices, const T* values,        \
                                               const T* x, T* y) {                         \
        large_##KIND<O, T, P>(rows, nnz, indptr, indices, values, x, y);                   \
    }

#define LARGE_ENTRIES(O, ON, T, TN)           \
    LARGE_ENTRY(group, 1, O, ON, T, TN)       \
    LARGE_ENTRY(group, 4, O, ON, T, TN)       \
    LARGE_ENTRY(group, 8, O, ON, T, TN)       \
    LARGE_ENTRY(group, 32, O, ON, T, TN)      \
    LARGE_ENTRY(merge, 8, O, ON, T, TN)       \
    LARGE_ENTRY(merge, 16, O, ON, T, TN)      \
    LARGE_ENTRY(nnz, 8, O, ON, T, TN)         \
    LARGE_ENTRY(stream, 1024, O, ON, T, TN)   \
    LARGE_ENTRY(stream, 2048, O, ON, T, TN)

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
