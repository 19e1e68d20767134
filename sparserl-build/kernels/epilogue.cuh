// ---- epilogue.cuh: what a kernel does with each finished y[row] ----
//
// Every fragment that stores y through store_y includes this header; the
// generator inlines it once per entry point, after setting SPARSERL_EPILOGUE
// for that entry:
//
//   0  plain:     y[r] = (A x)[r]
//   1  axpby:     y[r] = alpha (A x)[r] + beta y[r] + gamma
//   2  dot:       y[r] = (A x)[r];  dot += w[r] y[r]
//   3  axpby-dot: y[r] = alpha (A x)[r] + beta y[r] + gamma;  dot += w[r] y[r]
//
// Fused entries (1..3) take three parameters after the common ABI (and
// after meta / scratch where a strategy has them):
//
//   const double* coef:  {alpha, beta, gamma, gamma_dot} on the device, read
//                        by every thread at kernel start (a CUDA graph replay
//                        sees the values of the moment it runs); the constant
//                        term is gamma + gamma_dot * dot[0], dot[0] being the
//                        published value of this launch's dot scalar when
//                        the kernel starts (PageRank: the dangling mass of
//                        the input); beta == 0 never reads y (BLAS
//                        convention: y may hold NaN);
//   const T* w:          the dot weights, rows entries;
//   double* dot:         the result at dot[0], 32 accumulators at dot[16 (k + 1)]
//                        (128 bytes apart: different cache lines, so the
//                        atomics of different accumulators do not queue on
//                        one line), zero when the kernel starts; each warp
//                        adds its partial sum into accumulator (global warp
//                        index) % 32 with a fire-and-forget atomic (no fence,
//                        no ticket: the kernel's blocks retire as fast as the
//                        plain kernel's). The result is published by whoever runs
//                        next on the stream: the runtime's finalize kernel
//                        (sums the accumulators into dot[0], zeroes them) or
//                        a solver update that does the same.
//
// Every strategy whose kernels write each y[r] exactly once with its final
// value (all but the nnz-split one, which adds into y with atomics) calls
// store_y(y, r, v) there; the epilogue state lives in a local object whose
// destructor runs when the thread leaves the kernel, early returns included,
// and adds the thread's dot partial: summed over the warp with shuffles when
// the whole warp is present, else one atomic per thread.

#include "common.cuh"

#ifndef SPARSERL_EPILOGUE_HELPERS
#define SPARSERL_EPILOGUE_HELPERS

// Doubles between a device scalar's accumulators (sparserl_rt::scalar).
#define SPARSERL_DOT_STRIDE 16

template <int KIND>
struct sparserl_epilogue {
    static constexpr bool AXPBY = (KIND & 1) != 0;
    static constexpr bool DOT = (KIND & 2) != 0;
    double alpha, beta, gamma, acc;
    const T* __restrict__ w;
    double* dot;

    __device__ __forceinline__ sparserl_epilogue(const double* __restrict__ coef,
                                                 const T* __restrict__ w_, double* dot_)
        : alpha(1.0), beta(0.0), gamma(0.0), acc(0.0), w(w_), dot(dot_) {
        if (AXPBY) {
            alpha = coef[0];
            beta = coef[1];
            gamma = coef[2] + (coef[3] != 0.0 ? coef[3] * dot_[0] : 0.0);
        }
    }

    __device__ __forceinline__ void store(T* __restrict__ y, int i, T v) {
        T out = v;
        if (AXPBY) {
            double r = alpha * (double)v + gamma;
            if (beta != 0.0) {
                r += beta * (double)y[i];
            }
            out = (T)r;
        }
        sparserl_store_raw(y, i, out);
        if (DOT) {
            acc += (double)w[i] * (double)out;
        }
    }

    __device__ __forceinline__ ~sparserl_epilogue() {
        if (!DOT) {
            return;
        }
        const unsigned slot =
            (unsigned)(((unsigned long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5)) &
                       31ull);
        double v = acc;
        if (__activemask() == SPARSERL_FULL_MASK) {
            v = group_reduce<32>(v, SPARSERL_FULL_MASK);
            if ((threadIdx.x & 31u) != 0u) {
                return;
            }
        }
        if (v != 0.0) {
            // Result unused: a fire-and-forget reduction.
            atomicAdd(dot + SPARSERL_DOT_STRIDE * (1 + slot), v);
        }
    }
};

#endif  // SPARSERL_EPILOGUE_HELPERS

#undef store_y
#undef SPARSERL_EP_PARAMS
#undef SPARSERL_EP_BEGIN

#if !defined(SPARSERL_EPILOGUE) || SPARSERL_EPILOGUE < 0 || SPARSERL_EPILOGUE > 3
#error "SPARSERL_EPILOGUE must be 0..=3"
#endif

#if SPARSERL_EPILOGUE == 0
#define SPARSERL_EP_PARAMS
#define SPARSERL_EP_BEGIN
#define store_y(Y, I, V) sparserl_store_raw(Y, I, V)
#else
#define SPARSERL_EP_PARAMS                                                            \
    , const double* __restrict__ ep_coef, const T* __restrict__ ep_w,                 \
        double* __restrict__ ep_dot
#define SPARSERL_EP_BEGIN sparserl_epilogue<SPARSERL_EPILOGUE> sparserl_ep(ep_coef, ep_w, ep_dot);
#define store_y(Y, I, V) sparserl_ep.store(Y, I, V)
#endif

// ---- end epilogue.cuh ----
