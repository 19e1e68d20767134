// ---- common.cuh: shared helpers of every SparseRL SpMV kernel ----
//
// Expects the generator to have defined: T (float or double), BLOCK, LANES,
// ITEMS, UNROLL, MIN_BLOCKS, SPARSERL_LDG_X, SPARSERL_STREAM_Y and ENTRY (a
// test compiles every fragment on its own with these given as -D options).
// Every strategy fragment includes this header (and epilogue.cuh where it
// stores y through the epilogue); the generator inlines the includes, so
// NVRTC compiles one self-contained translation unit per module.

#ifndef SPARSERL_COMMON_CUH
#define SPARSERL_COMMON_CUH

#if !defined(T) || !defined(BLOCK) || !defined(LANES) || !defined(ITEMS) || \
    !defined(UNROLL) || !defined(MIN_BLOCKS) || !defined(SPARSERL_LDG_X) ||  \
    !defined(SPARSERL_STREAM_Y) || !defined(ENTRY)
#error "SparseRL kernel fragment compiled without the generator's #defines"
#endif

#if BLOCK % 32 != 0 || BLOCK < 64 || BLOCK > 1024
#error "BLOCK must be a multiple of 32 in 64..=1024"
#endif

// Value type of values, x and y.
typedef T sparserl_value_t;

// Accumulator type: products are summed in double for both value types, so
// long rows with cancellation stay within float rounding of a float64
// reference (SpMV is memory-bound: the wider arithmetic costs no bandwidth).
// One exception: the tiled kernel's whole-row tiles (rows of at most 1024
// nonzeros) stage each product in shared memory in the value type, so for
// float each product carries one float rounding before the double sum.
typedef double ACC;

// __launch_bounds__(BLOCK[, MIN_BLOCKS]) for the entry point.
#if MIN_BLOCKS > 0
#define SPARSERL_LAUNCH_BOUNDS __launch_bounds__(BLOCK, MIN_BLOCKS)
#else
#define SPARSERL_LAUNCH_BOUNDS __launch_bounds__(BLOCK)
#endif

#define SPARSERL_FULL_MASK 0xffffffffu

// Global thread index and total number of threads of the grid (64-bit safe).
__device__ __forceinline__ long long sparserl_global_thread() {
    return (long long)blockIdx.x * BLOCK + threadIdx.x;
}
__device__ __forceinline__ long long sparserl_grid_threads() {
    return (long long)gridDim.x * BLOCK;
}

// Stride of a grid-stride loop over [0, n) whose workers number `workers`
// (64-bit), clamped to n so that `i + stride` never exceeds 2 * INT_MAX and a
// 32-bit unsigned loop variable is safe for any n <= INT_MAX and any grid.
__device__ __forceinline__ unsigned sparserl_stride(long long workers, int n) {
    return (unsigned)(workers < (long long)n ? workers : (long long)n);
}

// Loads x[i], through the read-only data cache when SPARSERL_LDG_X is 1.
__device__ __forceinline__ T load_x(const T* __restrict__ x, int i) {
#if SPARSERL_LDG_X
    return __ldg(x + i);
#else
    return x[i];
#endif
}

// Stores y[i] = v (kernels call it through the epilogue's store_y), with a streaming (evict-first) store when SPARSERL_STREAM_Y is 1.
__device__ __forceinline__ void sparserl_store_raw(T* __restrict__ y, int i, T v) {
#if SPARSERL_STREAM_Y
    __stcs(y + i, v);
#else
    y[i] = v;
#endif
}

// Sum over a group of WIDTH consecutive lanes (WIDTH a power of two <= 32,
// groups aligned to WIDTH inside the warp). Every lane named in `mask` must
// call it; the full sum ends up in the group's first lane.
template <int WIDTH, typename V>
__device__ __forceinline__ V group_reduce(V v, unsigned mask) {
#pragma unroll
    for (int off = WIDTH / 2; off > 0; off >>= 1) {
        v += __shfl_down_sync(mask, v, off, WIDTH);
    }
    return v;
}

// Mask of the WIDTH-lane group that the calling lane belongs to.
template <int WIDTH>
__device__ __forceinline__ unsigned group_mask() {
    if (WIDTH >= 32) {
        return SPARSERL_FULL_MASK;
    }
    const unsigned lane = threadIdx.x & 31u;
    const unsigned base = lane & ~(unsigned)(WIDTH - 1);
    return ((1u << (WIDTH & 31)) - 1u) << base;
}

// Partial dot product of one CSR row: the elements j, j + STRIDE, ... < len of
// (ind, val), unrolled U times with U independent accumulators; element k
// multiplies x[base + ind[k]] (base 0 for 32-bit column indices, the row for
// the 16-bit offsets of narrow kernels). The trip count is computed up front
// in unsigned 32-bit arithmetic (len <= INT_MAX, so nothing overflows) and
// the loop walks two pointers.
template <unsigned STRIDE, int U, typename I>
__device__ __forceinline__ ACC row_dot(const I* __restrict__ ind, const T* __restrict__ val,
                                       const T* __restrict__ x, unsigned j, unsigned len,
                                       int base) {
    ACC acc[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
        acc[u] = ACC(0);
    }
    const unsigned n = j < len ? (len - j + (STRIDE - 1u)) / STRIDE : 0u;
    ind += j;
    val += j;
    for (unsigned c = n / U; c != 0u; --c) {
#pragma unroll
        for (int u = 0; u < U; ++u) {
            acc[u] += (ACC)val[u * STRIDE] * (ACC)load_x(x, base + (int)ind[u * STRIDE]);
        }
        ind += U * STRIDE;
        val += U * STRIDE;
    }
    for (unsigned c = n % U; c != 0u; --c) {
        acc[0] += (ACC)val[0] * (ACC)load_x(x, base + (int)ind[0]);
        ind += STRIDE;
        val += STRIDE;
    }
#pragma unroll
    for (int u = 1; u < U; ++u) {
        acc[0] += acc[u];
    }
    return acc[0];
}

#endif  // SPARSERL_COMMON_CUH

// ---- end common.cuh ----
