// ---- tiled.cu: CSR SpMV over nonzero tiles (CSR-Stream) ----
//
// The matrix's tile layout (see sparserl_rt::tiled) cuts the nonzeros, in
// order, into tiles of at most SPARSERL_TILE nonzeros (a row longer than a
// tile into pieces of up to sparserl_rt::tiled::PIECE); one block per tile
// (grid-stride over tiles). Two extra parameters follow the common ABI:
//
//   meta:    int[2 + 3 n_tiles + 2 + 2 n_acc] =
//            { n_tiles, n_acc, tile_row[n_tiles + 1], tile_nnz[n_tiles + 1],
//              tile_acc[n_tiles], acc_row[n_acc], acc_pieces[n_acc] }
//   scratch: double[2 n_acc]: accumulators of the rows cut into pieces, then
//            their 32-bit completion counters (zero between launches).
//
// A tile of whole rows: phase 1 computes all its products with coalesced
// loads of values and indices (every thread issues its gathers of x
// back to back) into shared memory, each product in the value type T (the
// product of two floats rounded once, as a double product rounded to float
// would be). For float that is half the shared memory of a double buffer,
// which leaves the L1 cache more room for x: 10% faster on a degree-ordered
// R-MAT graph, 1.5% on a circuit (kernel-lab run 21). Rows are still summed
// in double. Phase 2 sums each row's products from
// shared memory with g lanes per row, g = pow2_floor(BLOCK / rows) clamped to
// 1..=32, except that rows of more than 32 g products are listed in shared
// memory and summed by a whole warp each afterwards; y is written once per
// row, empty rows included. A piece of a long row (several tiles long: it
// needs no shared memory, and fewer pieces mean fewer block reductions and
// atomics): the block reduces its products and adds them to the row's accumulator with one
// double atomicAdd; the piece that finishes last (a fenced per-row ticket)
// writes y and resets the accumulator and the counter, so y needs no zeroing
// and every row of y is written exactly once. A row of one piece (at most
// PIECE nonzeros) is written directly, without the accumulator. Launches on one matrix must not
// overlap (the runtime launches on the stream the matrix was uploaded on).
// With SPARSERL_STREAM_Y the matrix arrays are also loaded with streaming
// (evict-first) loads.

#include "common.cuh"
#include "epilogue.cuh"

#define SPARSERL_TILE 1024

// Register budget: 32 registers per thread, so that 2048 threads (full
// occupancy: many tiles' gathers in flight per SM) fit the register file.
// Bounded by the block size alone, ptxas picks 32 registers for these kernels
// anyway but then spills in some; an explicit __maxnreg__(32) does not.
// With a minimum-blocks hint the kernel takes __launch_bounds__ instead (the
// two qualifiers exclude each other).
#if MIN_BLOCKS > 0
#define SPARSERL_TILED_BOUNDS __launch_bounds__(BLOCK, MIN_BLOCKS)
#else
#define SPARSERL_TILED_BOUNDS __maxnreg__(32)
#endif
#define SPARSERL_TILE_STEPS ((SPARSERL_TILE + BLOCK - 1) / BLOCK)
// Loads first, then gathers (SPARSERL_TILE_STEPS of each in flight per
// thread) when that many fit the register budget; above 4 (blocks of 128) the
// arrays would spill, and loads and gathers are interleaved instead.
#define SPARSERL_TILED_MLP (SPARSERL_TILE_STEPS <= 4)

// Loads of the matrix arrays: streaming (evict-first, each element is read
// once per launch, which keeps x in the caches) when SPARSERL_STREAM_Y is 1.
#ifndef SPARSERL_TILED_HELPERS
#define SPARSERL_TILED_HELPERS
template <typename V>
__device__ __forceinline__ V sparserl_load_matrix(const V* __restrict__ p) {
#if SPARSERL_STREAM_Y
    return __ldcs(p);
#else
    return *p;
#endif
}
#endif

extern "C" __global__ void SPARSERL_TILED_BOUNDS ENTRY(
    const int rows, const int cols, const int nnz, const int* __restrict__ indptr,
    const int* __restrict__ indices, const T* __restrict__ values, const T* __restrict__ x,
    T* __restrict__ y, const int* __restrict__ meta, double* __restrict__ scratch SPARSERL_EP_PARAMS) {
    SPARSERL_EP_BEGIN
    (void)rows;
    (void)cols;
    (void)nnz;
    __shared__ T prod[SPARSERL_TILE];
    __shared__ ACC warp_sums[BLOCK / 32];
    // Rows of the current tile longer than 32 g (g >= 1, so longer than 32:
    // at most SPARSERL_TILE / 33 of them).
    __shared__ int long_rows[SPARSERL_TILE / 32];
    __shared__ int n_long;
    const int n_tiles = meta[0];
    const int n_acc = meta[1];
    const int* __restrict__ tile_row = meta + 2;
    const int* __restrict__ tile_nnz = tile_row + n_tiles + 1;
    const int* __restrict__ tile_acc = tile_nnz + n_tiles + 1;
    const int* __restrict__ acc_row = tile_acc + n_tiles;
    const int* __restrict__ acc_pieces = acc_row + n_acc;
    const int tid = (int)threadIdx.x;
    const unsigned lane = threadIdx.x & 31u;

    for (int t = (int)blockIdx.x; t < n_tiles; t += (int)gridDim.x) {
        const int k0 = tile_nnz[t];
        const int len = tile_nnz[t + 1] - k0;
        const int acc = tile_acc[t];
        if (acc >= 0) {
            // One piece of a long row: block reduction, then the row's accumulator.
            ACC s = ACC(0);
            // A piece may be longer than a tile (it needs no shared memory):
            // SPARSERL_TILE_STEPS loads in flight per trip.
#if SPARSERL_TILED_MLP && SPARSERL_EPILOGUE == 0
            // Full trips unguarded, then at most one guarded trip (loads
            // clamped into the piece): every load of a trip in flight at once.
            int i0 = 0;
            for (; i0 + SPARSERL_TILE_STEPS * BLOCK <= len; i0 += SPARSERL_TILE_STEPS * BLOCK) {
                int c[SPARSERL_TILE_STEPS];
                T a[SPARSERL_TILE_STEPS];
#pragma unroll
                for (int j = 0; j < SPARSERL_TILE_STEPS; ++j) {
                    c[j] = sparserl_load_matrix(indices + k0 + i0 + tid + j * BLOCK);
                    a[j] = sparserl_load_matrix(values + k0 + i0 + tid + j * BLOCK);
                }
#pragma unroll
                for (int j = 0; j < SPARSERL_TILE_STEPS; ++j) {
                    s += (ACC)a[j] * (ACC)load_x(x, c[j]);
                }
            }
            if (i0 < len) {
                int c[SPARSERL_TILE_STEPS];
                T a[SPARSERL_TILE_STEPS];
#pragma unroll
                for (int j = 0; j < SPARSERL_TILE_STEPS; ++j) {
                    const int i = min(i0 + tid + j * BLOCK, len - 1);
                    c[j] = sparserl_load_matrix(indices + k0 + i);
                    a[j] = sparserl_load_matrix(values + k0 + i);
                }
#pragma unroll
                for (int j = 0; j < SPARSERL_TILE_STEPS; ++j) {
                    const ACC p = (ACC)a[j] * (ACC)load_x(x, c[j]);
                    if (i0 + tid + j * BLOCK < len) {
                        s += p;
                    }
                }
            }
#elif SPARSERL_TILED_MLP
            // Fused entries: the epilogue's state leaves no registers for a
            // guarded trip (it would spill); the rest one load at a time.
            int i = tid;
            for (; i + (SPARSERL_TILE_STEPS - 1) * BLOCK < len; i += SPARSERL_TILE_STEPS * BLOCK) {
                int c[SPARSERL_TILE_STEPS];
                T a[SPARSERL_TILE_STEPS];
#pragma unroll
                for (int j = 0; j < SPARSERL_TILE_STEPS; ++j) {
                    c[j] = sparserl_load_matrix(indices + k0 + i + j * BLOCK);
                    a[j] = sparserl_load_matrix(values + k0 + i + j * BLOCK);
                }
#pragma unroll
                for (int j = 0; j < SPARSERL_TILE_STEPS; ++j) {
                    s += (ACC)a[j] * (ACC)load_x(x, c[j]);
                }
            }
            for (; i < len; i += BLOCK) {
                s += (ACC)sparserl_load_matrix(values + k0 + i) *
                     (ACC)load_x(x, sparserl_load_matrix(indices + k0 + i));
            }
#else
            for (int i0 = 0; i0 < len; i0 += SPARSERL_TILE_STEPS * BLOCK) {
#pragma unroll
                for (int j = 0; j < SPARSERL_TILE_STEPS; ++j) {
                    const int i = i0 + tid + j * BLOCK;
                    if (i < len) {
                        s += (ACC)sparserl_load_matrix(values + k0 + i) *
                             (ACC)load_x(x, sparserl_load_matrix(indices + k0 + i));
                    }
                }
            }
#endif
            // Loaded before the block reduction, which hides their latency.
            const int pieces = acc_pieces[acc];
            const int row = acc_row[acc];
            s = group_reduce<32>(s, SPARSERL_FULL_MASK);
            if (lane == 0) {
                warp_sums[tid / 32] = s;
            }
            __syncthreads();
            if (tid < 32) {
                ACC w = tid < BLOCK / 32 ? warp_sums[tid] : ACC(0);
                w = group_reduce<32>(w, SPARSERL_FULL_MASK);
                if (tid == 0 && pieces == 1) {
                    // The row's only piece: no accumulator, ticket or fence.
                    store_y(y, row, (T)w);
                } else if (tid == 0) {
                    unsigned* counters = reinterpret_cast<unsigned*>(scratch + meta[1]);
                    atomicAdd(scratch + acc, (double)w);
                    __threadfence();
                    const unsigned done = atomicAdd(counters + acc, 1u);
                    if (done + 1u == (unsigned)pieces) {
                        // Every other piece added before its fenced ticket;
                        // read past L1.
                        __threadfence();
                        const double v = __ldcg(scratch + acc);
                        __stcg(scratch + acc, 0.0);
                        atomicExch(counters + acc, 0u);
                        store_y(y, row, (T)v);
                    }
                }
            }
            __syncthreads();  // warp_sums is reused by the next tile
        } else {
            // Whole rows: products to shared memory, then g lanes per row.
            if (tid == 0) {
                n_long = 0;
            }
            const int r0 = tile_row[t];
            const int nr = tile_row[t + 1] - r0;
#if SPARSERL_TILED_MLP
            if (len > 0) {
                // Every load first (clamped into the tile: in bounds, and a
                // repeated address for the lanes past its end), then every
                // gather: SPARSERL_TILE_STEPS gathers in flight per thread.
                int c[SPARSERL_TILE_STEPS];
                T a[SPARSERL_TILE_STEPS];
#pragma unroll
                for (int j = 0; j < SPARSERL_TILE_STEPS; ++j) {
                    const int i = min(tid + j * BLOCK, len - 1);
                    c[j] = sparserl_load_matrix(indices + k0 + i);
                    a[j] = sparserl_load_matrix(values + k0 + i);
                }
#pragma unroll
                for (int j = 0; j < SPARSERL_TILE_STEPS; ++j) {
                    const int i = tid + j * BLOCK;
                    const T p = a[j] * load_x(x, c[j]);
                    if (i < len) {
                        prod[i] = p;
                    }
                }
            }
#else
#pragma unroll
            for (int j = 0; j < SPARSERL_TILE_STEPS; ++j) {
                const int i = tid + j * BLOCK;
                if (i < len) {
                    prod[i] = sparserl_load_matrix(values + k0 + i) *
                              load_x(x, sparserl_load_matrix(indices + k0 + i));
                }
            }
#endif
            __syncthreads();
            const int per = BLOCK / (nr > 0 ? nr : 1);
            const int g = per >= 32 ? 32 : (per <= 1 ? 1 : 1 << (31 - __clz(per)));
            const int groups = BLOCK / g;
            const int gl = tid & (g - 1);
            const int lim = 32 * g;
            // Uniform trip count: every lane takes part in the shuffles.
            for (int base = 0; base < nr; base += groups) {
                const int i = base + tid / g;
                ACC s = ACC(0);
                bool mine = false;
                if (i < nr) {
                    const int a = indptr[r0 + i] - k0;
                    const int b = indptr[r0 + i + 1] - k0;
                    if (b - a > lim) {
                        // Longer than 32 products per lane: a whole warp sums it below.
                        if (gl == 0) {
                            long_rows[atomicAdd(&n_long, 1)] = i;
                        }
                    } else {
                        mine = true;
                        for (int k = a + gl; k < b; k += g) {
                            s += (ACC)prod[k];
                        }
                    }
                }
                for (int off = g / 2; off > 0; off >>= 1) {
                    s += __shfl_down_sync(SPARSERL_FULL_MASK, s, off, g);
                }
                if (mine && gl == 0) {
                    store_y(y, r0 + i, (T)s);
                }
            }
            __syncthreads();
            const int nl = n_long;
            for (int j = tid / 32; j < nl; j += BLOCK / 32) {
                const int i = long_rows[j];
                const int a = indptr[r0 + i] - k0;
                const int b = indptr[r0 + i + 1] - k0;
                ACC s = ACC(0);
                for (int k = a + (int)lane; k < b; k += 32) {
                    s += (ACC)prod[k];
                }
                s = group_reduce<32>(s, SPARSERL_FULL_MASK);
                if (lane == 0) {
                    store_y(y, r0 + i, (T)s);
                }
            }
            __syncthreads();  // prod is reused by the next tile
        }
    }
}
