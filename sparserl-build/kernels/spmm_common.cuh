// ---- spmm_common.cuh: shared helpers of every SparseRL SpMM kernel ----
//
// Expects the generator to have defined, once per translation unit: T (float
// or double), BLOCK, GROUP, VEC, COARSEN, TILE_K, ITEMS, SUB, SPLIT, UNROLL, SPMM_LDG
// (0/1: X through the read-only cache) and SPMM_LAYOUT (0 row-major, 1
// column-major X and Y); and per entry: SPMM_N (0: width at run time, else
// the compile-time width), SPMM_EPILOGUE (0 plain, 1 bias-relu) and ENTRY.
// A test compiles every fragment on its own with these defines.
//
// Kernel ABI (every entry):
//   (rows, cols, nnz, n, indptr, indices, values, x, ldx, y, ldy, alpha, beta, bias)
// Y = alpha A X + beta Y, with the epilogue relu(. + bias[col]); beta == 0
// never reads Y. Offsets into X and Y are computed in 64 bits.

#ifndef SPARSERL_SPMM_COMMON_CUH
#define SPARSERL_SPMM_COMMON_CUH

#if !defined(T) || !defined(BLOCK) || !defined(GROUP) || !defined(VEC) || !defined(COARSEN) || \
    !defined(TILE_K) || !defined(ITEMS) || !defined(SUB) || !defined(SPLIT) ||                 \
    !defined(UNROLL) ||                                                                          \
    !defined(SPMM_LDG) || !defined(SPMM_LAYOUT)
#error "SparseRL SpMM fragment compiled without the generator's #defines"
#endif

#if BLOCK % 32 != 0 || BLOCK < 64 || BLOCK > 1024
#error "BLOCK must be a multiple of 32 in 64..=1024"
#endif
#if GROUP < 1 || GROUP > 32 || (GROUP & (GROUP - 1)) != 0
#error "GROUP must be a power of two in 1..=32"
#endif
#if VEC != 1 && VEC != 2 && VEC != 4
#error "VEC must be 1, 2 or 4"
#endif
#if SPMM_LAYOUT != 0 && VEC != 1
#error "vector loads need row-major X (SPMM_LAYOUT 0)"
#endif

// Accumulators are double for both value types: a long row of one-signed
// terms summed in float drifts past the 1e-5 per-row tolerance (a CPU test
// in sparserl-rt measures 5e-4 at 2M terms). Converting every f32 product to
// double costs an F2F instruction each (low throughput), so the products are
// summed in T over a bounded block (one broadcast step: at most 32 nonzeros
// per lane and column) and each block sum is added into the double
// accumulator once. A block of k <= 32 float products has an error of at
// most k 2^-24 (about 1.9e-6) of its magnitude sum, within the tolerance
// (measured against the row's magnitude sum); a CPU test emulates the scheme
// on the 2M-term row. For f64, T is double and the block changes nothing.
typedef double SPMM_ACC;

// The most products one lane sums in T before adding them into SPMM_ACC.
#define SPMM_BLOCK_TERMS 32

// acc += blk (one conversion per element), then blk = 0; Q x V arrays.
template <int Q, int V>
__device__ __forceinline__ void spmm_blk_add(SPMM_ACC (*acc)[V], T (*blk)[V]) {
#pragma unroll
    for (int q = 0; q < Q; ++q) {
#pragma unroll
        for (int e = 0; e < V; ++e) {
            acc[q][e] += (SPMM_ACC)blk[q][e];
            blk[q][e] = (T)0;
        }
    }
}

#define SPMM_FULL_MASK 0xffffffffu
#define SPMM_CAT2(a, b) a##b
#define SPMM_CAT(a, b) SPMM_CAT2(a, b)

// Offset of element (i, j) of a matrix with leading dimension ld.
__device__ __forceinline__ long long spmm_at(int i, int j, int ld) {
#if SPMM_LAYOUT == 0
    return (long long)i * ld + j;
#else
    return (long long)j * ld + i;
#endif
}

__device__ __forceinline__ T spmm_load_x(const T* __restrict__ p) {
#if SPMM_LDG
    return __ldg(p);
#else
    return *p;
#endif
}

// V consecutive values at p (aligned to V elements) into out.
template <int V>
__device__ __forceinline__ void spmm_load_vec(const T* __restrict__ p, T* out) {
    if constexpr (V == 1) {
        out[0] = spmm_load_x(p);
    } else if constexpr (V == 2 && sizeof(T) == 4) {
        const float2 q = SPMM_LDG ? __ldg((const float2*)p) : *(const float2*)p;
        out[0] = (T)q.x;
        out[1] = (T)q.y;
    } else if constexpr (V == 4 && sizeof(T) == 4) {
        const float4 q = SPMM_LDG ? __ldg((const float4*)p) : *(const float4*)p;
        out[0] = (T)q.x;
        out[1] = (T)q.y;
        out[2] = (T)q.z;
        out[3] = (T)q.w;
    } else {
        // double: pairs of 16-byte loads.
#pragma unroll
        for (int e = 0; e < V; e += 2) {
            const double2 q = SPMM_LDG ? __ldg((const double2*)(p + e)) : *(const double2*)(p + e);
            out[e] = (T)q.x;
            out[e + 1] = (T)q.y;
        }
    }
}

// Whether X and Y allow V-wide accesses: leading dimensions and base
// pointers aligned to V elements (checked once per launch, uniform).
template <int V>
__device__ __forceinline__ bool spmm_vec_ok(const T* x, int ldx, const T* y, int ldy) {
    const unsigned long long bytes = (unsigned long long)V * sizeof(T);
    return V == 1 || (ldx % V == 0 && ldy % V == 0 && (unsigned long long)x % bytes == 0 &&
                      (unsigned long long)y % bytes == 0);
}

// The final value of Y(row, col) from its accumulated product.
template <int EPI>
__device__ __forceinline__ T spmm_final(SPMM_ACC acc, const T* __restrict__ y, long long at, T alpha,
                                        T beta, const T* __restrict__ bias, int col) {
    SPMM_ACC v = (SPMM_ACC)alpha * acc;
    if (beta != (T)0) {
        v += (SPMM_ACC)beta * (SPMM_ACC)y[at];
    }
    if constexpr (EPI == 1) {
        v += (SPMM_ACC)bias[col];
        v = v > (SPMM_ACC)0 ? v : (SPMM_ACC)0;
    }
    return (T)v;
}

// Stores the final values of V consecutive columns col.. of one row
// (vector store when V > 1; the caller checked col + V <= n and alignment).
template <int EPI, int V>
__device__ __forceinline__ void spmm_store_vec(T* __restrict__ y, long long at, const SPMM_ACC* acc,
                                               T alpha, T beta, const T* __restrict__ bias,
                                               int col) {
    T out[V];
#pragma unroll
    for (int e = 0; e < V; ++e) {
        out[e] = spmm_final<EPI>(acc[e], y, at + e, alpha, beta, bias, col + e);
    }
    if constexpr (V == 1) {
        y[at] = out[0];
    } else if constexpr (V == 2 && sizeof(T) == 4) {
        *(float2*)(y + at) = make_float2((float)out[0], (float)out[1]);
    } else if constexpr (V == 4 && sizeof(T) == 4) {
        *(float4*)(y + at) = make_float4((float)out[0], (float)out[1], (float)out[2], (float)out[3]);
    } else {
#pragma unroll
        for (int e = 0; e < V; e += 2) {
            *(double2*)(y + at + e) = make_double2((double)out[e], (double)out[e + 1]);
        }
    }
}

// Programmatic dependent launch (sm_90 and later; no-ops below): the
// trigger lets the next kernel on the stream, when it was launched as a
// programmatic dependent, start before this one ends; the wait blocks until
// the kernel this one depends on has completed and its writes are visible
// (at once when it was launched plainly).
__device__ __forceinline__ void spmm_pdl_trigger() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

__device__ __forceinline__ void spmm_pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Mask of the G-lane group the calling lane belongs to (groups aligned).
template <int G>
__device__ __forceinline__ unsigned spmm_group_mask() {
    if constexpr (G >= 32) {
        return SPMM_FULL_MASK;
    }
    const unsigned base = (threadIdx.x & 31u) & ~(unsigned)(G - 1);
    return ((1u << (G & 31)) - 1u) << base;
}

// Broadcast of lane `src` of the G-lane group (identity for G == 1).
template <int G, typename V>
__device__ __forceinline__ V spmm_bcast(V v, int src, unsigned mask) {
    return G > 1 ? __shfl_sync(mask, v, src, G) : v;
}

// A step of a row-warp group covers SPMM_STEP nonzeros:
// GROUP, or UNROLL when that is larger (each lane then holds SPMM_LPL =
// UNROLL / GROUP (column, value) pairs), so UNROLL X rows can be in flight
// per lane even in narrow groups.
#define SPMM_LPL (UNROLL > GROUP ? UNROLL / GROUP : 1)
#define SPMM_STEP (GROUP * SPMM_LPL)

// The lane's (column, value) pairs of the step at base: nonzero
// base + j GROUP + lane for j < SPMM_LPL; past end column 0 (a row of X
// that exists whenever a nonzero does) and value 0, never used.
__device__ __forceinline__ void spmm_step_pairs(const int* __restrict__ indices,
                                                const T* __restrict__ values, int base, int end,
                                                int lane, int* mc, T* mv) {
#pragma unroll
    for (int j = 0; j < SPMM_LPL; ++j) {
        const int k = base + j * GROUP + lane;
        mc[j] = k < end ? indices[k] : 0;
        mv[j] = k < end ? values[k] : (T)0;
    }
}

// The last row r in [lo, hi] with indptr[r] <= k, for a whole warp (every
// lane calls it with the same arguments): 32 probes per round narrowed by a
// ballot, then one ballot over the final window. Requires indptr[lo] <= k.
__device__ __forceinline__ int spmm_warp_row_in(const int* __restrict__ indptr, int lo, int hi,
                                                int k, unsigned lane) {
    while (hi - lo >= 32) {
        const long long span = (long long)(hi - lo);
        const int probe = lo + (int)(((long long)lane + 1) * span / 32);
        const int c = __popc(__ballot_sync(SPMM_FULL_MASK, indptr[probe] <= k));
        const int new_lo = c > 0 ? lo + (int)((long long)c * span / 32) : lo;
        hi = c < 32 ? lo + (int)(((long long)c + 1) * span / 32) - 1 : hi;
        lo = new_lo;
    }
    const int r = lo + (int)lane;
    return lo - 1 + __popc(__ballot_sync(SPMM_FULL_MASK, r <= hi && indptr[r] <= k));
}

#endif  // SPARSERL_SPMM_COMMON_CUH

// ---- end spmm_common.cuh ----
