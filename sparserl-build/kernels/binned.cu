// ---- binned.cu: CSR SpMV, rows binned by length (adaptive) ----
//
// The matrix's binned layout (see sparserl_rt::binned) lists its long rows
// (longer than a threshold fixed at upload) and cuts them into chunks of
// SPARSERL_CHUNK nonzeros. Two extra parameters follow the common ABI:
//
//   meta:    int[4 + n_long + 2 n_chunks + n_multi] =
//            { threshold, n_long, n_chunks, n_multi, long_rows[n_long],
//              chunk_long[n_chunks], chunk_start[n_chunks], multi[n_multi] }
//   scratch: double[n_long + 1]: accumulators of the long rows that span
//            several chunks (zero between launches) and, in the last slot,
//            a 32-bit completion counter.
//
// With nb = ceil(rows * LANES / BLOCK) short-row blocks, the first
// gridDim.x - nb blocks are long-row blocks (scheduled first, so the long
// rows overlap with the short ones): each warp takes one chunk at a time
// (grid-stride) and reduces it across the warp; a row of one chunk is written
// to y at once, a chunk of a multi-chunk row is added to the row's
// accumulator with one double atomicAdd. The other blocks map LANES lanes to
// each row (like group-per-row) and skip the long rows. The last block to
// finish (a fenced atomic ticket, as in the CUDA threadFenceReduction sample)
// writes the multi-chunk rows' y and resets their accumulators and the
// counter, so y needs no zeroing and every row of y is written exactly once.
// Launches on one matrix must not overlap (the runtime launches on the stream
// the matrix was uploaded on).

#include "common.cuh"
#include "epilogue.cuh"

#if LANES < 2 || LANES > 32 || (LANES & (LANES - 1)) != 0
#error "LANES must be a power of two in 2..=32"
#endif

#define SPARSERL_CHUNK 1024

extern "C" __global__ void SPARSERL_LAUNCH_BOUNDS ENTRY(
    const int rows, const int cols, const int nnz, const int* __restrict__ indptr,
    const int* __restrict__ indices, const T* __restrict__ values, const T* __restrict__ x,
    T* __restrict__ y, const int* __restrict__ meta, double* __restrict__ scratch SPARSERL_EP_PARAMS) {
    SPARSERL_EP_BEGIN
    (void)cols;
    (void)nnz;
    const int threshold = meta[0];
    const int n_long = meta[1];
    const int n_chunks = meta[2];
    const long long nb = ((long long)rows * LANES + (BLOCK - 1)) / BLOCK;
    // At most 4096 long-row blocks (see sparserl_rt::launch::binned_grid).
    const int nl = (int)((long long)gridDim.x - nb);

    if ((int)blockIdx.x < nl) {
        // Long rows: one warp per chunk.
        const int* __restrict__ long_rows = meta + 4;
        const int* __restrict__ chunk_long = long_rows + n_long;
        const int* __restrict__ chunk_start = chunk_long + n_chunks;
        const unsigned lane = threadIdx.x & 31u;
        const int warps = nl * (BLOCK / 32);
        for (int c = (int)blockIdx.x * (BLOCK / 32) + (int)(threadIdx.x / 32); c < n_chunks;
             c += warps) {
            const int li = chunk_long[c];
            const int row = long_rows[li];
            const int start = chunk_start[c];
            const int row_end = indptr[row + 1];
            const int end = row_end - start < SPARSERL_CHUNK ? row_end : start + SPARSERL_CHUNK;
            ACC sum = ACC(0);
            for (int k = start + (int)lane; k < end; k += 32) {
                sum += (ACC)values[k] * (ACC)load_x(x, indices[k]);
            }
            sum = group_reduce<32>(sum, SPARSERL_FULL_MASK);
            if (lane == 0) {
                if (start == indptr[row] && end == row_end) {
                    store_y(y, row, (T)sum);  // the whole row was this chunk
                } else {
                    atomicAdd(scratch + li, (double)sum);
                }
            }
        }
    } else {
        // Short rows: one LANES-lane group per row (groups are LANES-aligned in
        // a warp, so a group's lanes agree on every branch).
        const long long tid = ((long long)blockIdx.x - nl) * BLOCK + threadIdx.x;
        const unsigned lane = (unsigned)(tid & (LANES - 1));
        const long long r = tid / LANES;
        if (r < rows) {
            const int row = (int)r;
            const int start = indptr[row];
            const int len = indptr[row + 1] - start;
            if (len <= threshold) {
                ACC sum = row_dot<(unsigned)LANES, UNROLL>(indices + start, values + start, x,
                                                            lane, (unsigned)len, 0);
                sum = group_reduce<LANES>(sum, group_mask<LANES>());
                if (lane == 0) {
                    store_y(y, row, (T)sum);
                }
            }
        }
    }

    // Completion: the last block writes the multi-chunk rows (the layout is
    // re-read from meta here rather than kept live across the branches).
    __shared__ bool last;
    __threadfence();
    __syncthreads();
    const int n_long_c = meta[1];
    unsigned* counter = reinterpret_cast<unsigned*>(scratch + n_long_c);
    if (threadIdx.x == 0) {
        last = atomicAdd(counter, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (last) {
        __threadfence();
        const int* __restrict__ long_rows_c = meta + 4;
        const int* __restrict__ multi = long_rows_c + n_long_c + 2 * meta[2];
        const int n_multi = meta[3];
        for (int i = threadIdx.x; i < n_multi; i += BLOCK) {
            const int li = multi[i];
            // Read past L1: every other block's atomics happened before its
            // fenced ticket.
            const double v = __ldcg(scratch + li);
            __stcg(scratch + li, 0.0);
            store_y(y, long_rows_c[li], (T)v);
        }
        if (threadIdx.x == 0) {
            atomicExch(counter, 0u);
        }
    }
}
