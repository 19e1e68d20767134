// ---- floor.cu: the X-row gather floor of a CSR SpMM (microbenchmark) ----
//
// The memory traffic every CSR SpMM Y = A X (X and Y with n columns) must
// do, in the order the matrix numbers its nonzeros, without any row
// structure: the row pointers, column indices and values streamed once; for
// every nonzero k the whole row indices[k] of X gathered (n values; a 32-byte
// sector per 8 f32 / 4 f64 of a row-major row, a sector per value of a
// column-major one); Y (rows x n values) written once. Nothing is reused
// between nonzeros except what L1 and L2 keep by themselves. The result is
// no SpMM; only the traffic and its order are.
//
// Mapping (row-major; column-major: spmm_floor_col below): a group of G
// lanes per nonzero (G = the power of two covering n / VW lanes, at most 32),
// each lane loading VW consecutive values of the row
// at a time (float4 / double2 for row-major rows when n is a multiple of VW,
// scalars otherwise); groups are numbered over the whole grid and walk the
// nonzeros with a grid stride, so neighbouring groups read neighbouring
// nonzeros (coalesced index and value loads, X rows gathered in CSR order),
// UNROLL nonzeros in flight per group. Each lane sums what it loaded into
// one accumulator; afterwards every thread writes its grid-stride share of
// Y (as one flat array of rows x n values: both layouts store Y tightly) and
// of the row pointers folded in, so no load is dead.
//
// Entries: sparserl_spmm_floor_{f32,f64}_{row,col}_v{1,2,4}. Nothing is
// included: NVRTC compiles this file alone.

#define FLOOR_BLOCK 256
#define FLOOR_UNROLL 4

template <typename V, int VW> struct Vec;
template <> struct Vec<float, 1> { typedef float T; };
template <> struct Vec<float, 4> { typedef float4 T; };
template <> struct Vec<double, 1> { typedef double T; };
template <> struct Vec<double, 2> { typedef double2 T; };

__device__ __forceinline__ float vsum(float v) { return v; }
__device__ __forceinline__ float vsum(float4 v) { return (v.x + v.y) + (v.z + v.w); }
__device__ __forceinline__ double vsum(double v) { return v; }
__device__ __forceinline__ double vsum(double2 v) { return v.x + v.y; }

// Sum of one lane's share of X row `c` (row-major: values c*ldx + j;
// column-major: values j*ldx + c), columns j = lane*VW + t*G*VW.
template <typename V, int VW, bool ROW>
__device__ __forceinline__ V row_share(const V* __restrict__ x, long long ldx, int c, int n,
                                       int lane, int g) {
    typedef typename Vec<V, VW>::T VT;
    V s = V(0);
    for (int j = lane * VW; j < n; j += g * VW) {
        if (ROW) {
            s += vsum(__ldg(reinterpret_cast<const VT*>(x + (long long)c * ldx + j)));
        } else {
            s += __ldg(x + (long long)j * ldx + c);
        }
    }
    return s;
}

template <typename V, int VW, bool ROW>
__device__ __forceinline__ void spmm_floor(const int* __restrict__ indptr,
                                           const int* __restrict__ indices,
                                           const V* __restrict__ values,
                                           const V* __restrict__ x, long long ldx,
                                           V* __restrict__ y, int rows, int nnz, int n,
                                           int g) {
    const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long threads = (long long)gridDim.x * blockDim.x;
    const int lane = threadIdx.x % g;
    const long long group = tid / g;
    const long long groups = threads / g;
    V acc = V(0);
    long long k = group;
    for (; k + (FLOOR_UNROLL - 1) * groups < nnz; k += FLOOR_UNROLL * groups) {
        int c[FLOOR_UNROLL];
        V a[FLOOR_UNROLL];
#pragma unroll
        for (int u = 0; u < FLOOR_UNROLL; ++u) {
            c[u] = indices[k + u * groups];
            a[u] = values[k + u * groups];
        }
#pragma unroll
        for (int u = 0; u < FLOOR_UNROLL; ++u) {
            acc += a[u] * row_share<V, VW, ROW>(x, ldx, c[u], n, lane, g);
        }
    }
    for (; k < nnz; k += groups) {
        acc += values[k] * row_share<V, VW, ROW>(x, ldx, indices[k], n, lane, g);
    }
    const long long total = (long long)rows * n;
    for (long long e = tid; e < total; e += threads) {
        y[e] = acc;
    }
    for (long long i = tid; i <= rows; i += threads) {
        const int p = indptr[i];
        if (p < 0) {
            // Never taken for a valid CSR matrix; keeps the row pointers' loads live.
            y[0] = acc;
        }
    }
}

// Column-major X: one lane per (nonzero, chunk of FLOOR_COL_CHUNK columns),
// neighbouring lanes on neighbouring nonzeros of the same chunk, so a warp
// reads one column of X for 32 neighbouring nonzeros at a time with every
// (nonzero, chunk) pair in parallel (a lane looping over all n columns of its
// nonzero made the floor a latency chain on small matrices: 45x above
// cuSPARSE's time). The chunk's loads are independent (all in flight); the
// nonzero's index and value are read once per chunk.
#define FLOOR_COL_CHUNK 8

template <typename V>
__device__ __forceinline__ void spmm_floor_col(const int* __restrict__ indptr,
                                               const int* __restrict__ indices,
                                               const V* __restrict__ values,
                                               const V* __restrict__ x, long long ldx,
                                               V* __restrict__ y, int rows, int nnz, int n) {
    const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long threads = (long long)gridDim.x * blockDim.x;
    const long long chunks = (n + FLOOR_COL_CHUNK - 1) / FLOOR_COL_CHUNK;
    const long long items = (long long)nnz * chunks;
    V acc = V(0);
    for (long long e = tid; e < items; e += threads) {
        const int k = (int)(e % nnz);
        const int j0 = (int)(e / nnz) * FLOOR_COL_CHUNK;
        const int c = indices[k];
        V s = V(0);
#pragma unroll
        for (int t = 0; t < FLOOR_COL_CHUNK; ++t) {
            if (j0 + t < n) {
                s += __ldg(x + (long long)(j0 + t) * ldx + c);
            }
        }
        acc += values[k] * s;
    }
    const long long total = (long long)rows * n;
    for (long long e = tid; e < total; e += threads) {
        y[e] = acc;
    }
    for (long long i = tid; i <= rows; i += threads) {
        if (indptr[i] < 0) {
            // Never taken for a valid CSR matrix; keeps the row pointers' loads live.
            y[0] = acc;
        }
    }
}

#define FLOOR_ENTRY(NAME, V, VW, ROW)                                                          \
    extern "C" __global__ void __launch_bounds__(FLOOR_BLOCK)                                  \
        NAME(const int* __restrict__ indptr, const int* __restrict__ indices,                  \
             const V* __restrict__ values, const V* __restrict__ x, const long long ldx,       \
             V* __restrict__ y, const int rows, const int nnz, const int n, const int g) {     \
        if (ROW) {                                                                             \
            spmm_floor<V, VW, ROW>(indptr, indices, values, x, ldx, y, rows, nnz, n, g);       \
        } else {                                                                               \
            spmm_floor_col<V>(indptr, indices, values, x, ldx, y, rows, nnz, n);               \
        }                                                                                      \
    }

FLOOR_ENTRY(sparserl_spmm_floor_f32_row_v1, float, 1, true)
FLOOR_ENTRY(sparserl_spmm_floor_f32_row_v4, float, 4, true)
FLOOR_ENTRY(sparserl_spmm_floor_f32_col_v1, float, 1, false)
FLOOR_ENTRY(sparserl_spmm_floor_f64_row_v1, double, 1, true)
FLOOR_ENTRY(sparserl_spmm_floor_f64_row_v2, double, 2, true)
FLOOR_ENTRY(sparserl_spmm_floor_f64_col_v1, double, 1, false)
