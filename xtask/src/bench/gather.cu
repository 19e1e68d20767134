// ---- gather.cu: the gather floor of a CSR matrix (microbenchmark) ----
//
// The memory traffic a perfectly balanced CSR SpMV of the matrix must do, in
// the order the matrix numbers its nonzeros, with no row structure: every
// thread, in a grid-stride loop over k in [0, nnz), reads indices[k] and
// values[k] (coalesced across the warp) and accumulates values[k] *
// x[indices[k]]; the row pointers (rows + 1 ints) are streamed once, and y
// (rows entries) is written once: thread t writes y[i] for its grid-stride
// share of the rows, with its partial sum (plus the row pointer it read, so no
// load is dead). The result is no SpMV; only the traffic and its order are.
//
// Two flavours per value type, the two load paths for x: plain coherent
// global loads (x and y are not __restrict__, so the compiler cannot move x's
// loads to the read-only path) and __ldg (ld.global.nc, read-only data
// cache). The harness keeps the faster. Entries:
// sparserl_gather_floor_{f32,f64}_{plain,ldg}. Nothing is included: NVRTC
// compiles this file alone.

#define GATHER_BLOCK 256
// Nonzeros in flight per thread and loop trip (indices and values loaded
// first, then all the gathers), for memory-level parallelism.
#define GATHER_UNROLL 4

template <typename V, bool LDG>
__device__ __forceinline__ V gather_load_x(const V* x, int i) {
    if constexpr (LDG) {
        return __ldg(x + i);
    } else {
        return x[i];
    }
}

template <typename V, bool LDG>
__device__ __forceinline__ void gather_floor(const int* __restrict__ indptr,
                                             const int* __restrict__ indices,
                                             const V* __restrict__ values,
                                             const V* x, V* y,
                                             const int rows, const int nnz) {
    const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long stride = (long long)gridDim.x * blockDim.x;
    V acc = V(0);
    long long k = tid;
    for (; k + (GATHER_UNROLL - 1) * stride < nnz; k += GATHER_UNROLL * stride) {
        int c[GATHER_UNROLL];
        V a[GATHER_UNROLL];
#pragma unroll
        for (int u = 0; u < GATHER_UNROLL; ++u) {
            c[u] = indices[k + u * stride];
            a[u] = values[k + u * stride];
        }
#pragma unroll
        for (int u = 0; u < GATHER_UNROLL; ++u) {
            acc += a[u] * gather_load_x<V, LDG>(x, c[u]);
        }
    }
    for (; k < nnz; k += stride) {
        acc += values[k] * gather_load_x<V, LDG>(x, indices[k]);
    }
    for (long long i = tid; i <= rows; i += stride) {
        const int p = indptr[i];
        if (i < rows) {
            y[i] = acc + V(p);
        } else if (p < 0) {
            // Never taken for a valid CSR matrix (indptr[rows] = nnz >= 0);
            // keeps the last row pointer's load live.
            y[0] = acc;
        }
    }
}

#define GATHER_ENTRY(NAME, V, LDG)                                                             \
    extern "C" __global__ void __launch_bounds__(GATHER_BLOCK)                                 \
        NAME(const int* __restrict__ indptr, const int* __restrict__ indices,                  \
             const V* __restrict__ values, const V* x, V* y,                                   \
             const int rows, const int nnz) {                                                  \
        gather_floor<V, LDG>(indptr, indices, values, x, y, rows, nnz);                        \
    }

GATHER_ENTRY(sparserl_gather_floor_f32_plain, float, false)
GATHER_ENTRY(sparserl_gather_floor_f32_ldg, float, true)
GATHER_ENTRY(sparserl_gather_floor_f64_plain, double, false)
GATHER_ENTRY(sparserl_gather_floor_f64_ldg, double, true)
