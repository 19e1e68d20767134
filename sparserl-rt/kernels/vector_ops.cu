// ---- vector_ops.cu: device vector operations and fused solver updates ----
//
// Compiled ahead of time to PTX (kernels/vector_ops.ptx, see
// `cargo xtask vector-ptx`) and embedded in sparserl-rt, so user binaries
// need no compiler. Every entry exists for float (_f32) and double (_f64).
// Launch shape: VB threads per block, any grid (grid-stride loops); the
// reductions expect every thread of the grid to reach grid_reduce.
//
// Device scalars are double[16 * 33]: the result at 0 and 32 accumulators at
// ACC(k) = 16 (k + 1) (one cache line each), plus an unsigned ticket, all
// accumulators and the ticket zero between launches. These kernels run at
// most a few thousand blocks, so they use accumulator 0 and the ticket only; the block that finishes last publishes the
// result and zeroes both again, so a reduction needs no memset and replays
// in a CUDA graph. Fused SpMV epilogues add into all 32 accumulators
// without a ticket; sparserl_finalize_dot (or a solver update reading the
// scalar) publishes their sum and zeroes them.
//
// Coefficients are `host * (*dev)` when `dev` is not null, else `host`.

#define VB 256
#define ACC_STRIDE 16
#define ACC(k) (ACC_STRIDE * ((k) + 1))
#define FULL_MASK 0xffffffffu

__device__ __forceinline__ double sparserl_warp_sum(double v) {
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        v += __shfl_down_sync(FULL_MASK, v, off);
    }
    return v;
}

__device__ __forceinline__ double sparserl_coef(double host, const double* dev) {
    return dev != nullptr ? host * dev[0] : host;
}

// Sums v[0..K) over the grid into acc[k * ACC_STRIDE] (one cache line each).
// Returns true in thread 0 of the block that finishes last, which then sees
// the totals there.
template <int K>
__device__ __forceinline__ bool sparserl_grid_reduce(double (&v)[K], double* acc,
                                                     unsigned* ticket) {
    __shared__ double part[K][VB / 32];
    __shared__ bool last;
    const unsigned lane = threadIdx.x & 31u;
    const unsigned warp = threadIdx.x >> 5;
#pragma unroll
    for (int k = 0; k < K; ++k) {
        const double s = sparserl_warp_sum(v[k]);
        if (lane == 0) {
            part[k][warp] = s;
        }
    }
    __syncthreads();
    if (warp == 0) {
#pragma unroll
        for (int k = 0; k < K; ++k) {
            double s = lane < VB / 32 ? part[k][lane] : 0.0;
            s = sparserl_warp_sum(s);
            if (lane == 0) {
                atomicAdd(acc + k * ACC_STRIDE, s);
            }
        }
        if (lane == 0) {
            __threadfence();
            last = atomicAdd(ticket, 1u) == gridDim.x - 1u;
        }
    }
    __syncthreads();
    if (last && threadIdx.x == 0) {
        __threadfence();
        return true;
    }
    return false;
}

// Reads a value other blocks added with atomics (past L1).
__device__ __forceinline__ double sparserl_read_acc(double* p) {
    return __ldcg(p);
}

// Unrolled so that the loads of several elements are in flight together.
#define GRID_LOOP(i, n)                                                           \
    _Pragma("unroll 4") for (long long i = (long long)blockIdx.x * VB + threadIdx.x; i < (long long)(n); \
         i += (long long)gridDim.x * VB)

template <typename T>
__device__ void fill(int n, T v, T* __restrict__ x) {
    GRID_LOOP(i, n) { x[i] = v; }
}

template <typename T>
__device__ void scal(int n, double ah, const double* ad, T* __restrict__ x) {
    const double a = sparserl_coef(ah, ad);
    GRID_LOOP(i, n) { x[i] = (T)(a * (double)x[i]); }
}

// y = a x + b y (y not read when b == 0).
template <typename T>
__device__ void axpby(int n, double ah, const double* ad, double bh, const double* bd,
                      const T* __restrict__ x, T* __restrict__ y) {
    const double a = sparserl_coef(ah, ad);
    const double b = sparserl_coef(bh, bd);
    if (b == 0.0) {
        GRID_LOOP(i, n) { y[i] = (T)(a * (double)x[i]); }
    } else {
        GRID_LOOP(i, n) { y[i] = (T)(a * (double)x[i] + b * (double)y[i]); }
    }
}

// c = a .* b
template <typename T>
__device__ void mul(int n, const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c) {
    GRID_LOOP(i, n) { c[i] = (T)((double)a[i] * (double)b[i]); }
}

// mode 0: sum x y; 1: sqrt(sum x x); 2: sum |x - y|; 3: sum x.
template <typename T>
__device__ void reduce(int n, int mode, const T* __restrict__ x, const T* __restrict__ y,
                       double* out, unsigned* ticket) {
    double v[1] = {0.0};
    GRID_LOOP(i, n) {
        const double a = (double)x[i];
        switch (mode) {
            case 0: v[0] += a * (double)y[i]; break;
            case 1: v[0] += a * a; break;
            case 2: v[0] += fabs(a - (double)y[i]); break;
            default: v[0] += a; break;
        }
    }
    if (sparserl_grid_reduce<1>(v, out + ACC(0), ticket)) {
        const double total = sparserl_read_acc(out + ACC(0));
        out[0] = mode == 1 ? sqrt(total) : total;
        out[ACC(0)] = 0.0;
        *ticket = 0u;
        __threadfence();
    }
}

// Conjugate gradients state (double[48]):
//   0 rho = r.z   3 alpha   4 beta   5 iterations
//   6 flag (0 running, 1 converged this iteration, 2 done)
//   7 threshold on r.r   8 r.r
//   16 rho accumulator   32 r.r accumulator (ACC(0), ACC(1))
// z = dinv .* r with the Jacobi preconditioner (use_dinv), else z = r.

// p = z, rho = r.z, rr = r.r; flag = 2 when already below the threshold.
template <typename T>
__device__ void cg_init(int n, const T* __restrict__ r, const T* __restrict__ dinv, int use_dinv,
                        T* __restrict__ p, double* st, unsigned* ticket) {
    double v[2] = {0.0, 0.0};
    GRID_LOOP(i, n) {
        const double ri = (double)r[i];
        const double zi = use_dinv ? (double)dinv[i] * ri : ri;
        p[i] = (T)zi;
        v[0] += ri * zi;
        v[1] += ri * ri;
    }
    if (sparserl_grid_reduce<2>(v, st + ACC(0), ticket)) {
        const double rho = sparserl_read_acc(st + ACC(0));
        const double rr = sparserl_read_acc(st + ACC(1));
        st[0] = rho;
        st[ACC(0)] = 0.0;
        st[ACC(1)] = 0.0;
        st[3] = 0.0;
        st[4] = 0.0;
        st[5] = 0.0;
        st[8] = rr;
        st[6] = (rr <= st[7] || rho == 0.0) ? 2.0 : 0.0;
        *ticket = 0u;
        __threadfence();
    }
}

// The sum of a device scalar's 32 accumulators, in every thread of the
// block (warp 0 loads them; every thread must call it).
__device__ __forceinline__ double sparserl_block_acc_sum(const double* dot) {
    __shared__ double total;
    if (threadIdx.x < 32) {
        double v = __ldcg(dot + ACC(threadIdx.x));
        v = sparserl_warp_sum(v);
        if (threadIdx.x == 0) {
            total = v;
        }
    }
    __syncthreads();
    return total;
}

// Publishes a fused-epilogue dot: dot[0] = sum of the 32 accumulators, which
// are zeroed. One warp.
__device__ void finalize_dot(double* dot) {
    if (blockIdx.x == 0 && threadIdx.x < 32) {
        double v = __ldcg(dot + ACC(threadIdx.x));
        dot[ACC(threadIdx.x)] = 0.0;
        v = sparserl_warp_sum(v);
        if (threadIdx.x == 0) {
            dot[0] = v;
        }
    }
}

// After q = A p with p.q in the 32 accumulators of pq (the SpMV's dot
// epilogue, not yet published): alpha = rho / pq, r -= alpha q, rho' = r.z,
// rr = r.r; the last block publishes pq (and zeroes its accumulators), sets
// beta = rho'/rho, rho = rho', counts the iteration and raises the flag on
// convergence.
template <typename T>
__device__ void cg_update_r(int n, const T* __restrict__ q, T* __restrict__ r,
                            const T* __restrict__ dinv, int use_dinv, double* st,
                            double* pq, unsigned* ticket) {
    const double pq_sum = sparserl_block_acc_sum(pq);
    const double flag = st[6];
    if (flag != 0.0) {
        // Converged earlier: mark done so that the x / p update of this
        // iteration is skipped too (every thread returns: no ticket taken),
        // and clear pq's accumulators (this SpMV ran anyway).
        if (blockIdx.x == 0 && threadIdx.x < 32) {
            pq[ACC(threadIdx.x)] = 0.0;
            if (threadIdx.x == 0 && flag == 1.0) {
                st[6] = 2.0;
            }
        }
        return;
    }
    const double alpha = st[0] / pq_sum;
    double v[2] = {0.0, 0.0};
    GRID_LOOP(i, n) {
        const double ri = (double)r[i] - alpha * (double)q[i];
        const T rt = (T)ri;
        r[i] = rt;
        const double rd = (double)rt;
        const double zi = use_dinv ? (double)dinv[i] * rd : rd;
        v[0] += rd * zi;
        v[1] += rd * rd;
    }
    if (sparserl_grid_reduce<2>(v, st + ACC(0), ticket)) {
        const double rho_new = sparserl_read_acc(st + ACC(0));
        const double rr = sparserl_read_acc(st + ACC(1));
        st[4] = rho_new / st[0];
        st[3] = alpha;
        st[0] = rho_new;
        st[ACC(0)] = 0.0;
        st[ACC(1)] = 0.0;
        st[8] = rr;
        st[5] += 1.0;
        pq[0] = pq_sum;
        for (int k = 0; k < 32; ++k) {
            pq[ACC(k)] = 0.0;
        }
        if (rr <= st[7] || !(rr == rr) || rho_new == 0.0) {
            st[6] = 1.0;
        }
        *ticket = 0u;
        __threadfence();
    }
}

// x += alpha p, p = z + beta p (skipped once the solve is done).
template <typename T>
__device__ void cg_update_xp(int n, T* __restrict__ x, T* __restrict__ p,
                             const T* __restrict__ r, const T* __restrict__ dinv, int use_dinv,
                             const double* st) {
    if (st[6] == 2.0) {
        return;
    }
    const double alpha = st[3];
    const double beta = st[4];
    GRID_LOOP(i, n) {
        const double pi = (double)p[i];
        x[i] = (T)((double)x[i] + alpha * pi);
        const double ri = (double)r[i];
        const double zi = use_dinv ? (double)dinv[i] * ri : ri;
        p[i] = (T)(zi + beta * pi);
    }
}

// Renumbering (see sparserl_rt::renumber): dst[i] = src[perm[i]], with perm
// the new-to-old permutation (into the renumbered order) or its inverse
// (back into the user's numbering): coalesced writes both ways.
template <typename T>
__device__ void gather(int n, const int* __restrict__ perm, const T* __restrict__ src,
                       T* __restrict__ dst) {
    GRID_LOOP(i, n) { dst[i] = __ldg(src + perm[i]); }
}

// The rows of a dense matrix (rows x cols, leading dimensions ld_src /
// ld_dst, both row-major or both column-major) gathered through `perm`:
// dst row i = src row perm[i] (perm == nullptr: the identity, a strided
// copy). Consecutive threads take consecutive elements of the layout's
// contiguous dimension, so loads and stores stay coalesced within a row
// (row-major) or a column (column-major).
template <typename T>
__device__ void gather_rows(int rows, int cols, int row_major, const int* __restrict__ perm,
                            const T* __restrict__ src, long long ld_src, T* __restrict__ dst,
                            long long ld_dst) {
    long long total = (long long)rows * cols;
    for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < total;
         e += (long long)gridDim.x * blockDim.x) {
        long long i = row_major ? e / cols : e % rows;
        long long j = row_major ? e % cols : e / rows;
        long long from = perm ? perm[i] : i;
        if (row_major) {
            dst[i * ld_dst + j] = __ldg(src + from * ld_src + j);
        } else {
            dst[i + j * ld_dst] = __ldg(src + from + j * ld_src);
        }
    }
}

#define INSTANTIATE(T, S)                                                                        \
    extern "C" __global__ void __launch_bounds__(VB) sparserl_fill_##S(int n, T v, T* x) {      \
        fill<T>(n, v, x);                                                                        \
    }                                                                                            \
    extern "C" __global__ void __launch_bounds__(VB)                                             \
        sparserl_scal_##S(int n, double ah, const double* ad, T* x) {                            \
        scal<T>(n, ah, ad, x);                                                                   \
    }                                                                                            \
    extern "C" __global__ void __launch_bounds__(VB)                                             \
        sparserl_axpby_##S(int n, double ah, const double* ad, double bh, const double* bd,      \
                           const T* x, T* y) {                                                   \
        axpby<T>(n, ah, ad, bh, bd, x, y);                                                       \
    }                                                                                            \
    extern "C" __global__ void __launch_bounds__(VB)                                             \
        sparserl_mul_##S(int n, const T* a, const T* b, T* c) {                                  \
        mul<T>(n, a, b, c);                                                                      \
    }                                                                                            \
    extern "C" __global__ void __launch_bounds__(VB) sparserl_reduce_##S(                       \
        int n, int mode, const T* x, const T* y, double* out, unsigned* ticket) {                \
        reduce<T>(n, mode, x, y, out, ticket);                                                   \
    }                                                                                            \
    extern "C" __global__ void __launch_bounds__(VB) sparserl_cg_init_##S(                      \
        int n, const T* r, const T* dinv, int use_dinv, T* p, double* st, unsigned* ticket) {    \
        cg_init<T>(n, r, dinv, use_dinv, p, st, ticket);                                         \
    }                                                                                            \
    extern "C" __global__ void __launch_bounds__(VB)                                             \
        sparserl_cg_update_r_##S(int n, const T* q, T* r, const T* dinv, int use_dinv,           \
                                 double* st, double* pq, unsigned* ticket) {                     \
        cg_update_r<T>(n, q, r, dinv, use_dinv, st, pq, ticket);                                 \
    }                                                                                            \
    extern "C" __global__ void __launch_bounds__(VB) sparserl_cg_update_xp_##S(                 \
        int n, T* x, T* p, const T* r, const T* dinv, int use_dinv, const double* st) {          \
        cg_update_xp<T>(n, x, p, r, dinv, use_dinv, st);                                         \
    }                                                                                            \
    extern "C" __global__ void __launch_bounds__(VB)                                             \
        sparserl_gather_##S(int n, const int* perm, const T* src, T* dst) {                      \
        gather<T>(n, perm, src, dst);                                                            \
    }                                                                                            \
    extern "C" __global__ void __launch_bounds__(VB) sparserl_gather_rows_##S(                  \
        int rows, int cols, int row_major, const int* perm, const T* src, long long ld_src,      \
        T* dst, long long ld_dst) {                                                              \
        gather_rows<T>(rows, cols, row_major, perm, src, ld_src, dst, ld_dst);                   \
    }

INSTANTIATE(float, f32)
INSTANTIATE(double, f64)

extern "C" __global__ void __launch_bounds__(VB) sparserl_finalize_dot(double* dot) {
    finalize_dot(dot);
}
