// ---- rowerr.cu: the per-row error of an SpMM result, on the device ----
//
// For every row i of Y (rows x n, row-major or column-major with leading
// dimension ldy) against the float64 reference R and the magnitudes M of
// its terms (both rows x n, row-major):
//     e_i = ||y_i - r_i|| / max(||r_i||, floor ||m_i||)    (||y_i - r_i|| when that is 0)
// and infinity when any y_i value is not finite; each block writes the
// largest e_i of its rows to out[blockIdx.x]. One warp per row, lanes over
// the columns, sums in double. Entries: sparserl_spmm_rowerr_{f32,f64}.

#define ROWERR_BLOCK 256

template <typename V>
__device__ __forceinline__ void rowerr(const V* __restrict__ y, const long long ldy,
                                       const int row_major, const double* __restrict__ ref,
                                       const double* __restrict__ mag, const int rows,
                                       const int n, const double floor_share,
                                       double* __restrict__ out) {
    __shared__ double worst[ROWERR_BLOCK / 32];
    const int lane = threadIdx.x % 32;
    const int warp = threadIdx.x / 32;
    const long long warps = (long long)gridDim.x * (ROWERR_BLOCK / 32);
    double mine = 0.0;
    for (long long i = (long long)blockIdx.x * (ROWERR_BLOCK / 32) + warp; i < rows; i += warps) {
        double d = 0.0, r = 0.0, m = 0.0;
        bool finite = true;
        for (int j = lane; j < n; j += 32) {
            const double got = (double)(row_major ? y[i * ldy + j] : y[(long long)j * ldy + i]);
            const double want = ref[i * n + j];
            const double mg = mag[i * n + j];
            finite = finite && isfinite(got);
            d += (got - want) * (got - want);
            r += want * want;
            m += mg * mg;
        }
        for (int o = 16; o > 0; o >>= 1) {
            d += __shfl_xor_sync(0xffffffffu, d, o);
            r += __shfl_xor_sync(0xffffffffu, r, o);
            m += __shfl_xor_sync(0xffffffffu, m, o);
        }
        finite = __all_sync(0xffffffffu, finite);
        const double den = fmax(sqrt(r), floor_share * sqrt(m));
        double e = den > 0.0 ? sqrt(d) / den : sqrt(d);
        if (!finite || isnan(e)) {
            e = __longlong_as_double(0x7ff0000000000000LL);
        }
        mine = fmax(mine, e);
    }
    if (lane == 0) {
        worst[warp] = mine;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        double w = 0.0;
        for (int k = 0; k < ROWERR_BLOCK / 32; ++k) {
            w = fmax(w, worst[k]);
        }
        out[blockIdx.x] = w;
    }
}

#define ROWERR_ENTRY(NAME, V)                                                                  \
    extern "C" __global__ void __launch_bounds__(ROWERR_BLOCK)                                 \
        NAME(const V* __restrict__ y, const long long ldy, const int row_major,                \
             const double* __restrict__ ref, const double* __restrict__ mag, const int rows,   \
             const int n, const double floor_share, double* __restrict__ out) {                \
        rowerr<V>(y, ldy, row_major, ref, mag, rows, n, floor_share, out);                     \
    }

ROWERR_ENTRY(sparserl_spmm_rowerr_f32, float)
ROWERR_ENTRY(sparserl_spmm_rowerr_f64, double)

// Fills `words` 32-bit words with all ones: a NaN in every f32 and f64 slot
// (the poison a result must overwrite). Entry: sparserl_spmm_fill_nan.
extern "C" __global__ void __launch_bounds__(ROWERR_BLOCK)
    sparserl_spmm_fill_nan(unsigned int* __restrict__ p, const long long words) {
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < words;
         i += (long long)gridDim.x * blockDim.x) {
        p[i] = 0xffffffffu;
    }
}
